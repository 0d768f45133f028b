"""Discard a set of paths — only after their content is saved where git keeps it.

Before anything is thrown away, a safety commit is written: parent HEAD, tree
= HEAD's tree with the named paths as they are in the working tree (deleted
paths absent), stored under ``refs/forge/discarded/<YYYYmmddTHHMMSSZ>``
(``-2``, ``-3`` … on a clash within the same second). The blobs hold the
bytes on disk exactly (no filters), so ``git show REF:path`` gives back the
very file. If a named path also had staged content, that is kept too: the
safety commit then has a second parent holding HEAD's tree with the paths as
staged (``git show REF^2:path``). On an unborn branch there is no HEAD: the
commit has no parent (or, to keep "first parent = what the branch had", an
empty root commit when a staged parent is needed).

Only then are the paths put back to HEAD (tracked) or deleted (untracked) —
nothing else — and status is re-read to prove it. ``restore_discarded`` puts
the saved content back into the working tree.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2.enums import FileMode

from git_forge.atomic import atomic_write, default_file_mode, fsync_directory, temp_name
from git_forge.clock import compact_stamp
from git_forge.tree.errors import GitError
from git_forge.tree.git_status import dirty_paths
from git_forge.tree.identity import author_and_committer
from git_forge.tree.porcelain import quote_path
from git_forge.tree.repo import Repo, git_failures
from git_forge.tree.worktree import (
    WorktreeFile,
    blocking_parent,
    is_intent_to_add,
    lstat_in_tree,
    normalise_paths,
    previous_mode,
    read_worktree_files,
    refuse,
    restore_to_head,
    staged_entry,
    tree_entry,
    tree_with,
)

SAFETY_REF_PREFIX = "refs/forge/discarded/"


@dataclass(frozen=True)
class SafetyRef:
    """Where discarded content was saved: the ref, its commit, the paths it holds."""

    ref: str
    commit_id: str
    paths: tuple[str, ...]


def restore_hint(ref: str) -> list[str]:
    """The two ways to get discarded content back, for the operator to read."""
    return [
        f"git forge reconcile --restore {ref}",
        f"git show {ref}:<path>   (or: git checkout {ref} -- <path>)",
    ]


def create_safety_ref(repo: Repo, commit_id: pygit2.Oid | str,
                      prefix: str = SAFETY_REF_PREFIX) -> str:
    """``<prefix><timestamp>`` (``refs/forge/discarded/…``), or ``…-N`` if that name
    is taken.

    Creation without ``force`` is atomic in libgit2: two discards in the same
    second cannot overwrite each other.
    """
    commit_id = pygit2.Oid(hex=commit_id) if isinstance(commit_id, str) else commit_id
    base = prefix + compact_stamp()
    name, number = base, 1
    while True:
        try:
            repo.repository.create_reference_direct(name, commit_id, False)
            return name
        except pygit2.AlreadyExistsError:
            number += 1
            name = f"{base}-{number}"


def _message(paths: list[str], subject: str) -> str:
    listed = "\n".join(f"  {quote_path(path)}" for path in paths)
    return (
        f"{subject}\n\n"
        "The working-tree content of these paths, saved before they were discarded:\n"
        f"{listed}\n"
    )


@git_failures("cannot discard")
def discard_paths(repo: Repo, paths: Iterable[str], *, prefix: str = SAFETY_REF_PREFIX,
                  subject: str = "forge: discarded work (safety copy)") -> SafetyRef:
    """Save, then discard, the changes of exactly ``paths``; return the safety ref.

    Tracked paths return to HEAD (index and working tree); untracked ones are
    deleted, the way ``git checkout HEAD -- PATHS`` / ``git clean`` leave them
    (links replaced, never followed). Refuses — changing nothing — when none of
    the paths has a change, and for the paths ``worktree.refusals`` names
    (submodules and nested repositories: their content cannot be saved here).
    Show the operator ``restore_hint(result.ref)``. ``prefix`` and ``subject``:
    the safety ref's place and its commit's subject (another caller's, such as a
    retried item's attempt).
    """
    names = normalise_paths(paths)
    changed = dirty_paths(repo)
    if not changed.intersection(names):
        raise GitError(f"nothing to discard: {', '.join(names)} match HEAD")
    author, committer = author_and_committer(repo)
    repo.check_unlocked(commit=False, stash=False)
    refuse(repo, names, "discard")
    index = repo.fresh_index()
    head = repo.head_commit()
    head_tree = head.tree if head is not None else None
    files = read_worktree_files(
        repo, names, filtered=False,
        previous_modes={path: previous_mode(index, head_tree, path) for path in names},
        index=index,
    )
    parents = [head.id] if head is not None else []
    staged = _staged_differences(index, head_tree, names)
    repository = repo.repository
    if staged:
        if not parents:
            # No HEAD yet: an empty root commit stands in for it, so the first
            # parent is always "what the branch had" and the second the staging.
            parents.append(
                repository.create_commit(
                    None, author, committer, "forge: empty base (no commit yet)\n",
                    tree_with(repo, None, []), [],
                )
            )
        staged_tree = tree_with(repo, head_tree, staged)
        parents.append(
            repository.create_commit(
                None, author, committer,
                "forge: staged content of discarded paths (safety copy)\n",
                staged_tree, parents[:1],
            )
        )
    commit_id = repository.create_commit(
        None, author, committer, _message(names, subject), tree_with(repo, head_tree, files),
        parents
    )
    ref = create_safety_ref(repo, commit_id, prefix)

    restore_to_head(repo, names)
    left = sorted(dirty_paths(repo) & set(names))
    if left:
        raise GitError(
            f"saved to {ref}, but these paths could not be discarded: {', '.join(left)}"
        )
    return SafetyRef(ref, str(commit_id), tuple(names))


def _staged_differences(
    index: pygit2.Index, head_tree: pygit2.Tree | None, names: list[str]
) -> list[WorktreeFile]:
    """The staged state of ``names`` when any of them is staged differently from HEAD."""
    staged: list[WorktreeFile] = []
    differs = False
    conflicts = index.conflicts
    for path in names:
        in_head = tree_entry(head_tree, path)
        entry = staged_entry(index, path)
        if conflicts is not None and path in conflicts:
            # Conflict stages are HEAD's and the other side's commits: kept by git.
            staged.append(WorktreeFile(path, in_head[0], in_head[1]) if in_head else
                          WorktreeFile(path, None))
        elif entry is not None and not is_intent_to_add(index, path):
            staged.append(WorktreeFile(path, entry.id, int(entry.mode)))
            differs = differs or in_head != (entry.id, int(entry.mode))
        else:
            staged.append(WorktreeFile(path, None))
            differs = differs or in_head is not None
    return staged if differs else []


def resolve_safety_ref(repo: Repo, ref: str) -> tuple[str, pygit2.Commit]:
    """``refs/forge/discarded/<name>`` (or just ``<name>``) → its full name and commit."""
    name = ref if ref.startswith("refs/") else SAFETY_REF_PREFIX + ref
    if not name.startswith(SAFETY_REF_PREFIX):
        raise GitError(f"not a safety ref: {ref} (expected {SAFETY_REF_PREFIX}<timestamp>)")
    reference = repo.repository.references.get(name)
    if reference is None:
        raise GitError(f"no such safety ref: {ref}")
    return name, reference.peel(pygit2.Commit)


def _saved_changes(commit: pygit2.Commit) -> dict[str, tuple[pygit2.Oid, int] | None]:
    """Path → saved ``(blob id, mode)`` (None = the path was deleted), from the
    difference between the safety commit and its first parent."""
    base = commit.parents[0].tree if commit.parents else None
    tree = commit.tree
    diff = base.diff_to_tree(tree) if base is not None else tree.diff_to_tree(swap=True)
    changes: dict[str, tuple[pygit2.Oid, int] | None] = {}
    for delta in diff.deltas:
        path = delta.new_file.path or delta.old_file.path
        changes[path] = tree_entry(tree, path)
    return changes


@git_failures("cannot list the safety refs")
def safety_refs(repo: Repo) -> list[SafetyRef]:
    """Every safety ref in the repository, oldest first, with the paths each holds."""
    result = []
    for name in sorted(repo.repository.references):
        if name.startswith(SAFETY_REF_PREFIX):
            commit = repo.repository.references[name].peel(pygit2.Commit)
            paths = tuple(sorted(_saved_changes(commit), key=os.fsencode))
            result.append(SafetyRef(name, str(commit.id), paths))
    return result


def _disk_state(repo: Repo, path: str) -> tuple[pygit2.Oid, int] | None:
    """The raw content id and mode of the file or link at ``path``; None when
    there is none (nothing there, or a directory)."""
    full = repo.workdir / path
    info = lstat_in_tree(repo.workdir, path)
    if info is None:
        return None
    if stat.S_ISLNK(info.st_mode):
        return pygit2.hash(os.fsencode(os.readlink(full))), FileMode.LINK
    if not stat.S_ISREG(info.st_mode):
        return None
    mode = FileMode.BLOB_EXECUTABLE if info.st_mode & stat.S_IXUSR else FileMode.BLOB
    fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as stream:
        return pygit2.hash(stream.read()), mode


@git_failures("cannot restore")
def restore_discarded(repo: Repo, ref: str) -> list[str]:
    """Put the content saved in safety ref ``ref`` back into the working tree.

    Only the working tree is written (the index is left alone, so the paths
    show as changed again, as they were before the discard). Refuses —
    writing nothing — if restoring would overwrite a change made since, or
    anything not saved in the ref. Removals go first, so a file that had
    replaced a directory (or the reverse) comes back too. Returns the paths
    written or removed.
    """
    name, commit = resolve_safety_ref(repo, ref)
    saved = _saved_changes(commit)
    changed = dirty_paths(repo)
    pending = {
        path: target
        for path, target in saved.items()
        if _disk_state(repo, path) != target
    }
    removing = {path for path, target in pending.items() if target is None}
    blocked = sorted(
        (path for path, target in pending.items()
         if path in changed or (target is not None and _in_the_way(repo, path, removing))),
        key=os.fsencode,
    )
    if blocked:
        raise GitError(
            f"refusing to restore {name}: it would overwrite changes in {', '.join(blocked)}"
        )
    for path in sorted(removing, key=os.fsencode, reverse=True):
        _remove(repo, path)
    writes = sorted(((path, target) for path, target in pending.items() if target is not None),
                    key=lambda write: os.fsencode(write[0]))
    for path, target in writes:
        _write(repo, path, target)
    wrong = [path for path, target in pending.items() if _disk_state(repo, path) != target]
    if wrong:
        raise GitError(f"restored {name}, but these paths do not match it: {', '.join(wrong)}")
    return sorted(pending, key=os.fsencode)


def _in_the_way(repo: Repo, path: str, removing: set[str]) -> bool:
    """True when writing ``path`` would destroy something this restore does not remove:
    a parent that is a file or link, or a directory at ``path`` with other content."""
    parent = blocking_parent(repo.workdir, path)
    if parent is not None:
        return parent not in removing
    full = repo.workdir / path
    info = lstat_in_tree(repo.workdir, path)
    if info is not None and stat.S_ISDIR(info.st_mode):
        for directory, _, files in os.walk(full):
            for name in files:
                inner = (Path(directory) / name).relative_to(repo.workdir).as_posix()
                if inner not in removing:
                    return True
    return False


def _remove(repo: Repo, path: str) -> None:
    full = repo.workdir / path
    info = lstat_in_tree(repo.workdir, path)  # never below a link: that is outside
    if info is not None and not stat.S_ISDIR(info.st_mode):
        full.unlink()
        parent = full.parent
        while parent != repo.workdir and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent


def _write(repo: Repo, path: str, target: tuple[pygit2.Oid, int]) -> None:
    full = repo.workdir / path
    blob_id, mode = target
    blob = repo.repository[blob_id]
    if not isinstance(blob, pygit2.Blob):
        raise GitError(f"cannot restore {path!r}: the saved {blob_id} is not a file")
    data = blob.data
    if full.is_dir() and not full.is_symlink():
        for directory, _, _ in sorted(os.walk(full), reverse=True):
            os.rmdir(directory)  # emptied by the removals (checked by _in_the_way)
    full.parent.mkdir(parents=True, exist_ok=True)
    if mode == FileMode.LINK:
        temporary = full.with_name(temp_name(full.name, ".forge-restore"))
        if os.path.lexists(temporary):
            temporary.unlink()
        os.symlink(os.fsdecode(data), temporary)
        os.replace(temporary, full)
        fsync_directory(full.parent)
        return
    if mode not in (FileMode.BLOB, FileMode.BLOB_EXECUTABLE):
        raise GitError(f"cannot restore {path!r}: it was saved as a submodule entry")
    file_mode = default_file_mode()
    if mode == FileMode.BLOB_EXECUTABLE:
        file_mode |= (file_mode & 0o444) >> 2
    if os.path.islink(full):
        full.unlink()
    atomic_write(full, data, mode=file_mode)
