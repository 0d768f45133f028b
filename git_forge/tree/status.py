"""Porcelain status through pygit2: the entries ``git status --porcelain -uall
--no-renames`` prints, path for path and code for code.

libgit2's ``status()`` gives one flag set per path; git prints two-letter
codes. The differences handled here (each measured against git 2.39):

* intent-to-add (``git add -N``): git prints `` A`` (`` D`` once the file is
  gone), libgit2 reports an index addition (``A `` / ``AM`` / ``AD``); the
  index entry's intent-to-add flag tells them apart;
* a path deleted in the index and present again in the working tree is one
  libgit2 entry and two git lines (``D `` and ``??``);
* conflicts are one libgit2 flag; git's ``UU``/``AA``/``DD``/``AU``/``UA``/
  ``UD``/``DU`` come from which stages the index holds;
* ignored files are never reported.

Known difference: an untracked nested repository that holds nothing but its
``.git`` is listed by git (``?? nested/``) and not by libgit2.

For the pre-launch hot path use ``fast_status`` (git itself, no pygit2).
"""

from __future__ import annotations

import os

import pygit2
from pygit2.enums import FileStatus

# pygit2's IndexEntry does not carry the entry's flags; its cffi bindings do.
from pygit2.ffi import C, ffi

from git_forge.tree.porcelain import StatusEntry, render_porcelain_line, sort_like_git
from git_forge.tree.repo import Repo, git_failures

__all__ = ["StatusEntry", "dirty_paths", "is_intent_to_add", "porcelain", "render_porcelain_line"]

#: GIT_INDEX_ENTRY_INTENT_TO_ADD in libgit2's index.h (an extended flag).
_INTENT_TO_ADD = 1 << 13

_INDEX_CODES = (
    (FileStatus.INDEX_NEW, "A"),
    (FileStatus.INDEX_MODIFIED, "M"),
    (FileStatus.INDEX_DELETED, "D"),
    (FileStatus.INDEX_TYPECHANGE, "T"),
    (FileStatus.INDEX_RENAMED, "R"),
)
_WORKTREE_CODES = (
    (FileStatus.WT_MODIFIED, "M"),
    (FileStatus.WT_DELETED, "D"),
    (FileStatus.WT_TYPECHANGE, "T"),
    (FileStatus.WT_RENAMED, "R"),
)
# Which conflict stages exist (1 = base, 2 = ours, 4 = theirs) → git's code.
_CONFLICT_CODES = {1: "DD", 2: "AU", 3: "UD", 4: "UA", 5: "DU", 6: "AA", 7: "UU"}


def is_intent_to_add(index: pygit2.Index, path: str) -> bool:
    """True when the index entry of ``path`` was added with ``git add -N``."""
    entry = C.git_index_get_bypath(index._index, os.fsencode(path), 0)
    return entry != ffi.NULL and bool(entry.flags_extended & _INTENT_TO_ADD)


def _conflict_code(index: pygit2.Index, path: str) -> str:
    ancestor, ours, theirs = index.conflicts[path]
    stages = (1 if ancestor else 0) | (2 if ours else 0) | (4 if theirs else 0)
    return _CONFLICT_CODES.get(stages, "UU")


def _code(flags: FileStatus, table: tuple[tuple[FileStatus, str], ...]) -> str:
    for flag, letter in table:
        if flags & flag:
            return letter
    return " "


def entries_for(index: pygit2.Index, path: str, flags: FileStatus) -> list[StatusEntry]:
    """The porcelain lines git prints for one libgit2 status entry."""
    if flags & FileStatus.IGNORED:
        return []
    if flags & FileStatus.CONFLICTED:
        return [StatusEntry(path, _conflict_code(index, path))]
    x, y = _code(flags, _INDEX_CODES), _code(flags, _WORKTREE_CODES)
    if x == "A" and is_intent_to_add(index, path):
        x, y = " ", "D" if flags & FileStatus.WT_DELETED else "A"
    entries = []
    if x != " " or y != " ":
        entries.append(StatusEntry(path, x + y))
    if flags & FileStatus.WT_NEW:
        entries.append(StatusEntry(path, "??"))
    return entries


@git_failures("cannot read the status")
def porcelain(repo: Repo) -> list[StatusEntry]:
    """What ``git status --porcelain -uall --no-renames`` lists, in git's order.

    Untracked files are listed one by one (a nested repository as ``dir/``),
    ignored files never. Reads the index and working tree as they are now.
    """
    repository = repo.repository
    flags_by_path = repository.status(untracked_files="all", ignored=False)
    index = repository.index  # status() has just (re)loaded it
    entries: list[StatusEntry] = []
    for path, flags in flags_by_path.items():
        entries.extend(entries_for(index, path, FileStatus(flags)))
    return sort_like_git(entries)


def dirty_paths(repo: Repo) -> set[str]:
    """The set of paths ``porcelain`` lists (for re-verifying after an action)."""
    return {entry.path for entry in porcelain(repo)}
