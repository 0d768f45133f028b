"""Installing the ``pre-launch`` hook where ``git hook run pre-launch`` finds it.

The hooks directory is git's own answer (``git rev-parse --git-path hooks``),
so ``core.hooksPath`` and linked worktrees are respected. A foreign
``pre-launch`` hook already there is kept: it is renamed to
``pre-launch.pre-forge`` (bytes and mode untouched) and our hook runs it first;
``uninstall`` renames it back, restoring exactly what was there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from git_forge.atomic import atomic_write
from git_forge.tree.errors import GitError
from git_forge.tree.gitcli import run_git

HOOK_NAME = "pre-launch"
CHAINED_NAME = "pre-launch.pre-forge"
MARKER = b"git-forge pre-launch hook"


def shipped_hook() -> bytes:
    """The hook script shipped in the package."""
    return resources.files("git_forge").joinpath("data/pre-launch").read_bytes()


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

    @property
    def hook(self) -> Path:
        return self.directory / HOOK_NAME

    def to_json(self) -> dict[str, object]:
        return {"hooksDir": str(self.directory), "installed": self.installed,
                "chained": self.chained, "foreignHook": self.foreign}


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


def install(root: Path) -> HookState:
    """Install (or refresh) our hook, keeping a foreign one chained."""
    current = state(root)
    current.directory.mkdir(parents=True, exist_ok=True)
    if current.foreign:
        if current.chained:
            raise GitError(f"{current.hook} and {current.directory / CHAINED_NAME} both exist; "
                           "move one of them away first")
        os.rename(current.hook, current.directory / CHAINED_NAME)
    atomic_write(current.hook, shipped_hook(), mode=0o755)
    return state(root)


def uninstall(root: Path) -> HookState:
    """Remove our hook and put back a chained foreign hook exactly as it was."""
    current = state(root)
    if current.foreign:
        raise GitError(f"{current.hook} is not git-forge's hook; leaving it alone")
    if current.installed:
        current.hook.unlink()
    if current.chained:
        os.rename(current.directory / CHAINED_NAME, current.hook)
    return state(root)
