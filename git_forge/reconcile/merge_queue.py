"""The merge queue: done items' commits onto the loop's branch, in the order the items
finished — one at a time, or those that finished meanwhile together
(``integrate_items``: each replayed onto the one before it, one fast-forward).

Each item's branch (``forge/<id>``) is integrated by ``tree.worktrees.integrate_all``:
its commits replayed onto the branch's current tip, the branch fast-forwarded —
nothing is ever merged with conflict markers, and the checkout the operator has
is only ever moved by fast-forward. The outcome is typed:

* ``Integrated`` — the item's work is on the branch (``commits``; none when it
  was already there); its worktree and branch are removed when nothing in them
  can be lost, else kept and the reason said.
* ``Conflicted`` — the branch is untouched, the item's branch and worktree are
  kept; the conflicting paths and the items whose commits (since the item's
  branch forked) touched them are named, for the item's ``needsHuman`` reason.
* ``Refused`` — git refused before anything changed (a local change in the
  way, merge commits on the item's branch, no such branch); the reason is git's.

It lives beside the launch blocker because both the loop (which integrates as
items finish) and ``git forge reconcile --integrate`` (by hand) run it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from git_forge.layout import item_worktree
from git_forge.reconcile.messages import item_branch, item_of_subject
from git_forge.tree.errors import GitError
from git_forge.tree.history import log_subjects
from git_forge.tree.worktrees import (
    Integration,
    delete_branch,
    integrate_all,
    remove_worktree,
    worktree_at,
    worktrees,
)


@dataclass(frozen=True)
class Integrated:
    """The item's commits are on the branch; ``kept`` says why its worktree or
    branch stayed (``None``: both removed)."""

    item_id: str
    commits: tuple[str, ...]
    tip: str
    kept: str | None = None


@dataclass(frozen=True)
class Collision:
    """A commit on the branch, since the item's branch forked, touching a conflicting path."""

    commit: str
    subject: str
    item_id: str | None
    paths: tuple[str, ...]


@dataclass(frozen=True)
class Conflicted:
    """The item's commit conflicts with the branch's tip; nothing changed."""

    item_id: str
    commit: str
    paths: tuple[str, ...]
    collisions: tuple[Collision, ...] = ()

    @property
    def collided_with(self) -> tuple[str, ...]:
        """The items whose commits touched the conflicting paths, in history order."""
        seen: dict[str, None] = {}
        for collision in self.collisions:
            if collision.item_id is not None:
                seen.setdefault(collision.item_id)
        return tuple(seen)

    @property
    def reason(self) -> str:
        """The item's ``needsHuman`` reason: the paths and whose work they collide with."""
        paths = ", ".join(self.paths)
        items = self.collided_with
        others = [c for c in self.collisions if c.item_id is None]
        whom = []
        if items:
            whom.append(("item " if len(items) == 1 else "items ") + ", ".join(items))
        whom += [f"commit {c.commit[:12]} ({c.subject})" for c in others]
        with_whom = f" with {' and '.join(whom)}" if whom else ""
        return (f"merge conflict in {paths}{with_whom}: its work is kept on branch "
                f"{item_branch(self.item_id)}")


@dataclass(frozen=True)
class Unverified:
    """The item's commits, replayed onto a tip that moved since its checks passed,
    failed them there (``loop.verifyOnIntegrate``); nothing changed."""

    item_id: str
    #: The last of its replayed commits (held by no branch).
    commit: str
    reason: str


@dataclass(frozen=True)
class Refused:
    """git refused to integrate; nothing changed."""

    item_id: str
    reason: str


Outcome = Integrated | Conflicted | Unverified | Refused


def _collisions(root: Path, fork: str, tip: str, paths: Iterable[str]) -> tuple[Collision, ...]:
    """The commits of ``fork..tip`` that touched any of ``paths``, oldest first."""
    wanted = set(paths)
    found = []
    for commit in log_subjects(root, fork, tip):
        touched = tuple(path for path in commit.paths if path in wanted)
        if touched:
            found.append(Collision(commit.id, commit.subject, item_of_subject(commit.subject),
                                   touched))
    return tuple(found)


