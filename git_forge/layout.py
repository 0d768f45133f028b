"""Where git-forge keeps its files, in one place.

``{backlogDir}`` holds the tracked ``backlog.json``; state files (ignored by git)
live in ``{backlogDir}/{stateDir}/`` — except when the backlog directory's own
name equals the state dir name (the default, ``.forge``), or the state dir name
is empty (``--state-dir ''``, ``loopRunner.stateDir: ""``, as in feature-forge):
then the backlog directory *is* the state directory.
"""

from __future__ import annotations

import os
import sys

from git_forge.errors import ForgeError

# The pre-launch check's clean path imports no ``pathlib`` (the common-case boundary,
# ARCHITECTURE.md): the finders below work on ``str`` (``work_tree_top``,
# ``git_dir_path``) and their ``Path`` forms import it when called.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

DEFAULT_BACKLOG_DIR = ".forge"
DEFAULT_STATE_DIR = ".forge"
#: The state dir feature-forge and rauf use; the default when a forge.config.json
#: is the configuration source.
RAUF_STATE_DIR = ".rauf"

BACKLOG_FILE = "backlog.json"
STATE_FILE = "state.json"
EVENTS_FILE = "events.ndjson"
DECISIONS_FILE = "forge-decisions.json"
LOOP_LOCK_FILE = "loop.lock"
#: In the work tree's git dir: held by the live loop that owns this work tree.
TREE_LOCK_FILE = "forge-loop.lock"
#: Written by the loop at its start; ``git forge loop stop`` removes it (a removal
#: needs no disk space, so a stop works on a full disk too).
LOOP_RUN_FILE = "loop.run"
RECOVER_LOCK_FILE = "recover.lock"
PROC_DIR = "proc"
#: ``proc/<handle>.manifest.json``: named here so completion can list handles
#: without importing the supervisor.
MANIFEST_SUFFIX = ".manifest.json"
#: ``proc/<handle>.alive``, locked by a live member of the process's tree: named here
#: so ``status`` can see there is none without importing the supervisor.
ALIVE_SUFFIX = ".alive"
#: The ``{prompt_file}`` copies of an agent's prompt (``prompt-<id>.md``), removed
#: when the agent ends; the pattern is ignored so that none is ever committed.
PROMPT_FILES = "prompt-*.md"
ARCHIVE_DIR = "archive"
#: What each item and run has cost so far (the sums of the agents' receipts).
RECEIPTS_FILE = "receipts.json"
#: The current (or last) run's own files, in a directory that ignores itself (its own
#: ``.gitignore``), so that no project's ignore rules need to know of them.
RUN_DIR = "run"
#: In ``RUN_DIR``: the run's sums, folded into ``RECEIPTS_FILE`` when the next run
#: starts — a receipt rewrites one run's sums, not the project's whole history.
RUN_RECEIPTS_FILE = "receipts.json"
#: What read-only commands derived from backlog.json (``backlog.cache``), in a
#: directory that ignores itself as ``RUN_DIR`` does.
CACHE_DIR = "cache"
#: The notifications a run sent, so that a restarted run does not send them again.
NOTIFIED_FILE = "notified.json"
#: ``worktrees/<id>``: the linked worktree an item's agent works in when the loop
#: runs agents in parallel.
WORKTREES_DIR = "worktrees"
#: The branches of items' worktrees: ``forge/<id>`` (here, not in ``reconcile.messages``
#: which names them, so that the pre-launch check's clean path can look for them
#: without compiling that module's patterns).
ITEM_BRANCH_PREFIX = "forge/"
#: The merge conflicts of a parallel run's items, by item: what conflicted, and once
#: retried, the ref holding the previous attempt (``reconcile.conflicts``).
CONFLICTS_FILE = "conflicts.json"
#: ``refs/forge/retried/<id>/<time>``: an item's attempt kept when it is retried.
RETRIED_REF_PREFIX = "refs/forge/retried/"
#: ``refs/forge/abandoned/<id>/<time>``: an item's abandoned work — a blocked or
#: deferred item's leftovers, an attempt set aside before its retry or as a run
#: ended — kept as the commit ``git stash create`` makes, off the user's stash list.
ABANDONED_REF_PREFIX = "refs/forge/abandoned/"

#: Configuration files (read by ``config``; named here so that code on a hot path,
#: completion, can look for them without loading the configuration machinery).
REPO_CONFIG = ".forge.yaml"
FEATURE_FORGE_CONFIG = "forge.config.json"
USER_CONFIG = "config.yaml"


def state_directory(backlog_dir: Path, state_dir: str) -> Path:
    """The directory holding the state files of the backlog at ``backlog_dir``."""
    from pathlib import Path  # common-case boundary: the clean pre-launch check

    return Path(state_directory_path(os.fspath(backlog_dir), state_dir))


def state_directory_path(backlog_dir: str, state_dir: str) -> str:
    """``state_directory`` as a ``str``, for a TAB's path (``completion_values``)."""
    if not state_dir or os.path.basename(os.path.realpath(backlog_dir)) == os.path.normpath(
            state_dir):  # ".forge/" names the same directory as ".forge"
        return backlog_dir
    return os.path.join(backlog_dir, state_dir)


def item_worktree(state_dir: Path, item_id: str) -> Path:
    """Where the linked worktree of item ``item_id`` lives."""
    from pathlib import Path  # common-case boundary: the clean pre-launch check

    return Path(state_dir) / WORKTREES_DIR / item_id


