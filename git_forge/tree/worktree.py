"""Working-tree files as git objects, trees built from HEAD plus named paths,
and putting named paths back to HEAD — the shared core of commit, stash and
discard, which must each touch exactly the paths they are given.

Paths are repository-relative, as ``porcelain`` reports them. They are used
as literal names, never as patterns: ``*.txt`` is the file called ``*.txt``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2.enums import CheckoutStrategy, FileMode

from git_forge.tree.errors import GitError
from git_forge.tree.repo import Repo

#: Put named paths back to HEAD: overwrite changes, delete untracked files,
#: and read the paths as exact names (libgit2 treats checkout paths as glob
#: patterns unless told otherwise: ``*.txt`` would match every .txt file).
RESTORE_STRATEGY = (
    CheckoutStrategy.FORCE
    | CheckoutStrategy.REMOVE_UNTRACKED
    | CheckoutStrategy.DISABLE_PATHSPEC_MATCH
)

#: Attributes whose conversion libgit2 cannot do; such paths are hashed by git.
_GIT_ONLY_ATTRIBUTES = ("filter", "working-tree-encoding")


class RawPath:
    """A path handed to pygit2 as the file system's bytes.

    pygit2 encodes plain ``str`` path lists as strict UTF-8, which fails for a
    name that is not UTF-8 (decoded with surrogate escapes); an object whose
    ``__fspath__`` returns bytes is passed through unchanged.
    """

    def __init__(self, path: str) -> None:
        self._raw = os.fsencode(path)

    def __fspath__(self) -> bytes:
        return self._raw


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

    @property
    def present(self) -> bool:
        return self.blob_id is not None


def staged_entry(index: pygit2.Index, path: str) -> pygit2.IndexEntry | None:
    """The stage-0 index entry of ``path``, or None (absent, or only conflict stages).

    ``path in index`` is true for a conflicted path too, while ``index[path]``
    then raises: always ask through here.
    """
    try:
        return index[path]
    except KeyError:
        return None


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


def _check_parents(repo: Repo, path: str) -> None:
    """Refuse a path below a symbolic link or a file, as git does."""
    current = repo.workdir
    for part in path.split("/")[:-1]:
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return
        if stat.S_ISLNK(mode):
            raise GitError(f"{path!r} is beyond a symbolic link")
        if not stat.S_ISDIR(mode):
            return


def _is_repository_dir(directory: Path) -> bool:
    return os.path.lexists(directory / ".git")


def _submodule_head(repo: Repo, path: str) -> pygit2.Oid:
    try:
        submodule = pygit2.Repository(str(repo.workdir / path))
        target = submodule.head.target
    except (pygit2.GitError, KeyError) as exc:
        raise GitError(f"cannot read the checked-out commit of submodule {path!r}: {exc}") from exc
    if not isinstance(target, pygit2.Oid):  # HEAD is resolved: a symbolic target is broken
        raise GitError(f"cannot read the checked-out commit of submodule {path!r}: "
                       f"HEAD points at {target!r}")
    return target


def _git_hashed_blob(repo: Repo, path: str) -> pygit2.Oid:
    """The blob git itself would store for ``path``.

    libgit2 runs no external filter drivers (git-lfs would get the real file
    committed instead of its pointer) and no working-tree-encoding; ``git
    hash-object --path`` applies them exactly as ``git add`` does.
    """
    out = repo.run_git(["hash-object", "-w", f"--path={path}", "--", path])
    return pygit2.Oid(hex=out.decode("ascii").strip())


def _needs_git_filters(repo: Repo, path: str) -> bool:
    for name in _GIT_ONLY_ATTRIBUTES:
        value = repo.repository.get_attr(os.fsencode(path), name)
        if value not in (None, False):
            return True
    return False


def read_worktree_file(
    repo: Repo,
    path: str,
    *,
    filtered: bool,
    previous_mode: int | None = None,
    allow_submodule: bool = True,
) -> WorktreeFile:
    """Store the working-tree content of ``path`` as a blob and describe it.

    ``filtered=True`` stores what ``git add`` would (clean filters, end-of-line
    conversion) — for commits and stashes. ``filtered=False`` stores the bytes
    on disk exactly — for safety copies, so restoring gives back the same bytes.
    ``previous_mode`` (the index or HEAD entry's mode) keeps the executable bit
    when ``core.fileMode`` is false, and recognises a submodule.

    Refuses a directory (name the files instead), an untracked nested
    repository, and, unless ``allow_submodule``, a submodule: their content is
    another repository's and cannot be saved or restored from this one.
    """
    _check_parents(repo, path)
    full = repo.workdir / path
    try:
        info = os.lstat(full)
    except (FileNotFoundError, NotADirectoryError):
        return WorktreeFile(path, None)
    repository = repo.repository
    if stat.S_ISLNK(info.st_mode):
        target = os.fsencode(os.readlink(full))
        return WorktreeFile(path, repository.create_blob(target), FileMode.LINK)
    if stat.S_ISDIR(info.st_mode):
        if previous_mode == FileMode.COMMIT:
            if not allow_submodule:
                raise GitError(
                    f"{path!r} is a submodule: its changes live in its own repository;"
                    f" handle them there (git -C {path} status)"
                )
            return WorktreeFile(path, _submodule_head(repo, path), FileMode.COMMIT)
        if _is_repository_dir(full):
            raise GitError(
                f"{path!r} is a nested git repository, not a file; git-forge will not"
                " commit, stash or discard it — handle it with git"
            )
        if previous_mode is not None:
            # The tracked file (or link) is gone and a directory took its place:
            # the file is deleted; the directory's files are paths of their own.
            return WorktreeFile(path, None)
        raise GitError(f"{path!r} is a directory; name the files in it")
    if not stat.S_ISREG(info.st_mode):
        raise GitError(f"{path!r} is not a regular file, a symbolic link or a directory")
    mode = FileMode.BLOB_EXECUTABLE if info.st_mode & stat.S_IXUSR else FileMode.BLOB
    if previous_mode in (FileMode.BLOB, FileMode.BLOB_EXECUTABLE) and not _file_mode_trusted(repo):
        mode = FileMode(previous_mode)
    if not filtered:
        # Not create_blob_fromdisk: for a file inside the working tree libgit2
        # applies the conversion filters there too. A stream is stored as is.
        with open(full, "rb") as stream:
            blob_id = repository.create_blob_fromiobase(stream)
    elif _needs_git_filters(repo, path):
        blob_id = _git_hashed_blob(repo, path)
    else:
        blob_id = repository.create_blob_fromworkdir(path)
    return WorktreeFile(path, blob_id, mode)


def _file_mode_trusted(repo: Repo) -> bool:
    try:
        return repo.repository.config.get_bool("core.fileMode")
    except KeyError:
        return True


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


def tree_entry(tree: pygit2.Tree | None, path: str) -> tuple[pygit2.Oid, FileMode] | None:
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


def unnamed_in_the_way(repo: Repo, paths: list[str]) -> list[str]:
    """Working-tree entries NOT in ``paths`` that putting ``paths`` back to HEAD would destroy.

    Measured: libgit2's checkout, asked to restore file ``x`` where a directory
    ``x/`` now stands, deletes everything in that directory — named or not,
    ignored or not. Likewise a file ``d`` standing where HEAD has ``d/f``. Such
    entries must be named too (so they are saved first) or the action refused.
    """
    head = repo.head_commit()
    if head is None:
        return []
    named = set(paths)
    blockers: list[str] = []
    for path in paths:
        if tree_entry(head.tree, path) is None:
            continue  # only deleted, never written: nothing stands in its way
        full = repo.workdir / path
        if full.is_dir() and not full.is_symlink():
            blockers += [p for p in _files_under(full, repo.workdir) if p not in named]
        prefix = repo.workdir
        parts = path.split("/")[:-1]
        for depth, part in enumerate(parts, start=1):
            prefix = prefix / part
            if os.path.lexists(prefix) and (prefix.is_symlink() or not prefix.is_dir()):
                if "/".join(parts[:depth]) not in named:
                    blockers.append("/".join(parts[:depth]))
                break
    return sorted(set(blockers), key=os.fsencode)


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

    Tracked paths get HEAD's content and index entry; paths HEAD does not have
    are removed from the index and deleted from the working tree (with their
    now-empty directories). Nothing else is touched — and if something else
    would have to be (``unnamed_in_the_way``), nothing is done at all.
    """
    check_restorable(repo, paths, "restore")
    try:
        index = repo.fresh_index()
        if repo.is_unborn:
            _remove_unborn(repo, index, paths)
        else:
            _resolve_conflicts_to_head(repo, index, paths)
            repo.repository.checkout_head(
                paths=[RawPath(path) for path in paths], strategy=RESTORE_STRATEGY
            )
    except (pygit2.GitError, OSError) as exc:
        raise GitError(f"cannot restore {len(paths)} path(s) to HEAD: {exc}") from exc


def _resolve_conflicts_to_head(repo: Repo, index: pygit2.Index, paths: list[str]) -> None:
    """Replace the conflict stages of named paths by HEAD's entry first.

    Measured: checkout drops the stages of a conflicted path but, when the
    file on disk already matches HEAD, neither writes HEAD's entry back nor
    touches the file, leaving the path deleted in the index.
    """
    conflicts = index.conflicts
    if conflicts is None:
        return
    head = repo.head_commit()
    for path in paths:
        if path in conflicts:
            del conflicts[path]
            entry = tree_entry(head.tree if head is not None else None, path)
            if entry is not None:
                index.add(pygit2.IndexEntry(path, entry[0], entry[1]))
    index.write()


def _remove_unborn(repo: Repo, index: pygit2.Index, paths: list[str]) -> None:
    """Before the first commit every path is new: unstage and delete it."""
    for path in paths:
        if path in index:
            index.remove(path)
    index.write()
    for path in paths:
        full = repo.workdir / path
        if os.path.islink(full) or os.path.isfile(full):
            full.unlink()
            _remove_empty_parents(repo.workdir, full.parent)


def _remove_empty_parents(root: Path, directory: Path) -> None:
    while directory != root and directory.is_dir() and not any(directory.iterdir()):
        directory.rmdir()
        directory = directory.parent
