"""git-forge's own files and directories are never symbolic links.

A repository can commit anything under its state dir with ``git add -f``: a
``backlog.json.lock`` linked to a file outside, or ``cache/``, ``run/``,
``proc/``, ``worktrees/`` linked to directories outside. Every write through such
a link would land outside the repository — a lock label over someone's file, a
run's receipts, an agent's worktree. So no entry where git-forge keeps its own
file or directory, and no directory between the work tree's root and the
backlog and state dirs, may be a symbolic link. A link pointing inside the
repository is refused too: one rule, with no resolution to get wrong, and
nothing git-forge keeps is ever a link by rights (git itself tracks no file
beyond a linked directory, so a backlog dir behind one could not be committed).

``refuse_links`` checks a workspace before a command changes anything
(``workspace.locate`` calls it): one line naming the link, exit 2. The writers
never follow one either, whatever that check saw: ``open_own`` opens with
``O_NOFOLLOW``, ``make_dir`` refuses a link where it makes a directory, and
``atomic.atomic_write`` replaces a link at its name rather than writing through it.
"""

from __future__ import annotations

import errno
import os
import stat

from git_forge.errors import StoreError
from git_forge.layout import (
    ARCHIVE_DIR,
    BACKLOG_FILE,
    CACHE_DIR,
    CONFLICTS_FILE,
    DECISIONS_FILE,
    EVENTS_FILE,
    LOOP_RUN_FILE,
    NOTIFIED_FILE,
    PROC_DIR,
    RECEIPTS_FILE,
    RUN_DIR,
    STATE_FILE,
    WORKTREES_DIR,
)

#: The directories git-forge makes in the state dir: everything in them is its own.
OWN_DIRS = frozenset((PROC_DIR, ARCHIVE_DIR, RUN_DIR, CACHE_DIR, WORKTREES_DIR))
#: The files it keeps in the state dir, besides every ``*.lock`` and ``prompt-*.md``.
OWN_FILES = frozenset((BACKLOG_FILE, STATE_FILE, EVENTS_FILE, DECISIONS_FILE, LOOP_RUN_FILE,
                       RECEIPTS_FILE, NOTIFIED_FILE, CONFLICTS_FILE))


class LinkRefused(StoreError):
    """A symbolic link where git-forge keeps its own file or directory (exit 2)."""

    def __init__(self, path: os.PathLike[str] | str) -> None:
        super().__init__(f"{os.fspath(path)} is a symbolic link where git-forge keeps its own "
                         "files: refusing to follow it (remove the link)")


def is_own_name(name: str) -> bool:
    """Whether ``name``, in the state dir, is one git-forge keeps its own entry under."""
    return (name in OWN_FILES or name in OWN_DIRS or name.endswith(".lock")
            or (name.startswith("prompt-") and name.endswith(".md")))


def refuse_links(root: str, backlog_dir: str, state_dir: str) -> None:
    """Refuse (``LinkRefused``, naming the link from ``root``) a symbolic link at any
    directory from the work tree's ``root`` down to the backlog and state dirs, at
    backlog.json and its lock, at an entry of the state dir that is git-forge's own
    (``is_own_name``) or anywhere directly in one of its own directories. Reads
    directory listings only: no entry is resolved, nothing is written."""
    top = os.stat(root)
    for directory in (backlog_dir, state_dir):
        _refuse_on_the_way(root, top, directory)
    if os.path.normpath(backlog_dir) != os.path.normpath(state_dir):
        for name in (BACKLOG_FILE, BACKLOG_FILE + ".lock"):
            if os.path.islink(os.path.join(backlog_dir, name)):
                raise LinkRefused(_shown(os.path.join(backlog_dir, name), root))
    for entry in _listing(state_dir):
        if not is_own_name(entry.name):
            continue
        if entry.is_symlink():
            raise LinkRefused(_shown(entry.path, root))
        if entry.name in OWN_DIRS and entry.is_dir(follow_symlinks=False):
            for inner in _listing(entry.path):
                if inner.is_symlink():
                    raise LinkRefused(_shown(inner.path, root))


def _refuse_on_the_way(root: str, top: os.stat_result, directory: str) -> None:
    """``directory`` and each of its parents up to the one that is ``root``
    (``top``: its stat) — a directory not made yet is passed over."""
    path = os.path.normpath(directory)
    while True:
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            info = None
        except OSError:  # not a directory on the way: the command says so its own way
            return
        if info is not None:
            if stat.S_ISLNK(info.st_mode):
                raise LinkRefused(_shown(path, root))
            if os.path.samestat(info, top):
                return
        parent = os.path.dirname(path)
        if parent == path:
            return
        path = parent


def _listing(directory: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as entries:
            return list(entries)
    except OSError:  # none yet (or unreadable: the command that reads it says so)
        return []


def _shown(path: str, root: str) -> str:
    """``path`` from the work tree's root when it is spelled below it, else as given."""
    relative = os.path.relpath(path, root)
    return path if relative.split(os.sep, 1)[0] == os.pardir else relative


def open_own(path: os.PathLike[str] | str, flags: int, mode: int = 0o600) -> int:
    """``os.open`` of one of git-forge's own files, never through a link at its name
    (``O_NOFOLLOW``): a link there is ``LinkRefused``; any other failure is the
    ``OSError`` for the caller to word."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LinkRefused(path) from None
        raise


def refuse_link(path: os.PathLike[str] | str) -> None:
    """``LinkRefused`` when ``path`` is a symbolic link (wherever it points)."""
    if os.path.islink(path):
        raise LinkRefused(path)


def make_dir(directory: os.PathLike[str] | str, mode: int = 0o777) -> None:
    """One of git-forge's own directories, made (with its parents) unless it is
    there — and refused when it is a link: ``mkdir`` with ``exist_ok`` passes a
    link to a directory, and every write below it would land where it points.
    A failure to make it is the ``OSError`` for the caller to word."""
    refuse_link(directory)
    os.makedirs(directory, mode, exist_ok=True)
