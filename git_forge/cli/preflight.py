"""``git forge preflight [PATH] [--backlog DIR] [--json]`` — the launch blocker.

Exit 0: go (silent). Exit 1: STOP — a prior run left stranded work, or the
tree is dirty without one. It runs before every launch: a clean tree is answered
from ``git status`` and the run's lock (``reconcile.launch_probe``), before the
configuration is even read (unless the line names a location: that is resolved
first, as every command resolves it) — the hook's own command line even before it
is read (``cli.main``); any other tree is judged by ``cli/stop.py``.
"""

from __future__ import annotations

import os

from git_forge.cli.args import Args
from git_forge.cli.arguments import add_location
from git_forge.cli.output import emit_json
from git_forge.reconcile.launch_probe import probe

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from git_forge.workspace import Workspace


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "The launch blocker. Exit 0 when the working tree is clean; otherwise "
        "STOP (exit 1), naming the prior run and listing the stranded paths.")
    add_location(parser)
    parser.add_argument("--json", action="store_true",
                        help='print {"status": "ok"|"stop", "run": …, "paths": […]}')
    parser.set_defaults(func=run)


def _names_a_location(args: Args) -> bool:
    """The command line names a backlog dir, or a ``PATH`` that is no directory: it is
    resolved (and refused) as every command resolves it, before any verdict — a clean
    tree does not make ``--backlog ../outside`` an answer of 0 where ``status`` says 2."""
    return args.backlog is not None or not os.path.isdir(args.path)


def _located(args: Args) -> Workspace:
    """The project as every command finds it, its configuration read: what a tree
    that is not clean is judged against. A clean one is answered without it."""
    from git_forge.workspace import locate  # common-case boundary: the clean check

    return locate(args.path, args.backlog)


def run(args: Args) -> int:
    workspace = _located(args) if _names_a_location(args) else None
    found = probe(args.path)
    if found.clean:
        if args.json:
            emit_json({"status": "ok", "run": None, "paths": []})
        return 0
    from git_forge.cli.stop import judge  # common-case boundary: the clean check

    return judge(args, found.blocker, found.entries, workspace)
