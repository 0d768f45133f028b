"""The next item's worktree, made while the running agents work.

In a parallel run a freed slot used to wait for ``git worktree add`` (tens of
milliseconds, far more on a busy machine) before its agent could start. The loop
names the item it would start next (``prepare``); this thread creates that
item's worktree at the tip the loop knows then, and the start takes it
(``take``), with the tip it was made at and the item's dependencies as they were
then: the start checks both, and moves a worktree whose tip or dependencies
changed meanwhile to the tip (a dependency added during the run, a user's commit
or another item integrated), so that an agent always starts on its
dependencies' work.

Only a plain creation happens here. Anything else — the item's path or branch
left by a run before, a failure — is the loop's usual path at the start, which
clears or blocks as it does for any item. A worktree prepared and never used
is clean, on a branch the loop's branch contains: the loop removes it at the
end of the run (``tidy``), and after a crash it is reused by the item's next start.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from pathlib import Path

from git_forge.tree.errors import GitError
from git_forge.tree.worktrees import add_worktree

#: How long a start waits for a creation already under way before making its own.
TAKE_SECONDS = 30.0


@dataclass(frozen=True)
class Prepared:
    """A worktree made for ``item_id`` at ``tip``, when it depended on ``depends_on``."""

    item_id: str
    path: Path
    tip: str
    depends_on: tuple[str, ...] = ()


class WorktreePreparer:
    """One thread creating, one at a time, the worktrees the loop asks for."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._jobs: queue.Queue[tuple[str, Path, str, str, tuple[str, ...]] | None] = (
            queue.Queue())
        self._lock = threading.Condition()
        self._asked: set[str] = set()
        self._made: dict[str, Prepared | None] = {}
        self._thread = threading.Thread(target=self._work, name="forge-prepare", daemon=True)
        self._thread.start()

    def prepare(self, item_id: str, path: Path, branch: str, tip: str,
                depends_on: tuple[str, ...] = ()) -> None:
        """Create ``path`` on ``branch`` at ``tip`` for ``item_id`` (once per item),
        which depends on ``depends_on`` now."""
        with self._lock:
            if item_id in self._asked:
                return
            self._asked.add(item_id)
        self._jobs.put((item_id, path, branch, tip, depends_on))

    def asked(self, item_id: str) -> bool:
        with self._lock:
            return item_id in self._asked

    def take(self, item_id: str) -> Prepared | None:
        """The worktree made for ``item_id`` (waiting for one under way); None when
        none was asked for or it could not be made — the caller makes its own."""
        with self._lock:
            if item_id not in self._asked:
                return None
            self._lock.wait_for(lambda: item_id in self._made, TAKE_SECONDS)
            self._asked.discard(item_id)
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
        while (job := self._jobs.get()) is not None:
            item_id, path, branch, tip, depends_on = job
            made: Prepared | None = None
            if not path.exists():
                try:
                    add_worktree(self.root, path, branch, tip)
                    made = Prepared(item_id, path, tip, depends_on)
                except (GitError, OSError):  # the start's own path clears or blocks
                    made = None
            with self._lock:
                self._made[item_id] = made
                self._lock.notify_all()