def backlog_file(backlog_dir: Path) -> Path:
    from pathlib import Path  # common-case boundary: the clean pre-launch check

    return Path(backlog_dir) / BACKLOG_FILE


class NotAWorkTree(ForgeError):
    """The command needs a git work tree and there is none here (exit 2). One
    wording per condition, the same in every command."""


def _is_git_dir(directory: str) -> bool:
    return (os.path.isfile(os.path.join(directory, "HEAD"))
            and os.path.isdir(os.path.join(directory, "objects"))
            and os.path.isdir(os.path.join(directory, "refs")))


def _upwards(start: str) -> list[str]:
    """``start`` and its parents up to the root (``[start, *Path(start).parents]``)."""
    found = [start]
    while True:
        parent = os.path.dirname(found[-1])
        if parent == found[-1]:
            return found
        found.append(parent)


def work_tree_root(path: Path | str) -> Path:
    """The top of the git work tree containing ``path``; refuses (``NotAWorkTree``)
    outside a repository and in a bare one, the way every command words it. With
    ``GIT_DIR`` set, the work tree is where git puts it — ``GIT_WORK_TREE``, else the
    directory it starts in (a ``core.worktree`` setting aside) — and nothing is
    refused here: git refuses what it cannot use."""
    from pathlib import Path  # common-case boundary: the clean pre-launch check

    return Path(work_tree_top(path))


def work_tree_top(path: os.PathLike[str] | str) -> str:
    """``work_tree_root`` as a ``str``, for the pre-launch check's clean path."""
    start = os.path.realpath(path)  # what Path.resolve() does
    if os.environ.get("GIT_DIR"):  # git's rule: GIT_WORK_TREE, else where it starts
        return os.path.realpath(os.environ.get("GIT_WORK_TREE") or start)
    for candidate in _upwards(start):
        if os.path.exists(os.path.join(candidate, ".git")):
            return candidate
        if _is_git_dir(candidate):
            raise NotAWorkTree(f"{candidate} is a bare repository (or a git dir): "
                               "git forge needs a work tree")
    raise NotAWorkTree(f"not a git repository (or any of the parent directories): {start}")


def find_root(path: Path | str) -> Path:
    """The git work tree top containing ``path`` (the nearest directory with a
    ``.git`` file or directory), else ``path`` itself. Here rather than in
    ``workspace`` so that the pre-launch check's clean path can call it without
    importing the configuration machinery."""
    from pathlib import Path  # common-case boundary: the clean pre-launch check

    return Path(find_root_path(path))


def find_root_path(path: os.PathLike[str] | str) -> str:
    """``find_root`` as a ``str``, for a TAB's path (``completion_values``)."""
    return _nearest_dot_git(os.path.realpath(path))


def _nearest_dot_git(start: str) -> str:
    for candidate in _upwards(start):
        if os.path.exists(os.path.join(candidate, ".git")):
            return candidate
    return start


def git_dir_of(root: Path) -> Path | None:
    """The git dir of the work tree at ``root`` (``.git``, or where a linked
    worktree's ``.git`` file points; ``GIT_DIR`` when set), else ``None``. Read
    from the file system alone, so the pre-launch hot path can find the tree lock."""
    from pathlib import Path  # common-case boundary: the clean pre-launch check

    found = git_dir_path(root)
    return Path(found) if found is not None else None


def git_dir_path(root: os.PathLike[str] | str) -> str | None:
    """``git_dir_of`` as a ``str``, for the pre-launch check's clean path."""
    root = os.fspath(root)
    explicit = os.environ.get("GIT_DIR")
    if explicit:
        return os.path.join(root, explicit)
    dot_git = os.path.join(root, ".git")
    if os.path.isdir(dot_git):
        return dot_git
    try:
        with open(dot_git, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    return os.path.join(root, text[len("gitdir:"):].strip())  # an absolute target wins


def tree_lock_path(root: Path) -> Path | None:
    git_dir = git_dir_of(root)
    return git_dir / TREE_LOCK_FILE if git_dir is not None else None


def tree_lock_file(root: os.PathLike[str] | str) -> str | None:
    """``tree_lock_path`` as a ``str``, for the pre-launch check's clean path."""
    git_dir = git_dir_path(root)
    return os.path.join(git_dir, TREE_LOCK_FILE) if git_dir is not None else None


#: The application's directory name under the user's config dir.
APP_NAME = "git-forge"


def user_config_dir() -> str:
    """The user config directory platformdirs gives git-forge (``~/.config/git-forge``).

    On Linux, with ``XDG_CONFIG_HOME`` unset, blank or absolute and an absolute
    ``HOME``, platformdirs' answer (every version this project allows) is computed
    here, without importing platformdirs. Anything
    else — another platform, a relative ``XDG_CONFIG_HOME``, no usable ``HOME`` —
    asks platformdirs. A test holds the two equal."""
    environ = os.environ
    xdg = environ.get("XDG_CONFIG_HOME", "")
    home = environ.get("HOME", "")
    if (sys.platform == "linux" and "ANDROID_DATA" not in environ
            and home.startswith("/") and (not xdg.strip() or xdg.startswith("/"))):
        base = xdg if xdg.startswith("/") else os.path.expanduser("~/.config")
        return os.path.join(base, APP_NAME)
    # common-case boundary: platformdirs where the rule above does not answer
    from platformdirs import user_config_dir as platform_user_config_dir

    return platform_user_config_dir(APP_NAME)
