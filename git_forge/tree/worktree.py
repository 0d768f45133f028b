"""Working-tree files as git objects, trees built from HEAD plus named paths,
and putting named paths back to HEAD — the shared core of commit, stash and
discard, which must each touch exactly the paths they are given, and produce
what git itself would for them.

Paths are repository-relative, as ``status`` reports them. They are used as
literal names, never as patterns: ``*.txt`` is the file called ``*.txt``.

Three rules hold for every path, at any depth:

* **No link is followed.** A path is looked at with ``lstat``, one component
  at a time; a path below a symbolic link (or below a file) does not exist in
  the working tree — git's "beyond a symbolic link" — so it reads as deleted
  when it is tracked, and is refused when it is not.
* **Content is what git would store and write.** Blobs of regular files are
  hashed by ``git hash-object`` (clean filters, ``working-tree-encoding``,
  ``ident``, end-of-line conversion, from every attribute and config source git
  reads: libgit2 knows fewer), and putting a path back is ``git checkout-index
  --force`` (smudge filters, symlinks as symlinks, and a link standing in the
  way is replaced, never written through).
* **What git-forge cannot do as git would, it refuses before changing
  anything** (``refusals``): nested repositories, submodules' own changes,
  special files, conflicts for a stash — each refusal names the path and the
  git command to use instead.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pygit2
from pygit2.enums import FileMode
from pygit2.errors import check_error

# pygit2's IndexEntry does not carry the entry's flags; its cffi bindings do.
from pygit2.ffi import C, ffi

from git_forge.errors import os_error_text
from git_forge.tree.errors import GitError
from git_forge.tree.gitconfig import config_flag
from git_forge.tree.porcelain import quote_path
from git_forge.tree.repo import Repo
from git_forge.words import counted

#: What a caller does with a set of paths (the refusals differ per action).
Action = Literal["commit", "stash", "discard"]

#: GIT_INDEX_ENTRY_INTENT_TO_ADD / _SKIP_WORKTREE in libgit2's index.h (extended flags).
_INTENT_TO_ADD = 1 << 13
_SKIP_WORKTREE = 1 << 14

#: The attributes file git reads in each directory.
ATTRIBUTES = ".gitattributes"


@dataclass(frozen=True)
class WorktreeFile:
    """A path's content in the working tree as a stored git object.

    ``blob_id`` is None when the path does not exist in the working tree.
    ``mode`` is a git file mode (regular, executable, symlink, or gitlink for
    a submodule, where ``blob_id`` is the submodule's checked-out commit).
    """

    path: str
    blob_id: pygit2.Oid | None
    mode: int = FileMode.BLOB
    #: The file's ``lstat``, taken before its content was read: what ``git add``
    #: records in the index entry (None when nothing was read from disk).
    stat: os.stat_result | None = field(default=None, compare=False, repr=False)

    @property
    def present(self) -> bool:
        return self.blob_id is not None


# --- the index --------------------------------------------------------------------------------


def staged_entry(index: pygit2.Index, path: str) -> pygit2.IndexEntry | None:
    """The stage-0 index entry of ``path``, or None (absent, or only conflict stages).

    ``path in index`` is true for a conflicted path too, while ``index[path]``
    then raises: always ask through here.
    """
    try:
        return index[path]
    except KeyError:
        return None


def _index_time(nanoseconds: int) -> tuple[int, int]:
    """An ``lstat`` time as the index's 32-bit seconds and nanoseconds (git truncates
    the seconds the same way)."""
    seconds = (nanoseconds // 1_000_000_000) & 0xFFFFFFFF
    return (seconds - (1 << 32) if seconds >= 1 << 31 else seconds,
            nanoseconds % 1_000_000_000)


def set_entry(index: pygit2.Index, file: WorktreeFile) -> None:
    """Set the stage-0 entry of a present ``file``, with its stat data when it was
    read from disk — as ``git add`` records it, so the next ``git status`` sees the
    file unchanged from its stat instead of hashing it again (and rewriting the
    index to say so). A file changed since its ``lstat`` no longer matches, and
    git hashes it as it would any other."""
    assert file.blob_id is not None
    info = file.stat
    if info is None:
        index.add(pygit2.IndexEntry(file.path, file.blob_id, FileMode(file.mode)))
        return
    centry = ffi.new("git_index_entry *")
    ffi.buffer(ffi.addressof(centry, "id"))[:] = file.blob_id.raw
    centry.ctime.seconds, centry.ctime.nanoseconds = _index_time(info.st_ctime_ns)
    centry.mtime.seconds, centry.mtime.nanoseconds = _index_time(info.st_mtime_ns)
    centry.dev = info.st_dev & 0xFFFFFFFF
    centry.ino = info.st_ino & 0xFFFFFFFF
    centry.mode = int(file.mode)
    centry.uid = info.st_uid & 0xFFFFFFFF
    centry.gid = info.st_gid & 0xFFFFFFFF
    centry.file_size = info.st_size & 0xFFFFFFFF
    path = ffi.new("char[]", os.fsencode(file.path))
    centry.path = path
    check_error(C.git_index_add(index._index, centry), io=True)


def _extended_flags(index: pygit2.Index, path: str) -> int:
    entry = C.git_index_get_bypath(index._index, os.fsencode(path), 0)
    return 0 if entry == ffi.NULL else int(entry.flags_extended)


def is_intent_to_add(index: pygit2.Index, path: str) -> bool:
    """True when the index entry of ``path`` was added with ``git add -N``."""
    return bool(_extended_flags(index, path) & _INTENT_TO_ADD)


def is_skip_worktree(index: pygit2.Index, path: str) -> bool:
    """True when ``path`` is outside a sparse checkout (git treats it as unchanged)."""
    return bool(_extended_flags(index, path) & _SKIP_WORKTREE)


def tree_entry(tree: pygit2.Tree | None, path: str) -> tuple[pygit2.Oid, int] | None:
    """``(id, mode)`` of the file, link or submodule ``path`` in ``tree``; None when
    it is not there (a directory is not an entry of its own)."""
    if tree is None:
        return None
    try:
        entry = tree[path]
    except KeyError:
        return None
    if entry.filemode == FileMode.TREE:
        return None
    return entry.id, entry.filemode


def previous_mode(index: pygit2.Index, head_tree: pygit2.Tree | None, path: str) -> int | None:
    """The mode git last knew ``path`` by: its index entry's, else HEAD's; None if untracked."""
    staged = staged_entry(index, path)
    if staged is not None:
        return int(staged.mode)
    entry = tree_entry(head_tree, path)
    return entry[1] if entry else None


# --- paths ------------------------------------------------------------------------------------


def normalise_paths(paths: Iterable[str]) -> list[str]:
    """Repository-relative paths, checked, de-duplicated, in git's (byte) order.

    A trailing ``/`` (how status names a nested repository) is dropped.
    Refuses empty, absolute, ``.``/``..`` and ``.git`` components: such a
    path could reach outside the working tree or into the repository itself.
    """
    result: set[str] = set()
    for path in paths:
        if not isinstance(path, str):
            raise GitError(f"not a path: {path!r}")
        trimmed = path.rstrip("/")
        parts = trimmed.split("/")
        if (
            not trimmed
            or trimmed.startswith("/")
            or "\0" in trimmed
            or any(part in ("", ".", "..") or part.lower() == ".git" for part in parts)
        ):
            raise GitError(f"not a path inside the working tree: {path!r}")
        result.add(trimmed)
    if not result:
        raise GitError("no paths given")
    return sorted(result, key=os.fsencode)


def blocking_parent(root: Path, path: str) -> str | None:
    """The first leading component of ``path`` that is a symbolic link or not a
    directory (so ``path`` cannot exist below it), or None. Never follows a link."""
    current = root
    parts = path.split("/")[:-1]
    for depth, part in enumerate(parts, start=1):
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not stat.S_ISDIR(mode):
            return "/".join(parts[:depth])
    return None


def lstat_in_tree(root: Path, path: str) -> os.stat_result | None:
    """``lstat`` of ``path`` inside the working tree at ``root``, or None when there
    is nothing there — including when a leading component is a link or a file
    (git: the path is "beyond a symbolic link" and does not exist)."""
    if blocking_parent(root, path) is not None:
        return None
    try:
        return os.lstat(root / path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _is_repository_dir(directory: Path) -> bool:
    return os.path.lexists(directory / ".git")


def _submodule_head(repo: Repo, path: str) -> pygit2.Oid | None:
    """The commit a submodule has checked out; ``None`` when it cannot be read."""
    try:
        target = pygit2.Repository(str(repo.workdir / path)).head.target
    except (pygit2.GitError, KeyError):
        return None
    return target if isinstance(target, pygit2.Oid) else None


def _shown(path: str) -> str:
    return quote_path(path)


def _refusal(repo: Repo, index: pygit2.Index, head_tree: pygit2.Tree | None, path: str,
             action: Action) -> str | None:
    """Why ``action`` cannot do for ``path`` what git would, with the git command to
    use instead; None when it can."""
    shown = _shown(path)
    conflicts = index.conflicts
    if action == "stash" and conflicts is not None and path in conflicts:
        return (f"{shown} is conflicted: resolve it first (edit it, then git add -- {shown}), "
                f"or take one side with git checkout --ours -- {shown}")
    info = lstat_in_tree(repo.workdir, path)
    mode = previous_mode(index, head_tree, path)
    if info is None:
        if mode is None and blocking_parent(repo.workdir, path) is not None:
            return (f"{shown} is beyond a symbolic link: it is not in the working tree "
                    f"(git add refuses it too)")
        return None
    if stat.S_ISDIR(info.st_mode):
        if mode == FileMode.COMMIT:
            if action != "commit":
                return (f"{shown} is a submodule: its changes live in its own repository; "
                        f"git-forge does not {action} them — look with git -C {shown} status, "
                        f"then stash there (git -C {shown} stash -u) or put the recorded "
                        f"commit back (git submodule update -- {shown})")
            in_head = tree_entry(head_tree, path)
            recorded = in_head[0] if in_head is not None else None
            head = _submodule_head(repo, path)
            if head is None:
                return (f"{shown} is a submodule with no commit checked out; look with "
                        f"git -C {shown} status")
            if head == recorded:
                return (f"{shown} is a submodule whose changes are uncommitted inside it: "
                        f"they are the submodule's own; commit them there first "
                        f"(git -C {shown} status)")
            return None
        if _is_repository_dir(repo.workdir / path):
            return (f"{shown}/ is a nested git repository (an untracked directory to git): "
                    f"git-forge will not {action} it — look with git -C {shown} status; "
                    f"track it with git submodule add <url> {shown}, keep it out of status "
                    f"with: echo '/{path}/' >> .git/info/exclude, or move it out of the tree")
        if mode is not None:
            return None  # a directory took a tracked file's place: the file is deleted
        return f"{shown} is a directory; name the files in it"
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
        return (f"{shown} is not a regular file, a symbolic link or a directory; git cannot "
                f"store it — remove or move it (rm -- {shown})")
    return None


def refusals(repo: Repo, paths: Iterable[str], action: Action) -> list[tuple[str, str]]:
    """``(path, why)`` for each of ``paths`` that ``action`` cannot handle as git would.

    For a stash or a discard this includes a path whose return to HEAD would
    also destroy an entry that was not named (see ``unnamed_in_the_way``).
    Callers either refuse the whole action (``refuse``) or, like the loop, leave
    those paths alone and act on the rest.
    """
    names = list(paths)
    index = repo.fresh_index()
    head = repo.head_commit()
    head_tree = head.tree if head is not None else None
    found: list[tuple[str, str]] = []
    for path in names:  # as given; a nested repository's "dir/" is looked at as "dir"
        why = _refusal(repo, index, head_tree, path.rstrip("/"), action)
        if why is not None:
            found.append((path, why))
    if action != "commit":
        refused = {path for path, _ in found}
        blockers = blockers_by_path(repo, [p.rstrip("/") for p in names if p not in refused])
        for path, blocking in blockers.items():
            listed = ", ".join(_shown(p) for p in blocking[:10]) + (
                " …" if len(blocking) > 10 else "")
            found.append((path, f"putting {_shown(path)} back to HEAD would also remove "
                                f"{listed}, which were not named; name them too"))
    return sorted(found, key=lambda pair: os.fsencode(pair[0]))


def refuse(repo: Repo, paths: Iterable[str], action: Action) -> None:
    """Raise ``GitError`` (exit 2) naming every path ``action`` cannot handle; nothing
    has been changed when it does."""
    found = refusals(repo, paths, action)
    if found:
        raise GitError(f"cannot {action}: " + "; ".join(why for _, why in found))


# --- reading the working tree -----------------------------------------------------------------


def _file_mode_trusted(repo: Repo) -> bool:
    """``core.fileMode`` as git reads it (every config source, ``git -c`` included)."""
    return config_flag("core.fileMode", repo) is not False


def _attributes_only_in_the_index(paths: Iterable[str], index: pygit2.Index,
                                  workdir: Path) -> list[str]:
    """The ``.gitattributes`` of the directories above ``paths`` that are in the
    index but gone from the work tree. ``git add`` reads such a file from the
    index; ``git hash-object`` does not (git 2.39 has no way to make it), so no
    commit made with it can match git's: the caller refuses."""
    directories = {""}
    for path in paths:
        parent = path.rpartition("/")[0]
        while parent and parent not in directories:
            directories.add(parent)
            parent = parent.rpartition("/")[0]
    found = []
    for directory in sorted(directories):
        name = f"{directory}/{ATTRIBUTES}" if directory else ATTRIBUTES
        if name in index and not os.path.lexists(workdir / name):
            found.append(name)
    return found


