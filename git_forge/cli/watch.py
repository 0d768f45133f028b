"""``git forge watch [PATH] [--backlog DIR] [--once] [--json] [--interval S]`` — a live view.

The frame is data (``watch_report.watch_frame``), worded by ``cli/watch_text.py`` for
``--once`` and for the terminal view (``cli/watch_app.py``) alike. Textual is imported
only for the terminal view, so no other command, nor ``--once``, pays its start-up.
"""

from __future__ import annotations

import os
import shutil
import sys

from git_forge.cli.args import Args
from git_forge.cli.arguments import add_location
from git_forge.cli.output import emit_json, is_terminal
from git_forge.cli.watch_text import NARROWEST, render_frame
from git_forge.errors import UsageError
from git_forge.runner import runner_for
from git_forge.watch_report import watch_frame
from git_forge.workspace import locate

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Watch a run: its state, one row per running agent (item, title, elapsed, bytes, "
        "last line of output, cost so far), the queue and the merge queue, the items "
        "waiting on a decision, the run's totals and a usage-limit wait's countdown, "
        "refreshed from the files the loop writes. Read-only: it takes no lock and writes "
        "nothing, beside a running loop or when none runs. On a terminal it is a live "
        "view (Enter: the selected agent's whole output, q: quit); elsewhere, or with "
        "--once, it prints one frame.")
    add_location(parser)
    parser.add_argument("--once", action="store_true",
                        help="print one frame as text and exit (for scripts)")
    parser.add_argument("--json", action="store_true",
                        help="print one frame as JSON and exit")
    parser.add_argument("--interval", type=float, default=1.0, metavar="SECONDS",
                        help="seconds between refreshes of the live view (default 1)")
    parser.set_defaults(func=run)


def run(args: Args) -> int:
    if not 0.1 <= args.interval <= 3600:
        raise UsageError("--interval must be between 0.1 and 3600 seconds")
    workspace = locate(args.path, args.backlog)
    runner = runner_for(workspace)
    if args.json:
        emit_json(watch_frame(workspace, runner))
        return 0
    if args.once or not (is_terminal(sys.stdout) and sys.stdin.isatty()):
        # cut to a terminal's width (or COLUMNS'); a script reading the text gets it whole
        width = (max(NARROWEST, shutil.get_terminal_size().columns)
                 if is_terminal(sys.stdout) or os.environ.get("COLUMNS") else None)
        print("\n".join(render_frame(watch_frame(workspace, runner), width)))
        return 0
    # parser-tree boundary: the live view's Textual, not --once's
    from git_forge.cli.watch_app import WatchApp

    WatchApp(workspace, runner, args.interval).run()
    return 0
