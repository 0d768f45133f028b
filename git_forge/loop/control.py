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
from git_forge.layout import (
    ALIVE_SUFFIX,
    LOOP_LOCK_FILE,
    LOOP_RUN_FILE,
    PROC_DIR,
    tree_lock_file,
)
from git_forge.lockprobe import lock_is_held, read_lock_holder

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


#: In the tree lock's label, before the run's state dir (relative to the work tree,
#: its bytes in hex: any name fits on the one line).
STATE_DIR_MARK = " stateDirHex "


def tree_holder_label(holder: str, root: Path, state_dir: Path) -> str:
    """What the loop writes into the tree lock: ``holder`` and its state dir, which
    the label keeps after the loop is gone — so that the pre-launch check finds that
    run's agents without reading the configuration (``recorded_state_dir``)."""
    relative = os.path.relpath(os.path.realpath(state_dir), os.path.realpath(root))
    return holder + STATE_DIR_MARK + os.fsencode(relative).hex()


def recorded_state_dir(root: Path | str) -> str | None:
    """The state dir of the last loop that owned the work tree at ``root``, as its
    tree lock's label names it; ``None`` when no label names one."""
    path = tree_lock_file(root)
    label = read_lock_holder(path) if path is not None else ""
    _, mark, encoded = label.rpartition(STATE_DIR_MARK)
    try:
        relative = os.fsdecode(bytes.fromhex(encoded)) if mark else ""
    except ValueError:
        return None
    return os.path.join(root, relative) if relative else None


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


class OrphanedAgent(tuple[str, str | None, tuple[int, ...]]):
    """An orphaned agent tree: ``(handle, item_id, pids)`` — ``pids`` are the
    processes holding its liveness lock, as the kernel lists them (a tuple written
    out, as ``LiveLoop`` is)."""

    __slots__ = ()

    def __new__(cls, handle: str, item_id: str | None, pids: tuple[int, ...]) -> OrphanedAgent:
        return tuple.__new__(cls, (handle, item_id, pids))

    def __getnewargs__(self) -> tuple[str, str | None, tuple[int, ...]]:
        return (self[0], self[1], self[2])

    def __repr__(self) -> str:
        return f"OrphanedAgent(handle={self[0]!r}, item_id={self[1]!r}, pids={self[2]!r})"

    @property
    def handle(self) -> str:
        return self[0]

    @property
    def item_id(self) -> str | None:
        return self[1]

    @property
    def pids(self) -> tuple[int, ...]:
        return self[2]


def _any_tree_alive(proc_root: str) -> bool:
    """Whether some agent tree under ``proc_root`` holds its liveness lock — asked
    with ``lockprobe`` alone, so that the common answer (none) imports nothing."""
    try:
        names = os.listdir(proc_root)
    except OSError:
        return False
    return any(lock_is_held(os.path.join(proc_root, name))
               for name in names if name.endswith(ALIVE_SUFFIX))


def orphaned_agent(state_dir: Path | str, handle: str, item_id: str | None) -> OrphanedAgent:
    """The orphan ``handle`` with the processes that hold its liveness lock now."""
    from pathlib import Path

    from git_forge.supervisor.liveness import holders
    from git_forge.supervisor.paths import ProcPaths

    alive = ProcPaths(Path(state_dir) / PROC_DIR).alive(handle)
    return OrphanedAgent(handle, item_id, tuple(sorted(holders(alive))))


def orphaned_agents(state_dir: Path | str) -> list[OrphanedAgent]:
    """Agent trees of an earlier run still alive with no loop supervising them
    (their liveness locks are held; see ``supervisor.liveness``)."""
    if not _any_tree_alive(os.path.join(state_dir, PROC_DIR)):
        return []  # the common case, answered without importing the supervisor
    from contextlib import suppress
    from pathlib import Path

    from git_forge.supervisor.liveness import orphans
    from git_forge.supervisor.manifest import ManifestStore
    from git_forge.supervisor.paths import ProcPaths

    root = Path(state_dir) / PROC_DIR
    found = []
    for orphan in orphans(ProcPaths(root)):
        item_id = None
        with suppress(ForgeError):
            item_id = item_of(ManifestStore(root).load(orphan.handle))
        found.append(orphaned_agent(state_dir, orphan.handle, item_id))
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

    from git_forge.supervisor.view import ProcView

    view = ProcView(root)
    found = []
    for handle in view.store.scan():
        with contextlib.suppress(ForgeError):
            manifest = view.manifest(handle)
            if manifest.owner.run_id == run_id and manifest.state == "running":
                # The count proc list shows: a running agent's spool is ahead of
                # its manifest's last durable cursor (0 until it ends).
                found.append(LiveAgent(handle, item_of(manifest), manifest.started_at,
                                       view.total_bytes(manifest), manifest.command.cwd))
    return sorted(found, key=lambda agent: (agent.started_at or "", agent.handle))


def orphan_message(orphan: OrphanedAgent) -> str:
    pids = ", ".join(map(str, orphan.pids)) or "unknown"
    return (f"an agent of an earlier run is still running (item {orphan.item_id or 'unknown'}, "
            f"pid {pids}, handle {orphan.handle}); stop it with "
            f"git forge proc stop {orphan.handle}")


def orphan_blocker(state_dir: Path | str | None, root: Path | str) -> str | None:
    """Why no launch may start while an agent of an earlier run lives: it would be a
    second agent writing into the tree. Asked of ``state_dir`` and of the state dir
    the last loop in this work tree ran with (``recorded_state_dir``), which is all
    a caller that has not read the configuration (``state_dir`` ``None``) can ask."""
    recorded = recorded_state_dir(root)
    places = (os.path.realpath(d) for d in (state_dir, recorded) if d is not None)
    for directory in dict.fromkeys(places):
        orphans = orphaned_agents(directory)
        if orphans:
            return orphan_message(orphans[0])
    return None


def launch_blocker(state_dir: Path | None, root: Path | str) -> str | None:
    """Why no launch may start now, whatever the tree holds: a live loop owns the
    tree or the backlog, or an agent of an earlier run still lives. Cheap while
    neither is so (the pre-launch check's clean path asks it, with no ``state_dir``)."""
    live = tree_owner(root) or (live_loop(state_dir) if state_dir is not None else None)
    if live is not None:
        return running_message(live)
    return orphan_blocker(state_dir, root)
