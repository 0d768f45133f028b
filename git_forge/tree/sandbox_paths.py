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
process too, and so does the ``.git`` file that names a tree's git directory:
rewritten, it would send git-forge's own git to one the agent made.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from git_forge.tree.repo import Repo

#: In the main checkout's git directory: what its agent must not write — files…
_KEPT_FILES = ("config", "packed-refs")
#: … files that, made, would send git elsewhere for its configuration (and so its
#: hooks, filters and fsmonitor): kept read-only when they exist, removed when
#: the agent ends when they did not (a bind cannot keep a file from being made) …
_REDIRECTS = ("commondir", "config.worktree")
#: … and directories.
_KEPT_DIRS = ("hooks", "info", "worktrees", "modules", "refs/forge", "logs/refs/forge",
              "refs/tags",
              "refs/remotes", "objects/pack", "objects/info")
#: In the objects, what a commit never writes.
_PACKS = ("objects/pack", "objects/info")


@dataclass(frozen=True)
class TreeWrites:
    """What a process in one tree may write of the git directory, what inside that
    it may not, and what it must not leave there (``Sandbox.absent``)."""

    writable: tuple[Path, ...]
    read_only: tuple[Path, ...]
    absent: tuple[Path, ...] = ()


def tree_writes(repo: Repo, tree: Path) -> TreeWrites:
    """For a process working in ``tree``: ``repo``'s main checkout, or one of its
    linked worktrees (on a branch, or detached)."""
    common = repo.common_dir
    gitfile = tree / ".git"
    if tree.resolve() == repo.workdir.resolve():
        own = repo.gitdir
        for name in _KEPT_DIRS:
            (own / name).mkdir(parents=True, exist_ok=True)
        packed = own / "packed-refs"
        if not packed.exists():  # empty, it is what git reads when there is none
            packed.touch()
        absent = tuple(own / name for name in _REDIRECTS if not (own / name).exists())
        kept = (*_KEPT_FILES, *_KEPT_DIRS, *_REDIRECTS)
        found = (gitfile,) if gitfile.is_file() else ()  # a ``gitdir:`` file names the git dir
        return TreeWrites((own,), (*found, *(own / name for name in kept)), absent)
    linked = repo.worktree(tree)
    admin = linked.gitdir
    if not (admin / "config.worktree").exists():  # read-only below, so made first
        (admin / "config.worktree").touch()
    writable = [admin, common / "objects"]
    branch = linked.branch_name
    if branch is not None and not linked.is_detached:
        folder = Path("refs/heads", branch).parent
        writable += [common / folder, common / "logs" / folder]
    read_only = (gitfile, *(common / name for name in _PACKS),
                 *(admin / name for name in ("commondir", "gitdir", "config.worktree")))
    return TreeWrites(tuple(writable), read_only)
