"""What happened since a run began, and what is waiting in the stash or kept
under git-forge's own refs: evidence for attributing stranded work to items
(always *candidates*).
"""

from __future__ import annotations

import os

import pygit2
from pygit2.enums import SortMode

from git_forge.tree.errors import GitError
from git_forge.tree.log_cli import Commit, StashEntry, subject_of
from git_forge.tree.repo import Repo, git_failures


def _diff_paths(old: pygit2.Tree | None, new: pygit2.Tree) -> set[str]:
    diff = old.diff_to_tree(new) if old is not None else new.diff_to_tree(swap=True)
    paths: set[str] = set()
    for delta in diff.deltas:
        paths.add(delta.old_file.path)
        paths.add(delta.new_file.path)
    return paths


def _sorted(paths: set[str]) -> tuple[str, ...]:
    return tuple(sorted(paths, key=os.fsencode))


def touched_paths(commit: pygit2.Commit) -> tuple[str, ...]:
    """Paths a commit changed against its first parent (every path of a root commit)."""
    parent = commit.parents[0].tree if commit.parents else None
    return _sorted(_diff_paths(parent, commit.tree))


def _resolve(repo: Repo, revision: str) -> pygit2.Oid:
    try:
        return repo.repository.revparse_single(revision).peel(pygit2.Commit).id
    except (KeyError, ValueError, pygit2.GitError) as exc:
        raise GitError(f"unknown revision: {revision}") from exc


@git_failures("cannot read the log")
def log_subjects(repo: Repo, base: str | None, head: str = "HEAD") -> list[Commit]:
    """The commits of ``base..head``, oldest first (topological), with subjects and paths.

    ``base`` None means all of ``head``'s history. An unborn ``HEAD`` has no
    commits: the result is empty. An unknown ``base`` is a ``GitError``.
    """
    if head == "HEAD" and repo.is_unborn:
        return []
    walker = repo.repository.walk(_resolve(repo, head), SortMode.TOPOLOGICAL | SortMode.REVERSE)
    if base is not None:
        walker.hide(_resolve(repo, base))
    return [
        Commit(str(commit.id), subject_of(commit.message), touched_paths(commit))
        for commit in walker
    ]


def stash_paths_of(stash: pygit2.Commit) -> tuple[str, ...]:
    """Paths a stash holds: its working-tree changes plus its untracked files."""
    paths = _diff_paths(stash.parents[0].tree, stash.tree) if stash.parents else set()
    if len(stash.parents) >= 3:
        paths |= _diff_paths(None, stash.parents[2].tree)
    return _sorted(paths)


@git_failures("cannot read the stash list")
def stash_list(repo: Repo) -> list[StashEntry]:
    """``git stash list``: newest first, ``stash@{0}`` … with message and paths."""
    repository = repo.repository
    return [
        StashEntry(
            f"stash@{{{number}}}",
            str(stash.commit_id),
            stash.message,
            stash_paths_of(repository[stash.commit_id].peel(pygit2.Commit)),
        )
        for number, stash in enumerate(repository.listall_stashes())
    ]


@git_failures("cannot read the kept work")
def kept_list(repo: Repo, prefix: str) -> list[StashEntry]:
    """The stash-like commits kept under the refs named ``<prefix>…`` (``stash.keep_paths``),
    by ref name, with each one's subject and paths."""
    repository = repo.repository
    found = []
    for name in sorted(name for name in repository.references if name.startswith(prefix)):
        commit = repository.references[name].peel(pygit2.Commit)
        found.append(StashEntry(name, str(commit.id), subject_of(commit.message),
                                stash_paths_of(commit)))
    return found
