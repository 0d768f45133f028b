"""``git forge hooks install|uninstall|status`` — the pre-launch hook."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from git_forge.cli.args import Args
from git_forge.cli.arguments import add_path
from git_forge.cli.output import emit_json
from git_forge.layout import work_tree_root
from git_forge.tree import hooks
from git_forge.tree.repo import open_repo

if TYPE_CHECKING:
    import argparse

    from git_forge.tree.hooks import HookState


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Install hooks/pre-launch where `git hook run pre-launch` finds it "
        "(core.hooksPath aware; an existing pre-launch hook is kept and runs "
        "first). Any launcher then runs `git hook run --ignore-missing pre-launch` "
        "before it starts a loop. The hook runs this git-forge through its "
        "interpreter, whatever the launcher's PATH; inside the work tree, "
        ".git/info/exclude keeps it out of git status.")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True
    for name, help_text in (("install", "install the hook (chaining a foreign one)"),
                            ("uninstall", "remove it, restoring what was there"),
                            ("status", "show where hooks live and what is installed")):
        verb = verbs.add_parser(name, help=help_text, description=help_text.capitalize() + ".")
        add_path(verb)
        verb.add_argument("--json", action="store_true", help="print the hook state as JSON")
        verb.set_defaults(func=run, action=name)


def _where(state: HookState, root: Path) -> str:
    return _where_path(state.hook, root)


def _where_path(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _uninstalled(before: HookState, after: HookState, root: Path) -> str:
    """What ``uninstall`` did, not merely what is left: a removal says so."""
    where = _where(after, root)
    if not before.installed:
        return f"no git-forge pre-launch hook at {where}; nothing to remove"
    if after.foreign:
        return f"removed git-forge's pre-launch hook; the previous hook is back at {where}"
    return f"removed the pre-launch hook at {where}"


def _describe(state: HookState, root: Path) -> str:
    where = _where(state, root)
    if state.installed:
        return f"pre-launch hook installed at {where}" + (
            " (runs the previous pre-launch hook first)" if state.chained else "")
    if state.foreign:
        return f"a pre-launch hook that is not git-forge's is at {where}"
    return f"no pre-launch hook at {where}"


def run(args: Args) -> int:
    work_tree_root(args.path)  # the same refusal as every command outside a work tree
    root = Path(open_repo(args.path).workdir)
    before = hooks.state(root) if args.action == "uninstall" else None
    state = {"install": hooks.install, "uninstall": hooks.uninstall,
             "status": hooks.state}[args.action](root)
    if args.json:
        document = state.to_json()
        if before is not None:
            document.update(removed=before.installed, restored=before.installed and before.chained)
        emit_json(document)
    elif before is not None:
        print(_uninstalled(before, state, root))
    else:
        print(_describe(state, root))
        if state.excluded_by is not None:
            print(f"  it runs this machine's git-forge, so it is no file to commit: "
                  f"{_where_path(state.excluded_by, root)} keeps it out of git status")
    return 0
