"""Stash exactly a set of paths, leaving every other change where it is.

Two libgit2 traps rule out ``repo.stash(paths=…)`` (both measured, both in
the tests):

* without ``keep_all`` it stashes the named paths and then resets the whole
  working tree — unrelated edits are lost and saved nowhere;
* with ``keep_all`` nothing is lost, but the stash is not limited to the
  paths: ``include_untracked`` sweeps *every* untracked file into it, and its
  index commit records the whole index.

``git stash push -- PATHS`` also records the whole index. So the stash is
built here, in git's own format, from exactly the named paths:

* the index commit (``index on <branch>: <short> <subject>``, parent HEAD):
  HEAD's tree with the paths as staged;
* the untracked commit (``untracked files on …``, no parent), when any named
  path is untracked: those files only;
* the stash commit (``On <branch>: <message>``, parents HEAD, index commit
  [, untracked commit]): HEAD's tree with the tracked paths as in the working
  tree (deleted ones removed).

``git stash list/show/apply [--index]`` read it like any stash. Then the named
paths — and only they — are put back to HEAD (untracked ones deleted) the way
``git stash push -- PATHS`` / ``git checkout HEAD -- PATHS`` leave them
(``worktree.restore_to_head``: smudge filters, links replaced and never
followed), and status is re-read to prove it. A path git-forge cannot stash as
git would (a conflict, a submodule, a nested repository, an unnamed entry in
the way) is refused before anything is written. git-forge never applies, pops
or drops a stash.
"""

from __future__ import annotations

from collections.abc import Iterable

import pygit2

from git_forge.tree.errors import GitError
from git_forge.tree.git_status import dirty_paths
from git_forge.tree.identity import author_and_committer
from git_forge.tree.repo import Repo, git_failures
from git_forge.tree.worktree import (
    WorktreeFile,
    is_intent_to_add,
    normalise_paths,
    read_worktree_files,
    refuse,
    restore_to_head,
    staged_entry,
    tree_with,
)

STASH_REF = "refs/stash"


def _subject(commit: pygit2.Commit) -> str:
    return commit.message.split("\n", 1)[0]


def _staged_file(index: pygit2.Index, path: str) -> WorktreeFile:
    """The path as the index stages it (an intent-to-add entry stages nothing)."""
    entry = staged_entry(index, path)
    if entry is not None and not is_intent_to_add(index, path):
        return WorktreeFile(path, entry.id, int(entry.mode))
    return WorktreeFile(path, None)


@git_failures("cannot stash")
def stash_paths(repo: Repo, paths: Iterable[str], message: str) -> str:
    """Stash the changes of exactly ``paths`` (tracked and untracked); return the stash id.

    Afterwards the paths match HEAD (untracked ones are gone) and nothing else
    in the index or working tree has changed. The stash is ``stash@{0}``,
    listed as ``On <branch>: <message>``.

    Refuses on an unborn branch (a stash needs a commit), while a lock file is
    held, for the paths ``worktree.refusals`` names (conflicts, submodules,
    nested repositories, unnamed entries in the way), and when the paths hold
    no change — always before anything is written.
    """
    names = normalise_paths(paths)
    head = repo.head_commit()
    if head is None:
        raise GitError("cannot stash on an unborn branch: there is no commit yet")
    author, committer = author_and_committer(repo)
    repo.check_unlocked(commit=False)
    refuse(repo, names, "stash")
    index = repo.fresh_index()
    head_tree = head.tree
    entries = {path: staged_entry(index, path) for path in names}
    tracked = {path: entry for path, entry in entries.items() if entry is not None}
    untracked = [path for path in names if entries[path] is None]

    staged = [_staged_file(index, path) for path in names]
    worktree = read_worktree_files(
        repo, tracked, filtered=True,
        previous_modes={path: int(entry.mode) for path, entry in tracked.items()}, index=index,
    )
    # A path HEAD has but the index does not (staged deletion) is absent from the
    # stash's working tree; if a file of that name exists it is untracked.
    worktree += [WorktreeFile(path, None) for path in untracked]
    new_files = [
        file for file in read_worktree_files(repo, untracked, filtered=True) if file.present
    ]

    index_tree = tree_with(repo, head_tree, staged)
    worktree_tree = tree_with(repo, head_tree, worktree)
    if index_tree == head.tree_id and worktree_tree == head.tree_id and not new_files:
        raise GitError(f"no local changes to save in {', '.join(names)}")

    repository = repo.repository
    label = repo.branch_name or "(no branch)"
    on_head = f"{label}: {head.short_id} {_subject(head)}"
    index_commit = repository.create_commit(
        None, author, committer, f"index on {on_head}\n", index_tree, [head.id]
    )
    parents = [head.id, index_commit]
    if new_files:
        untracked_tree = tree_with(repo, None, new_files)
        parents.append(
            repository.create_commit(
                None, author, committer, f"untracked files on {on_head}\n", untracked_tree, []
            )
        )
    stash_message = f"On {label}: {message}"
    stash_id = repository.create_commit(
        None, author, committer, stash_message + "\n", worktree_tree, parents
    )
    _push_stash_ref(repo, stash_id, stash_message)

    restore_to_head(repo, names)
    left = sorted(dirty_paths(repo) & set(names))
    if left:
        raise GitError(
            f"stashed as stash@{{0}} ({stash_id}), but these paths still differ from HEAD:"
            f" {', '.join(left)}"
        )
    return str(stash_id)


def _push_stash_ref(repo: Repo, stash_id: pygit2.Oid, message: str) -> None:
    """Point ``refs/stash`` at the new stash and append it to the stash reflog.

    Through git: the stash list *is* the reflog of ``refs/stash``, and libgit2
    writes a reflog for that ref only when one already exists (pygit2 cannot
    create it). ``update-ref`` with the old value is also a compare-and-swap.
    """
    current = repo.repository.references.get(STASH_REF)
    old = str(current.target) if current is not None else "0" * len(str(stash_id))
    repo.run_git(["update-ref", "--create-reflog", "-m", message, STASH_REF, str(stash_id), old])