def _hash_with_git(repo: Repo, paths: list[str]) -> list[pygit2.Oid]:
    """The blobs ``git add`` would store for ``paths``, written to the object store.

    One ``git hash-object -w --stdin-paths`` for all of them: it applies clean
    filters, ``working-tree-encoding``, ``ident`` and end-of-line conversion
    exactly as ``git add`` does, from every attribute and config source git
    reads — whichever apply is git's to know, so every file is hashed by git. A name
    is C-quoted when git's ``quote_path`` would quote it, which that command
    reads back (a newline or a trailing space in a name survives).
    """
    lines = b"".join(os.fsencode(quote_path(path, quote_path_fully=True)) + b"\n"
                    for path in paths)
    out = repo.run_git(["hash-object", "-w", "--stdin-paths"], input=lines)
    ids = out.decode("ascii").split()
    if len(ids) != len(paths):
        raise GitError(f"git hash-object returned {len(ids)} ids for {len(paths)} paths",
                       exit_code=1)
    return [pygit2.Oid(hex=value) for value in ids]


#: Files up to this size are read whole and stored in one write; larger ones are
#: streamed. libgit2's stream spools into a temporary file and reads it back before
#: writing the object, a second inode and a second copy of every byte. (A backlog
#: of 10,000 items is about 4 MiB; the bound keeps parallel commits' memory small.)
BLOB_IN_MEMORY_LIMIT = 8 * 1024 * 1024


