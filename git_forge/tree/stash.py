"""Stash exactly a set of paths, leaving every other change where it is — onto
the stash list (``stash_paths``), or kept under a ref of git-forge's own
(``keep_paths``).

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

``git stash list/show/apply [--index]`` read it like any stash. ``keep_paths``
writes the very same commit (what ``git stash create`` makes) but stores it
under a ref named by its caller instead of ``refs/stash`` — an agent's leftovers
are kept there, never on the user's own stash list, where ``git stash pop``
would apply them; ``git stash show/apply REF`` read it all the same. Then the named
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

from git_forge.tree.discard import SafetyRef, create_safety_ref
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
    stash_id, stash_message = _stash_commit(repo, names, message, stash=True)
    _push_stash_ref(repo, stash_id, stash_message)
    _put_back(repo, names, f"stashed as stash@{{0}} ({stash_id})")
    return str(stash_id)


@git_failures("cannot keep")
def keep_paths(repo: Repo, paths: Iterable[str], message: str, prefix: str) -> SafetyRef:
    """Keep the changes of exactly ``paths`` as ``stash_paths`` stashes them, under a
    new ref ``<prefix><timestamp>`` (``-2``, ``-3`` … on a clash) instead of on the
    stash list; return the ref, its commit and the paths.

    The commit is a stash's (``On <branch>: <message>``, its index and untracked
    parents): ``git stash show --include-untracked -p REF`` shows it and ``git
    stash apply REF`` takes it back. The same refusals as ``stash_paths``, before
    anything is written.
    """
    names = normalise_paths(paths)
    stash_id, _ = _stash_commit(repo, names, message, stash=False)
    ref = create_safety_ref(repo, stash_id, prefix)
    _put_back(repo, names, f"kept at {ref}")
    return SafetyRef(ref, str(stash_id), tuple(names))


def _stash_commit(repo: Repo, names: list[str], message: str, *,
                  stash: bool) -> tuple[pygit2.Oid, str]:
    """Write the stash commit of ``names`` (git's own format, see the module) and
    return it with its message; no ref is written and no file touched. ``stash``:
    it is for ``refs/stash`` (whose lock must then be free too)."""
    head = repo.head_commit()
    if head is None:
        raise GitError("cannot stash on an unborn branch: there is no commit yet")
    author, committer = author_and_committer(repo)
    repo.check_unlocked(commit=False, stash=stash)
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
    return stash_id, stash_message


def _put_back(repo: Repo, names: list[str], saved: str) -> None:
    """The saved paths back to HEAD, and status re-read to prove it (``saved``: where
    they went, for the error when some still differ)."""
    restore_to_head(repo, names)
    left = sorted(dirty_paths(repo) & set(names))
    if left:
        raise GitError(f"{saved}, but these paths still differ from HEAD: {', '.join(left)}")


def _push_stash_ref(repo: Repo, stash_id: pygit2.Oid, message: str) -> None:
    """Point ``refs/stash`` at the new stash and append it to the stash reflog.

    Through git: the stash list *is* the reflog of ``refs/stash``, and libgit2
    writes a reflog for that ref only when one already exists (pygit2 cannot
    create it). ``update-ref`` with the old value is also a compare-and-swap.
    """
    current = repo.repository.references.get(STASH_REF)
    old = str(current.target) if current is not None else "0" * len(str(stash_id))
    repo.run_git(["update-ref", "--create-reflog", "-m", message, STASH_REF, str(stash_id), old])

