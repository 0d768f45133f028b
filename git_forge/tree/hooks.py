"""Installing the ``pre-launch`` hook where ``git hook run pre-launch`` finds it.

The hooks directory is git's own answer (``git rev-parse --git-path hooks``),
so ``core.hooksPath`` and linked worktrees are respected. A foreign
``pre-launch`` hook already there is kept: it is renamed to
``pre-launch.pre-forge`` (bytes and mode untouched) and our hook runs it first;
``uninstall`` renames it back, restoring exactly what was there.

The hook runs the git-forge that installed it: the interpreter running the install
is written into it, as pre-commit does, and runs ``cli.main`` (``python -P -c``), so
a launcher whose PATH lacks ``git forge`` runs the check all the same; the one on PATH only
where that interpreter is gone. That makes the hook this clone's own file: a
``core.hooksPath`` inside the work tree (``.githooks``) would hold it as untracked
work, stopping every launch because of itself, so it is kept out of ``git status``
by a rule in ``info/exclude`` (unless git ignores it already), removed again by
``uninstall``.

A pre-launch hook committed there (a team's hook, tracked by git) is refused
rather than renamed: renaming it would change a committed file and leave the
tree dirty, so the install itself would stop every launch. The refusal names the
line to add to that hook instead (``git forge preflight || exit $?``).
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

from git_forge.atomic import atomic_write
from git_forge.errors import UsageError
from git_forge.tree.errors import GitError
from git_forge.tree.gitcli import run_git
from git_forge.tree.ignores import exclude_locally, unexclude_locally

HOOK_NAME = "pre-launch"
CHAINED_NAME = "pre-launch.pre-forge"
MARKER = b"git-forge pre-launch hook"


#: The line a team's committed pre-launch hook gets instead of our install.
TEAM_HOOK_LINE = "git forge preflight || exit $?"


#: Where the shipped hook names the interpreter that runs git-forge.
PYTHON_PLACEHOLDER = b"@PYTHON@"


def shipped_hook() -> bytes:
    """The hook script shipped in the package (``@PYTHON@`` for the interpreter)."""
    return resources.files("git_forge").joinpath("data/pre-launch").read_bytes()


def hook_script(python: str) -> bytes:
    """The hook as installed: the shipped one, running git-forge through ``python``."""
    return shipped_hook().replace(PYTHON_PLACEHOLDER, os.fsencode(shlex.quote(python)), 1)


def hooks_dir(root: Path) -> Path:
    """Where git looks for hooks (core.hooksPath aware)."""
    out = run_git(("rev-parse", "--git-path", "hooks"), cwd=root).decode().strip()
    return (Path(root) / out) if not os.path.isabs(out) else Path(out)


@dataclass(frozen=True)
class HookState:
    directory: Path
    installed: bool
    chained: bool
    foreign: bool
    #: The exclude file that keeps the hook out of ``git status`` (set by ``install``
    #: when it wrote the rule: the hooks directory is inside the work tree).
    excluded_by: Path | None = None

    @property
    def hook(self) -> Path:
        return self.directory / HOOK_NAME

    def to_json(self) -> dict[str, object]:
        return {"hooksDir": str(self.directory), "installed": self.installed,
                "chained": self.chained, "foreignHook": self.foreign,
                "excludedBy": None if self.excluded_by is None else str(self.excluded_by)}


def is_ours(path: Path) -> bool:
    try:
        return MARKER in path.read_bytes()
    except OSError:
        return False


def state(root: Path) -> HookState:
    directory = hooks_dir(root)
    hook = directory / HOOK_NAME
    ours = is_ours(hook)
    return HookState(directory, installed=ours, chained=(directory / CHAINED_NAME).exists(),
                     foreign=hook.exists() and not ours)


def _in_work_tree(root: Path, path: Path) -> str | None:
    """``path`` relative to the work tree's top, or ``None`` when it lies outside."""
    try:
        return path.resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return None


def _tracked(root: Path, relative: str) -> bool:
    """Whether git tracks ``relative`` (a path from the work tree's top)."""
    return bool(run_git(("ls-files", "-z", "--", f":(literal){relative}"), cwd=root))


def install(root: Path) -> HookState:
    """Install (or refresh) our hook, keeping a foreign one chained; inside the work
    tree, keep it out of ``git status`` (see the module docstring)."""
    current = state(root)
    inside = _in_work_tree(root, current.hook)
    if current.foreign and inside is not None and _tracked(root, inside):
        raise UsageError(f"{inside} is a committed hook: installing would rename it and leave "
                         f"the tree dirty, which stops every launch; add the line "
                         f"'{TEAM_HOOK_LINE}' to it instead")
    current.directory.mkdir(parents=True, exist_ok=True)
    if current.foreign:
        if current.chained:
            raise GitError(f"{current.hook} and {current.directory / CHAINED_NAME} both exist; "
                           "move one of them away first")
        os.rename(current.hook, current.directory / CHAINED_NAME)
    atomic_write(current.hook, hook_script(sys.executable), mode=0o755)
    excluded = None if inside is None else exclude_locally(root, inside)
    return replace(state(root), excluded_by=excluded)


def uninstall(root: Path) -> HookState:
    """Remove our hook (and the rule that kept it out of ``git status``) and put back
    a chained foreign hook exactly as it was."""
    current = state(root)
    if current.foreign:
        raise GitError(f"{current.hook} is not git-forge's hook; leaving it alone")
    if current.installed:
        current.hook.unlink()
        inside = _in_work_tree(root, current.hook)
        if inside is not None:
            unexclude_locally(root, inside)
    if current.chained:
        os.rename(current.directory / CHAINED_NAME, current.hook)
    return state(root)
