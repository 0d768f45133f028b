"""Commit exactly a set of paths, whatever else is staged or changed.

The new commit's tree is HEAD's tree with the named paths as they are in the
working tree (a deleted path is removed). Then the index entries of exactly
those paths are set to what was committed; every other index entry and every
working-tree file stays as it was — including other staged changes, which
``git commit -- PATHS`` would also leave alone, and intent-to-add entries.

What differs from ``git commit``, on purpose or by libgit2's nature:

* no hooks run (``pre-commit``, ``commit-msg``, ``post-commit``): libgit2 has
  none, and an unattended loop must not stop on one;
* the commit is not signed, even with ``commit.gpgSign`` set;
* the blobs are git's own: every regular file is hashed by ``git hash-object``
  (clean filters such as git-lfs, end-of-line conversion, ``ident``, from every
  attribute and config source git reads); links are stored as links, never
  followed;
* a path git-forge cannot commit as git would (a nested repository, a
  submodule whose changes are uncommitted inside it, a special file) is
  refused before anything changes, naming the git command to use.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pygit2
from pygit2.enums import RepositoryState

from git_forge.tree.errors import GitError
from git_forge.tree.identity import author_and_committer
from git_forge.tree.repo import Repo, git_failures
from git_forge.tree.worktree import (
    WorktreeFile,
    normalise_paths,
    previous_mode,
    read_worktree_files,
    refuse,
    set_entry,
    staged_entry,
    tree_with,
)


def clean_message(message: str) -> str:
    """Trailing whitespace stripped from each line and the end, one final newline
    (what ``git commit`` stores); an empty message is refused."""
    lines = [line.rstrip() for line in message.strip("\n").splitlines()]
    text = "\n".join(lines).strip("\n")
    if not text.strip():
        raise GitError("empty commit message")
    return text + "\n"


def _set_entries(
    index: pygit2.Index,
    entries: Sequence[tuple[str, pygit2.IndexEntry | WorktreeFile | None]],
) -> None:
    """Set (or remove) the stage-0 entries of exactly these paths and write the index."""
    conflicts = index.conflicts
    for path, entry in entries:
        if conflicts is not None and path in conflicts:
            del conflicts[path]
        if isinstance(entry, WorktreeFile):
            set_entry(index, entry)
        elif entry is not None:
            index.add(entry)
        elif path in index:
            index.remove(path)
    index.write()


@git_failures("cannot commit")
def commit_paths(
    repo: Repo, paths: Iterable[str], message: str, *, allow_empty: bool = False,
    branch: str | None = None,
) -> str:
    """Commit the working-tree content of exactly ``paths`` on top of HEAD; return its id.

    On an unborn branch this is the first commit. The branch (or a detached
    HEAD) advances with a reflog entry ``commit: <subject>`` as git writes it.
    Refuses during a merge, rebase or cherry-pick (that commit needs every
    path, like git's "cannot do a partial commit during a merge"), when no
    identity is configured, and when the paths hold no change from HEAD
    (unless ``allow_empty``: then no paths at all is an empty commit).

    ``branch``: the commit lands on that branch or nowhere — HEAD must be on it
    (a ``GitError`` otherwise, nothing changed), and the branch itself is what
    moves, so a checkout switched meanwhile never gets the commit.
    """
    listed = list(paths)
    names = normalise_paths(listed) if listed or not allow_empty else []
    text = clean_message(message)
    repository = repo.repository
    if repository.state() != RepositoryState.NONE:
        raise GitError(
            "cannot commit named paths while a merge, rebase, cherry-pick or revert is in"
            " progress; finish or abort it first"
        )
    if branch is not None and repo.branch_name != branch:
        where = repo.branch_name or "a detached HEAD"
        raise GitError(f"HEAD is on {where}, not on branch {branch}")
    author, committer = author_and_committer(repo)
    repo.check_unlocked(stash=False)
    refuse(repo, names, "commit")
    index = repo.fresh_index()
    head = repo.head_commit()
    head_tree = head.tree if head is not None else None
    files = read_worktree_files(
        repo, names, filtered=True,
        previous_modes={path: previous_mode(index, head_tree, path) for path in names},
        index=index,
    )
    tree_id = tree_with(repo, head_tree, files)
    if head is not None and tree_id == head.tree_id and not allow_empty:
        raise GitError(f"nothing to commit: {', '.join(names)} match HEAD")
    parents = [head.id] if head is not None else []
    # The index is written first: if that fails nothing has happened; if the
    # commit then fails, the old entries go back. The other order could leave a
    # new commit with an index that would revert it on the next `git commit`.
    previous = [(file.path, staged_entry(index, file.path)) for file in files]
    _set_entries(index, [(file.path, file if file.present else None) for file in files])
    try:
        ref = "HEAD" if branch is None else f"refs/heads/{branch}"
        commit_id = repository.create_commit(ref, author, committer, text, tree_id, parents)
    except BaseException:
        _set_entries(repo.fresh_index(), previous)
        raise
    return str(commit_id)
