"""The live loop, seen from outside it: is one running, asking it to stop, orphans.

Liveness is the loop lock (``{stateDir}/loop.lock``, held for the life of a
run), never a PID: a loop killed by any means releases it with its process.
The holder label the loop writes into the lock (``run <runId> started
<startedAt> (pid N)``) names the run in every refusal.

The loop writes ``{stateDir}/loop.run`` when it starts; ``git forge loop stop``
removes it, and the running loop, which looks at least once a second, then
runs the supervisor's graceful shutdown. A removal needs no disk space: a stop
works on a full disk.

While a loop runs, the tree belongs to it: commands that change the tree
(``recover``, ``reconcile``'s actions, a second ``loop run``) refuse through
``refuse_if_live``; commands that only change the backlog go through its lock.
"""

from __future__ import annotations

import os

from git_forge.errors import ForgeError
from git_forge.layout import LOOP_LOCK_FILE, LOOP_RUN_FILE, PROC_DIR, tree_lock_file
from git_forge.lockprobe import lock_is_held, read_lock_holder

# The pre-launch check's clean path asks ``tree_owner``: ``pathlib``, ``typing``,
# ``re`` and ``contextlib`` (~25 ms together) are imported where they are used.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

#: What ``holder_label`` writes, as ``_holding`` reads it back.
HOLDER_PATTERN = r"^run (\S+) started (\S+)"


class LoopRunning(ForgeError):
    """A loop holds the tree: the command would strand or mis-commit its work."""


class LiveLoop(tuple[str | None, str | None]):
    """The run holding a loop lock: ``(run_id, started_at)``, either ``None`` when
    the label is not the loop's. A tuple of two written out rather than a
    ``NamedTuple`` or a namedtuple: neither ``typing`` nor ``collections`` is
    imported on the clean path."""

    __slots__ = ()

    def __new__(cls, run_id: str | None, started_at: str | None) -> LiveLoop:
        return tuple.__new__(cls, (run_id, started_at))

    def __getnewargs__(self) -> tuple[str | None, str | None]:
        return (self[0], self[1])

    def __repr__(self) -> str:
        return f"LiveLoop(run_id={self[0]!r}, started_at={self[1]!r})"

    @property
    def run_id(self) -> str | None:
        return self[0]

    @property
    def started_at(self) -> str | None:
        return self[1]

    @property
    def described(self) -> str:
        return f"run {self.run_id or 'unknown'}, started {self.started_at or 'unknown'}"


def loop_lock_path(state_dir: Path) -> Path:
    from pathlib import Path

    return Path(state_dir) / LOOP_LOCK_FILE


def run_token_path(state_dir: Path) -> Path:
    from pathlib import Path

    return Path(state_dir) / LOOP_RUN_FILE


def holder_label(run_id: str, started_at: str, pid: int) -> str:
    """What the loop writes into its lock; ``live_loop`` reads it back."""
    return f"run {run_id} started {started_at} (pid {pid})"


def _holding(path: Path | str | None) -> LiveLoop | None:
    if path is None or not lock_is_held(path):
        return None
    import re

    match = re.match(HOLDER_PATTERN, read_lock_holder(path))
    return LiveLoop(match.group(1), match.group(2)) if match else LiveLoop(None, None)


def live_loop(state_dir: Path) -> LiveLoop | None:
    """The loop holding this backlog's loop lock right now, or ``None``."""
    return _holding(loop_lock_path(state_dir))


def tree_owner(root: Path | str) -> LiveLoop | None:
    """The loop that owns the work tree at ``root`` right now (it holds the tree lock
    in the git dir, whichever backlog it runs), or ``None``. Needs no configuration,
    so the pre-launch check's clean path can ask it."""
    return _holding(tree_lock_file(root))


def loop_is_running(state_dir: Path) -> bool:
    return lock_is_held(loop_lock_path(state_dir))


def running_message(live: LiveLoop) -> str:
    return (f"a loop is running on this backlog ({live.described}); stop it with "
            "git forge loop stop, or wait for it to end")


def refuse_if_live(state_dir: Path, root: Path) -> None:
    """Refuse (exit 2) a command that would change the tree under a live loop: one
    running on this backlog, or any loop that owns this work tree."""
    live = live_loop(state_dir) or tree_owner(root)
    if live is not None:
        raise LoopRunning(running_message(live))


def live_note(state_dir: Path) -> str | None:
    """The line read-only commands print while a loop runs, or ``None``."""
    live = live_loop(state_dir)
    if live is None:
        return None
    return f"a loop is running on this backlog ({live.described}); what follows may change"


def in_progress_refusal(state_dir: Path) -> str | None:
    """While a loop runs, the message that refuses changing the item it works on
    (``{id}`` is filled in under the backlog's lock); ``None`` when none runs."""
    live = live_loop(state_dir)
    if live is None:
        return None
    return ("item {id} is being worked on by the running loop (" + live.described
            + "); wait for it to finish, or stop the loop with git forge loop stop")


def request_stop(state_dir: Path) -> bool:
    """Ask the running loop to stop; ``False`` when none runs."""
    if not loop_is_running(state_dir):
        return False
    try:
        run_token_path(state_dir).unlink()
    except FileNotFoundError:  # already asked
        pass
    return True


