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
    from pathlib import Path

    from git_forge.scaffold import commit_command, init_backlog, relative_to
    from git_forge.workspace import locate

    workspace = locate(args.path, args.backlog)  # a work tree, never a bare repository
    result = init_backlog(workspace, backlog_flag=args.backlog)
    here = Path.cwd()
    command = commit_command(result, workspace.root, here)
    if args.json:
        emit_json({"created": result.created, "updated": result.updated, "kept": result.kept,
                   "commit": command})
        return 0

    def shown(path: Path) -> str:
        return relative_to(path, here)

    if not result.changed:
        print(f"Backlog already initialized in {shown(workspace.backlog_dir)}/")
        return 0
    print(f"Initialized git-forge backlog in {shown(workspace.backlog_dir)}/")
    for path in result.created:
        print(f"  created {shown(workspace.root / path)}")
    for path in result.updated:
        print(f"  updated {shown(workspace.root / path)}")
    print(f"State files go in {shown(workspace.state_dir)}/ (ignored by git).")
    if command:
        print(f"Nothing was committed. To commit it:\n  {command}")
    return 0
