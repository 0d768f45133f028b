"""``git forge init [PATH] [--backlog DIR]`` — scaffold a backlog; commits nothing."""

from __future__ import annotations

import argparse

from git_forge.cli.arguments import add_location
from git_forge.cli.output import emit_json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "init", help="create a backlog directory, its ignore rules and an example config",
        description="Create the backlog dir with backlog.json, ignore rules that keep state "
                    "files untracked, and .forge.yaml if absent. Never overwrites; commits "
                    "nothing and prints the git command that would.",
    )
    add_location(parser)
    parser.add_argument("--json", action="store_true",
                        help='print {"created": [...], "updated": [...], "kept": [...], '
                             '"commit": CMD|null}')
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from git_forge.scaffold import commit_command, init_backlog
    from git_forge.workspace import locate

    workspace = locate(args.path, args.backlog)
    result = init_backlog(workspace, backlog_flag=args.backlog)
    command = commit_command(result) if workspace.is_git else None
    if args.json:
        emit_json({"created": result.created, "updated": result.updated, "kept": result.kept,
                   "commit": command})
        return 0
    if not result.changed:
        print(f"Backlog already initialized in {workspace.relative(workspace.backlog_dir)}/")
        return 0
    print(f"Initialized git-forge backlog in {workspace.relative(workspace.backlog_dir)}/")
    for path in result.created:
        print(f"  created {path}")
    for path in result.updated:
        print(f"  updated {path}")
    print(f"State files go in {workspace.relative(workspace.state_dir)}/ (ignored by git).")
    if command:
        print(f"Nothing was committed. To commit it:\n  {command}")
    return 0
