"""``git forge status [PATH] [--backlog DIR] [--json]`` — derived loop status."""

from __future__ import annotations

import argparse

from git_forge.cli.arguments import add_location
from git_forge.cli.output import emit_json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "status", help="loop state, backlog summary, topology and lock liveness",
        description="Show the loop's state (state.json), the backlog summary from the "
                    "configured runner, dependency depth and starvation, and whether a "
                    "loop holds the lock.",
    )
    add_location(parser)
    parser.add_argument("--json", action="store_true", help="print the status document")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from git_forge.runner import runner_for
    from git_forge.status_report import loop_status, render_status
    from git_forge.workspace import locate

    workspace = locate(args.path, args.backlog)
    document = loop_status(workspace, runner_for(workspace))
    if args.json:
        emit_json(document)
    else:
        from git_forge.cli.plain import plain

        print("\n".join(plain(line) for line in render_status(document)))
    return 0