def _blob_of_bytes(repo: Repo, path: str) -> pygit2.Oid:
    """The file's bytes as they are, stored as a blob: opened without following a
    final link (the caller's lstat saw a regular file; O_NOFOLLOW closes the race)."""
    fd = os.open(repo.workdir / path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as stream:
        if os.fstat(fd).st_size <= BLOB_IN_MEMORY_LIMIT:
            return repo.repository.create_blob(stream.read())
        return repo.repository.create_blob_fromiobase(stream)


def read_worktree_files(
    repo: Repo,
    paths: Iterable[str],
    *,
    filtered: bool,
    previous_modes: Mapping[str, int | None] | None = None,
    index: pygit2.Index | None = None,
) -> list[WorktreeFile]:
    """Store the working-tree content of each of ``paths`` as a blob and describe it.

    ``filtered=True`` stores what ``git add`` would — for commits and stashes.
    ``filtered=False`` stores the bytes on disk exactly — for safety copies,
    so restoring gives back the same bytes. ``previous_modes`` (the index or
    HEAD entry's mode per path) keeps the executable bit when ``core.fileMode``
    is false, and recognises a submodule (recorded as its checked-out commit).

    A path below a link or a file reads as absent. Given the ``index``, an
    absent path outside a sparse checkout (skip-worktree) reads as its index
    entry, as git treats it: unchanged, not deleted. Call ``refuse`` first: a
    path it would refuse raises ``GitError`` here too.
    """
    names = list(paths)
    modes = previous_modes or {}
    files: dict[str, WorktreeFile] = {}
    to_hash: list[tuple[str, int, os.stat_result]] = []
    repository = repo.repository
    trust_mode: bool | None = None
    for path in names:
        previous = modes.get(path)
        info = lstat_in_tree(repo.workdir, path)
        if info is None:
            if previous is None and blocking_parent(repo.workdir, path) is not None:
                raise GitError(f"{_shown(path)} is beyond a symbolic link")
            staged = staged_entry(index, path) if index is not None else None
            if index is not None and staged is not None and is_skip_worktree(index, path):
                files[path] = WorktreeFile(path, staged.id, int(staged.mode))
            else:
                files[path] = WorktreeFile(path, None)
        elif stat.S_ISLNK(info.st_mode):
            target = os.fsencode(os.readlink(repo.workdir / path))
            files[path] = WorktreeFile(path, repository.create_blob(target), FileMode.LINK,
                                       info)
        elif stat.S_ISDIR(info.st_mode):
            if previous == FileMode.COMMIT:
                head = _submodule_head(repo, path)
                if head is None:
                    raise GitError(f"cannot read the checked-out commit of submodule "
                                   f"{_shown(path)}")
                files[path] = WorktreeFile(path, head, FileMode.COMMIT)
            elif previous is not None and not _is_repository_dir(repo.workdir / path):
                # The tracked file (or link) is gone and a directory took its place:
                # the file is deleted; the directory's files are paths of their own.
                files[path] = WorktreeFile(path, None)
            elif _is_repository_dir(repo.workdir / path):
                raise GitError(f"{_shown(path)}/ is a nested git repository, not a file")
            else:
                raise GitError(f"{_shown(path)} is a directory; name the files in it")
        elif not stat.S_ISREG(info.st_mode):
            raise GitError(f"{_shown(path)} is not a regular file, a symbolic link or a "
                           "directory")
        else:
            mode: int = FileMode.BLOB_EXECUTABLE if info.st_mode & stat.S_IXUSR else FileMode.BLOB
            if previous in (FileMode.BLOB, FileMode.BLOB_EXECUTABLE) and mode != previous:
                # Only a changed executable bit asks git whether it counts.
                if trust_mode is None:
                    trust_mode = _file_mode_trusted(repo)
                if not trust_mode:
                    mode = FileMode(previous)
            if filtered:
                to_hash.append((path, mode, info))
                continue
            files[path] = WorktreeFile(path, _blob_of_bytes(repo, path), mode, info)
    if to_hash:
        hashed = [path for path, _, _ in to_hash]
        if index is not None:
            stale = _attributes_only_in_the_index(hashed, index, repo.workdir)
            if stale:
                raise GitError(
                    f"{_shown(stale[0])} is deleted from the working tree but still in the "
                    f"index, where git add would read it and git-forge cannot; restore it "
                    f"(git checkout -- {quote_path(stale[0])}) or stage its removal "
                    f"(git rm --cached {quote_path(stale[0])}) first")
        ids = _hash_with_git(repo, hashed)
        for (path, mode, info), blob_id in zip(to_hash, ids, strict=True):
            files[path] = WorktreeFile(path, blob_id, mode, info)
    return [files[path] for path in names]


def read_worktree_file(
    repo: Repo, path: str, *, filtered: bool, previous_mode: int | None = None
) -> WorktreeFile:
    """``read_worktree_files`` for one path."""
    return read_worktree_files(repo, [path], filtered=filtered,
                               previous_modes={path: previous_mode})[0]


def tree_with(repo: Repo, base: pygit2.Tree | None, files: Iterable[WorktreeFile]) -> pygit2.Oid:
    """Write the tree ``base`` (None = empty) with ``files`` replaced, added or removed.

    Built in a private in-memory index: the repository's index is not touched.
    Removals go first, so a file replaced by a directory of the same name (or
    the reverse) works when both paths are named.
    """
    scratch = pygit2.Index()
    if base is not None:
        scratch.read_tree(base)
    files = list(files)
    for file in files:
        if not file.present and file.path in scratch:
            scratch.remove(file.path)
    for file in files:
        if file.blob_id is not None:
            try:
                scratch.add(pygit2.IndexEntry(file.path, file.blob_id, FileMode(file.mode)))
            except pygit2.GitError as exc:
                raise GitError(f"cannot place {file.path!r} in the tree: {exc}") from exc
    return scratch.write_tree(repo.repository)


# --- putting paths back -----------------------------------------------------------------------


def _files_under(directory: Path, root: Path) -> list[str]:
    """Every file, symlink and nested ``.git`` below ``directory`` (ignored ones too)."""
    found: list[str] = []
    for current, dirs, files in os.walk(directory):
        for name in list(dirs):
            full = Path(current) / name
            if name == ".git" or os.path.islink(full):
                dirs.remove(name)
                found.append(full.relative_to(root).as_posix())
        found.extend((Path(current) / name).relative_to(root).as_posix() for name in files)
    return found


def blockers_by_path(repo: Repo, paths: list[str]) -> dict[str, list[str]]:
    """Working-tree entries NOT in ``paths`` that putting each of ``paths`` back to
    HEAD would destroy.

    Writing file ``x`` where a directory ``x/`` now stands removes everything
    in it, named or not, ignored or not (libgit2's checkout and git's
    ``checkout-index --force`` alike); so does writing ``d/f`` where a file or
    a link ``d`` stands. Such entries must be named too (so they are saved
    first) or the action refused. Each named path that has some, with its
    blockers, sorted.
    """
    head = repo.head_commit()
    per_path: dict[str, list[str]] = {}
    if head is not None:
        named = set(paths)
        for path in paths:
            if tree_entry(head.tree, path) is None:
                continue  # only deleted, never written: nothing stands in its way
            blockers: list[str] = []
            parent = blocking_parent(repo.workdir, path)
            if parent is not None:
                if parent not in named:
                    blockers.append(parent)
            else:
                full = repo.workdir / path
                info = lstat_in_tree(repo.workdir, path)
                if info is not None and stat.S_ISDIR(info.st_mode):
                    blockers += [p for p in _files_under(full, repo.workdir) if p not in named]
            if blockers:
                per_path[path] = sorted(set(blockers), key=os.fsencode)
    return per_path


def unnamed_in_the_way(repo: Repo, paths: list[str]) -> list[str]:
    """Every blocker of ``blockers_by_path``, once each, sorted."""
    per_path = blockers_by_path(repo, paths)
    return sorted({b for found in per_path.values() for b in found}, key=os.fsencode)


def check_restorable(repo: Repo, paths: list[str], action: str) -> None:
    """Refuse ``action`` (before it changes anything) if restoring ``paths`` would
    destroy working-tree entries the caller did not name."""
    blockers = unnamed_in_the_way(repo, paths)
    if blockers:
        shown = ", ".join(blockers[:10]) + (" …" if len(blockers) > 10 else "")
        raise GitError(
            f"cannot {action} these paths: putting them back to HEAD would also remove"
            f" {shown}, which were not named; name them too"
        )


def restore_to_head(repo: Repo, paths: list[str]) -> None:
    """Put exactly ``paths`` back to HEAD in the index and the working tree.

    The index entries of exactly these paths become HEAD's (conflict stages
    dropped) or go (a path HEAD does not have). In the working tree, paths HEAD
    does not have are deleted (a link is unlinked, never followed; emptied
    directories go too), then ``git checkout-index --force`` writes HEAD's
    content for the others, as ``git checkout HEAD -- PATHS`` would: smudge
    filters run, a link in HEAD comes back as a link, and a link or file
    standing at the path or on its way is replaced, not written through. A
    path outside a sparse checkout that already matches HEAD stays unwritten.
    Nothing else is touched — and if something else would have to be
    (``unnamed_in_the_way``), nothing is done at all.
    """
    check_restorable(repo, paths, "restore")
    head = repo.head_commit()
    head_tree = head.tree if head is not None else None
    try:
        index = repo.fresh_index()
        conflicts = index.conflicts
        to_write: list[str] = []
        to_delete: list[str] = []
        for path in paths:
            target = tree_entry(head_tree, path)
            staged = staged_entry(index, path)
            if conflicts is not None and path in conflicts:
                del conflicts[path]
            if target is None:
                if staged is not None:
                    index.remove(path)
                to_delete.append(path)
                continue
            if (staged is not None and is_skip_worktree(index, path)
                    and (staged.id, int(staged.mode)) == target):
                continue  # outside the sparse checkout and unchanged: git leaves it alone
            index.add(pygit2.IndexEntry(path, target[0], FileMode(target[1])))
            to_write.append(path)
        index.write()
        for path in sorted(to_delete, key=os.fsencode, reverse=True):
            _delete(repo.workdir, path)
    except (pygit2.GitError, OSError) as exc:
        cause = os_error_text(exc) if isinstance(exc, OSError) else exc
        raise GitError(f"cannot restore {counted(len(paths), 'path')} to HEAD: {cause}") from exc
    if to_write:
        # Through git: it runs smudge filters and never writes through a link
        # (libgit2's checkout does both wrong: the raw blob, through the link).
        repo.run_git(["checkout-index", "--force", "-z", "--stdin"],
                     input=b"".join(os.fsencode(path) + b"\0" for path in to_write))


def _delete(root: Path, path: str) -> None:
    """Remove the file or link at ``path`` (never what a link points to, never below
    a link), then the directories that emptied."""
    info = lstat_in_tree(root, path)
    if info is None or stat.S_ISDIR(info.st_mode):
        return  # nothing there, or a directory whose named files go on their own
    full = root / path
    full.unlink()
    directory = full.parent
    while directory != root and not os.path.islink(directory) and directory.is_dir() and \
            not any(directory.iterdir()):
        directory.rmdir()
        directory = directory.parent