def tidy(root: Path, state_dir: Path, item_id: str, onto: str) -> str | None:
    """Remove the item's worktree and branch, as far as nothing can be lost; the
    reason when something stays."""
    trees = worktrees(root)
    tree = worktree_at(root, item_worktree(state_dir, item_id), trees)
    try:
        if tree is not None:
            remove_worktree(root, tree.path, onto, trees)
        delete_branch(root, item_branch(item_id), onto, [t for t in trees if t is not tree])
    except GitError as exc:
        return exc.message
    return None


def integrate_item(root: Path, state_dir: Path, item_id: str, onto: str) -> Outcome:
    """Integrate item ``item_id``'s branch onto ``onto`` (checked out at ``root``, or
    not checked out at all), then tidy its worktree and branch away."""
    return integrate_items(root, state_dir, [item_id], onto)[0]


def integrate_items(root: Path, state_dir: Path, item_ids: Sequence[str],
                    onto: str, check: Callable[[str, str], str | None] | None = None
                    ) -> list[Outcome]:
    """``integrate_item`` for several items, in order, as one integration
    (``tree.worktrees.integrate_all``: one fast-forward of ``onto`` for them all);
    an outcome each. ``check(item_id, commit)``: why an item's commits replayed onto
    a tip that moved since it forked may not land (``Unverified``), or ``None``."""
    branches = [item_branch(item_id) for item_id in item_ids]
    named = ", ".join(item_ids)
    reflog = f"forge: item{'s' if len(item_ids) > 1 else ''} {named}"
    try:
        done = integrate_all(
            root, branches, onto, reflog=reflog, tidy=True,
            check=None if check is None else
            lambda branch, commit: check(item_ids[branches.index(branch)], commit))
    except GitError as exc:
        return [Refused(item_id, exc.message) for item_id in item_ids]
    return [_outcome(root, state_dir, item_id, onto, each)
            for item_id, each in zip(item_ids, done, strict=True)]


def _outcome(root: Path, state_dir: Path, item_id: str, onto: str,
             done: Integration | GitError) -> Outcome:
    if isinstance(done, GitError):
        return Refused(item_id, done.message)
    if done.outcome == "conflict":
        assert done.conflict_commit is not None
        try:
            collisions = _collisions(root, done.fork_point, done.tip, done.conflict_paths)
        except GitError:
            collisions = ()
        return Conflicted(item_id, done.conflict_commit, done.conflict_paths, collisions)
    if done.outcome == "unverified":
        assert done.conflict_commit is not None and done.failed_check is not None
        return Unverified(item_id, done.conflict_commit, done.failed_check)
    if done.outcome == "integrated":
        return Integrated(item_id, done.commits, done.new_tip, done.kept)
    return Integrated(item_id, (), done.tip, tidy(root, state_dir, item_id, onto))


class MergeQueue:
    """Done items waiting to be integrated, oldest first; one integrates at a time."""

    def __init__(self, root: Path, state_dir: Path, onto: str) -> None:
        self.root, self.state_dir, self.onto = root, state_dir, onto
        self._waiting: deque[str] = deque()

    def push(self, item_id: str) -> None:
        """Queue an item as it finishes (its commit made in its worktree)."""
        self._waiting.append(item_id)

    @property
    def waiting(self) -> tuple[str, ...]:
        return tuple(self._waiting)

    def next(self) -> Outcome | None:
        """Integrate the item that finished first; ``None`` when none waits."""
        if not self._waiting:
            return None
        return integrate_item(self.root, self.state_dir, self._waiting.popleft(), self.onto)

    def drain(self) -> list[Outcome]:
        """Integrate every waiting item, in order."""
        outcomes = []
        while (outcome := self.next()) is not None:
            outcomes.append(outcome)
        return outcomes
