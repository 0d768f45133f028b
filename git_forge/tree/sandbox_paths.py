"""What of a repository's git directory a sandboxed process working in one of its
trees must be able to write to commit there — and what inside that stays
read-only, because a process outside the sandbox would act on it.

A linked worktree's commit writes the objects, its own administrative directory
(``worktrees/<name>``: index, HEAD, its reflog) and its branch's ref and reflog.
A branch's ref file is replaced through a lock file beside it, so what is writable
is the directory of its ref (for ``forge/001``: ``refs/heads/forge``, which the
other items' branches share) — never the main checkout, the configuration, the
hooks, or the other worktrees.

The main checkout's own git directory is written where its index and HEAD are:
the directory itself. Inside it stay read-only what git and git-forge would run
or trust afterwards, outside the sandbox: ``config`` and ``config.worktree``
(a ``core.fsmonitor`` or a filter runs a program), ``hooks``, ``info`` (an
exclude rule hides a path from the commit), the refs under ``refs/forge`` where
git-forge keeps set-aside work, and the linked worktrees' directories — and
what a commit never writes and a careless agent could destroy: the packs
(``objects/pack``, ``objects/info``: a commit writes loose objects), the tags,
the remote-tracking branches and ``packed-refs`` (so a branch that only it
holds cannot be deleted). Those of them that are directories are made, empty,
where they are missing: a directory that is not there could be made inside the
sandbox, with a hook in it. The packs stay read-only for a linked worktree's
process too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from git_forge.tree.repo import Repo

#: In the main checkout's git directory: what its agent must not write — files…
_KEPT_FILES = ("config", "config.worktree", "packed-refs")
#: … and directories.
_KEPT_DIRS = ("hooks", "info", "worktrees", "refs/forge", "logs/refs/forge", "refs/tags",
              "refs/remotes", "objects/pack", "objects/info")
#: In the objects, what a commit never writes.
_PACKS = ("objects/pack", "objects/info")


@dataclass(frozen=True)
class TreeWrites:
    """What a process in one tree may write of the git directory, and what inside
    that it may not."""

    writable: tuple[Path, ...]
    read_only: tuple[Path, ...]


def tree_writes(repo: Repo, tree: Path) -> TreeWrites:
    """For a process working in ``tree``: ``repo``'s main checkout, or one of its
    linked worktrees (on a branch, or detached)."""
    common = repo.common_dir
    if tree.resolve() == repo.workdir.resolve():
        own = repo.gitdir
        for name in _KEPT_DIRS:
            (own / name).mkdir(parents=True, exist_ok=True)
        return TreeWrites((own,), tuple(own / name for name in (*_KEPT_FILES, *_KEPT_DIRS)))
    linked = repo.worktree(tree)
    writable = [linked.gitdir, common / "objects"]
    branch = linked.branch_name
    if branch is not None and not linked.is_detached:
        folder = Path("refs/heads", branch).parent
        writable += [common / folder, common / "logs" / folder]
    return TreeWrites(tuple(writable), tuple(common / name for name in _PACKS))
