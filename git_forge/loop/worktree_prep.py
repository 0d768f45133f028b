"""The next items' worktrees, made while the running agents work.

In a parallel run a freed slot used to wait for ``git worktree add`` before its
agent could start. The loop
names the items it would start next (``prepare``); this thread creates each
item's worktree at the tip the loop knows then, and the start takes it
(``take``), with the tip it was made at and the item's dependencies as they were
then: the start checks both, and moves a worktree whose tip or dependencies
changed meanwhile to the tip (a dependency added during the run, a user's commit
or another item integrated), so that an agent always starts on its
dependencies' work.

Asked again for an item whose worktree is made, at another tip — the loop does so
as agents end, for the items about to take their slots — this thread moves it
there (``git checkout -B``, as the start would), while the loop records the ends:
the start then finds it at the tip. A move asked for an item already taken is not
made; a start waits for one under way.

Only a plain creation or move happens here. Anything else — the item's path or
branch left by a run before, a failure — is the loop's usual path at the start,
which clears or blocks as it does for any item. A worktree prepared and never
used is clean, on a branch the loop's branch contains: the loop removes it at the
end of the run (``tidy``), and after a crash it is reused by the item's next start.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from pathlib import Path

from git_forge.tree.errors import GitError
from git_forge.tree.repo import Repo, open_repo
from git_forge.tree.worktrees import add_worktree, move_to

#: How long a start waits for a creation already under way before making its own.
TAKE_SECONDS = 30.0


@dataclass(frozen=True)
class Prepared:
    """A worktree made for ``item_id`` at ``tip``, when it depended on ``depends_on``."""

    item_id: str
    path: Path
    tip: str
    depends_on: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Request:
    """Where the loop last asked an item's worktree to be, and the item's
    dependencies then."""

    path: Path
    branch: str
    tip: str
    depends_on: tuple[str, ...]


class WorktreePreparer:
    """One thread creating, one at a time, the worktrees the loop asks for, and
    moving them to the tip it names later."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._jobs: queue.Queue[str | None] = queue.Queue()
        self._lock = threading.Condition()
        #: The last request for each item asked for and not taken yet.
        self._asked: dict[str, _Request] = {}
        #: Items being taken, waiting for their creation: its request.
        self._taking: dict[str, _Request] = {}
        self._made: dict[str, Prepared | None] = {}
        #: The item whose worktree is being made or moved now.
        self._busy: str | None = None
        self._repo: Repo | None = None
        self._thread = threading.Thread(target=self._work, name="forge-prepare", daemon=True)
        self._thread.start()

    def prepare(self, item_id: str, path: Path, branch: str, tip: str,
                depends_on: tuple[str, ...] = ()) -> None:
        """Have ``path`` on ``branch`` at ``tip`` for ``item_id``, which depends on
        ``depends_on`` now: created the first time, moved there when it was made at
        another tip (asked again at the tip last asked: nothing more to do)."""
        with self._lock:
            last = self._asked.get(item_id)
            if last is not None and last.tip == tip:
                return
            self._asked[item_id] = _Request(path, branch, tip, depends_on)
        self._jobs.put(item_id)

    def asked(self, item_id: str) -> bool:
        with self._lock:
            return item_id in self._asked

    def take(self, item_id: str) -> Prepared | None:
        """The worktree made for ``item_id`` (waiting for its creation, or a move under
        way); None when none was asked for or it could not be made — the caller
        makes its own. A move asked for and not begun is not made."""
        with self._lock:
            request = self._asked.pop(item_id, None)
            if request is None:
                return None
            self._taking[item_id] = request
            try:
                self._lock.wait_for(lambda: item_id in self._made and self._busy != item_id,
                                    TAKE_SECONDS)
            finally:
                del self._taking[item_id]
            return self._made.pop(item_id, None)

    def close(self) -> list[Prepared]:
        """End the thread once its jobs are done; the worktrees made and never taken."""
        self._jobs.put(None)
        self._thread.join(TAKE_SECONDS)
        with self._lock:
            left = [made for made in self._made.values() if made is not None]
            self._made.clear()
            self._asked.clear()
        return left

    def _work(self) -> None:
        while (item_id := self._jobs.get()) is not None:
            with self._lock:
                first = item_id not in self._made
                before = self._made.get(item_id)
                request = self._asked.get(item_id) or (self._taking.get(item_id) if first
                                                       else None)
                if request is None or (before is not None and before.tip == request.tip):
                    continue  # taken (its start has it), or at that tip already
                self._busy = item_id
            made = (self._make(item_id, request) if first else
                    self._move(item_id, request, before))
            with self._lock:
                self._made[item_id] = made
                self._busy = None
                self._lock.notify_all()

    def _make(self, item_id: str, request: _Request) -> Prepared | None:
        if request.path.exists():
            return None  # the start's own path clears or blocks
        try:
            add_worktree(self.root, request.path, request.branch, request.tip)
        except (GitError, OSError):
            return None
        return Prepared(item_id, request.path, request.tip, request.depends_on)

    def _move(self, item_id: str, request: _Request, made: Prepared | None) -> Prepared | None:
        """``made`` moved to the requested tip; as it was when it cannot be moved as
        the start would move it (its commit not on the way to the tip, a local change
        in the way): the start then says why."""
        if made is None:
            return None
        try:
            if self._repo is None:  # the thread's own: a pygit2 handle is not shared
                self._repo = open_repo(self.root)
            if not self._repo.is_ancestor(made.tip, request.tip):
                return made
            move_to(self.root, request.path, request.branch, request.tip)
        except GitError:
            return made
        return Prepared(item_id, request.path, request.tip, request.depends_on)
