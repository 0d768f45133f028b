"""``git forge init [PATH] [--backlog DIR]`` — scaffold a backlog; commits nothing."""

from __future__ import annotations

from pathlib import Path

from git_forge.cli.args import Args
from git_forge.cli.arguments import add_location
from git_forge.cli.output import emit_json, note
from git_forge.scaffold import commit_command, init_backlog, relative_to
from git_forge.tree import ignores
from git_forge.workspace import locate

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Create the backlog dir with backlog.json, ignore rules that keep state "
        "files untracked, and .forge.yaml if absent. Never overwrites; commits "
        "nothing and prints the git command that would.")
    add_location(parser)
    parser.add_argument("--json", action="store_true",
                        help='print {"created": [...], "updated": [...], "kept": [...], '
                             '"commit": CMD|null}')
    parser.set_defaults(func=run)


def run(args: Args) -> int:
    workspace = locate(args.path, args.backlog)  # a work tree, never a bare repository
    result = init_backlog(workspace, backlog_flag=args.backlog)
    here = Path.cwd()
    # The project's own ignore rules (a `.*` line) may ignore what init asks to commit.
    ignored = ignores.ignored(workspace.root, result.changed)
    command = commit_command(result, workspace.root, here, force=bool(ignored))
    if args.json:
        emit_json({"created": result.created, "updated": result.updated, "kept": result.kept,
                   "commit": command,
                   "ignored": {path: rule._asdict() for path, rule in ignored.items()}})
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
    if ignored:
        names = [shown(workspace.root / path) for path in ignored]
        rules = "; ".join(dict.fromkeys(str(rule) for rule in ignored.values()))
        lines = ignores.negations(workspace.root, list(ignored))
        them = "it" if len(names) == 1 else "them"
        note(f"the project's ignore rules ignore {_listed(names)} ({rules}): the command "
             f"above adds {them} with git add -f; or let {them} through with "
             f"{'a line' if len(lines) == 1 else 'lines'} at the end of .gitignore: "
             f"{' '.join(lines)}")
    return 0


def _listed(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