def stop_requested(state_dir: Path) -> bool:
    return not run_token_path(state_dir).exists()


def arm_stop_token(state_dir: Path, run_id: str) -> None:
    """At the start of a run (under the loop lock): the token a stop removes."""
    from git_forge.atomic import atomic_write

    atomic_write(run_token_path(state_dir), f"run {run_id}\n".encode())


def disarm_stop_token(state_dir: Path) -> None:
    try:
        run_token_path(state_dir).unlink()
    except FileNotFoundError:
        pass


def item_of(manifest: Any) -> str | None:
    """The backlog item a supervised process was started for: the loop puts it in
    the manifest's origin labels (``item_id``); the supervisor never reads them."""
    item_id = manifest.origin.get("item_id")
    return item_id if isinstance(item_id, str) else None


class OrphanedAgent(tuple[str, str | None]):
    """An orphaned agent tree: ``(handle, item_id)`` (a tuple written out, as
    ``LiveLoop`` is)."""

    __slots__ = ()

    def __new__(cls, handle: str, item_id: str | None) -> OrphanedAgent:
        return tuple.__new__(cls, (handle, item_id))

    def __getnewargs__(self) -> tuple[str, str | None]:
        return (self[0], self[1])

    def __repr__(self) -> str:
        return f"OrphanedAgent(handle={self[0]!r}, item_id={self[1]!r})"

    @property
    def handle(self) -> str:
        return self[0]

    @property
    def item_id(self) -> str | None:
        return self[1]


def orphaned_agents(state_dir: Path) -> list[OrphanedAgent]:
    """Agent trees of an earlier run still alive with no loop supervising them
    (their liveness locks are held; see ``supervisor.liveness``)."""
    from pathlib import Path

    from git_forge.layout import ALIVE_SUFFIX

    root = Path(state_dir) / PROC_DIR
    try:
        if not any(name.endswith(ALIVE_SUFFIX) for name in os.listdir(root)):
            return []  # the common case, answered without importing the supervisor
    except OSError:
        return []
    from contextlib import suppress

    from git_forge.supervisor.liveness import orphans
    from git_forge.supervisor.manifest import ManifestStore
    from git_forge.supervisor.paths import ProcPaths

    found = []
    for orphan in orphans(ProcPaths(root)):
        item_id = None
        with suppress(ForgeError):
            item_id = item_of(ManifestStore(root).load(orphan.handle))
        found.append(OrphanedAgent(orphan.handle, item_id))
    return found


class LiveAgent(tuple[str, str | None, str | None, int, str]):
    """An agent the running loop supervises, as its manifest says: ``(handle,
    item_id, started_at, output_bytes, cwd)`` (a tuple written out, as ``LiveLoop``
    is)."""

    __slots__ = ()

    def __new__(cls, handle: str, item_id: str | None, started_at: str | None,
                output_bytes: int, cwd: str) -> LiveAgent:
        return tuple.__new__(cls, (handle, item_id, started_at, output_bytes, cwd))

    def __getnewargs__(self) -> tuple[str, str | None, str | None, int, str]:
        return (self[0], self[1], self[2], self[3], self[4])

    def __repr__(self) -> str:
        return (f"LiveAgent(handle={self[0]!r}, item_id={self[1]!r}, "
                f"started_at={self[2]!r}, output_bytes={self[3]!r}, cwd={self[4]!r})")

    @property
    def handle(self) -> str:
        return self[0]

    @property
    def item_id(self) -> str | None:
        return self[1]

    @property
    def started_at(self) -> str | None:
        return self[2]

    @property
    def output_bytes(self) -> int:
        return self[3]

    @property
    def cwd(self) -> str:
        return self[4]


def live_agents(state_dir: Path, run_id: str | None) -> list[LiveAgent]:
    """The agents of run ``run_id`` whose manifests say they run (``status`` shows one
    line each; a parallel run has several)."""
    from pathlib import Path

    root = Path(state_dir) / PROC_DIR
    if run_id is None or not root.is_dir():
        return []
    import contextlib

    from git_forge.supervisor.manifest import ManifestStore

    store = ManifestStore(root)
    found = []
    for handle in store.scan():
        with contextlib.suppress(ForgeError):
            manifest = store.load(handle)
            if manifest.owner.run_id == run_id and manifest.state == "running":
                found.append(LiveAgent(handle, item_of(manifest), manifest.started_at,
                                       manifest.cursors.total_bytes, manifest.command.cwd))
    return sorted(found, key=lambda agent: (agent.started_at or "", agent.handle))


def orphan_message(orphan: OrphanedAgent) -> str:
    return (f"an agent of an earlier run is still running (handle {orphan.handle}, item "
            f"{orphan.item_id or 'unknown'}); stop it with git forge proc stop {orphan.handle}")


def launch_blocker(state_dir: Path, root: Path) -> str | None:
    """Why no launch may start now, whatever the tree holds: a live loop owns the
    backlog or the tree, or an agent of an earlier run still lives."""
    live = tree_owner(root) or live_loop(state_dir)
    if live is not None:
        return running_message(live)
    orphans = orphaned_agents(state_dir)
    return orphan_message(orphans[0]) if orphans else None
