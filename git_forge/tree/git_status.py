"""The one status source: what ``git status --porcelain -uall --no-renames`` lists.

Every consumer — the pre-launch check, reconcile, recover, the loop, and the
re-checks after a commit, stash or discard — sees the same entries, because
they all come from git itself (``fast_status``; this module only points it at
an opened ``Repo``). libgit2's own status was dropped: it disagreed with git on
exactly the trees real projects have — an untracked nested repository holding
only ``.git`` (not listed), sparse checkouts (every out-of-cone file ` D`),
clean/smudge filters (a touched but unchanged file ` M`), and ignore rules
from ``GIT_CONFIG_GLOBAL``, ``GIT_CONFIG_COUNT`` or ``git -c
core.excludesFile`` (not honoured: the file was listed, then committed).
pygit2 is kept for what needs index-level detail (``worktree``).
"""

from __future__ import annotations

from git_forge.tree.fast_status import STATUS_ARGS
from git_forge.tree.porcelain import StatusEntry, parse_status_z, render_porcelain_line
from git_forge.tree.repo import Repo

__all__ = ["ListingMeanwhile", "StatusEntry", "dirty_paths", "porcelain",
           "render_porcelain_line"]


def porcelain(repo: Repo) -> list[StatusEntry]:
    """What ``git status --porcelain -uall --no-renames`` lists for ``repo``, in git's order.

    Untracked files one by one (a nested repository as ``dir/``), ignored files
    never, skip-worktree entries never, a submodule as one entry. A git
    failure is a ``GitError`` carrying git's message verbatim.

    A git that died of a signal is asked once more: a Ctrl-C at the terminal
    reaches every process of its group, a listing git was making for the stop it
    asked for too, and reading the tree again changes nothing.
    """
    started = repo.start_git(list(STATUS_ARGS))
    finished = started.wait()
    if finished.returncode < 0:
        return parse_status_z(repo.run_git(list(STATUS_ARGS)))[1]
    return parse_status_z(started.result())[1]


class ListingMeanwhile:
    """``porcelain(repo)`` started now, read by ``entries()`` (a ``with`` block):
    git lists the tree on the other core while the caller does work whose effect
    on the listing it accounts for itself (the loop's commit step makes its
    backlog mark durable meanwhile, and commits backlog.json whatever git saw).

    Like every git read here it leaves the index alone (optional locks off,
    ``gitcli.GIT``): in a parallel run the loop's own commits and fast-forwards
    need the lock meanwhile. The price: a file rewritten unchanged (``sed -i``
    over the tree) is hashed again by each listing until something writes the
    index (20,000 such files: ~0.2 s a listing instead of ~0.06 s)."""

    def __init__(self, repo: Repo) -> None:
        self._started = repo.start_git(list(STATUS_ARGS))

    def entries(self) -> list[StatusEntry]:
        return parse_status_z(self._started.result())[1]

    def __enter__(self) -> ListingMeanwhile:
        return self

    def close(self) -> None:
        """Wait for git to exit, if it has not."""
        self._started.wait()

    def __exit__(self, *exc: object) -> None:
        self.close()


def dirty_paths(repo: Repo) -> set[str]:
    """The set of paths ``porcelain`` lists (for re-verifying after an action)."""
    return {entry.path for entry in porcelain(repo)}
