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

import contextlib
import os
import re
from typing import Any, NamedTuple

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

#: What a directory or file is named by here: the callers' ``Path``, or a ``str`` where
#: the pre-launch check asks (``pathlib`` is not imported on its path).
StrPath = str | os.PathLike[str]

#: What ``holder_label`` writes, as ``_holding`` reads it back.
HOLDER_PATTERN = r"^run (\S+) started (\S+)"


class LoopRunning(ForgeError):
    """A loop holds the tree: the command would strand or mis-commit its work."""


class LiveLoop(NamedTuple):
    """The run holding a loop lock; either field ``None`` when the label is not the
    loop's."""

    run_id: str | None
    started_at: str | None

    @property
    def described(self) -> str:
        return f"run {self.run_id or 'unknown'}, started {self.started_at or 'unknown'}"


def loop_lock_path(state_dir: StrPath) -> "Path":
    from pathlib import Path  # common-case boundary: the clean pre-launch check

    return Path(state_dir) / LOOP_LOCK_FILE


def run_token_path(state_dir: StrPath) -> "Path":
    from pathlib import Path  # common-case boundary: the clean pre-launch check

    return Path(state_dir) / LOOP_RUN_FILE


def holder_label(run_id: str, started_at: str, pid: int) -> str:
    """What the loop writes into its lock; ``live_loop`` reads it back."""
    return f"run {run_id} started {started_at} (pid {pid})"


#: In the tree lock's label, before the run's state dir (relative to the work tree,
#: its bytes in hex: any name fits on the one line).
STATE_DIR_MARK = " stateDirHex "


def tree_holder_label(holder: str, root: StrPath, state_dir: StrPath) -> str:
    """What the loop writes into the tree lock: ``holder`` and its state dir, which
    the label keeps after the loop is gone — so that the pre-launch check finds that
    run's agents without reading the configuration (``recorded_state_dir``)."""
    relative = os.path.relpath(os.path.realpath(state_dir), os.path.realpath(root))
    return holder + STATE_DIR_MARK + os.fsencode(relative).hex()


def recorded_state_dir(root: StrPath) -> str | None:
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


def _holding(path: StrPath | None) -> LiveLoop | None:
    if path is None or not lock_is_held(path):
        return None

    match = re.match(HOLDER_PATTERN, read_lock_holder(path))
    return LiveLoop(match.group(1), match.group(2)) if match else LiveLoop(None, None)


def live_loop(state_dir: StrPath) -> LiveLoop | None:
    """The loop holding this backlog's loop lock right now, or ``None``."""
    return _holding(loop_lock_path(state_dir))


def tree_owner(root: StrPath) -> LiveLoop | None:
    """The loop that owns the work tree at ``root`` right now (it holds the tree lock
    in the git dir, whichever backlog it runs), or ``None``. Needs no configuration,
    so the pre-launch check's clean path can ask it."""
    return _holding(tree_lock_file(root))


def loop_is_running(state_dir: StrPath) -> bool:
    return lock_is_held(loop_lock_path(state_dir))


def running_message(live: LiveLoop) -> str:
    return (f"a loop is running on this backlog ({live.described}); stop it with "
            "git forge loop stop, or wait for it to end")


def refuse_if_live(state_dir: StrPath, root: StrPath) -> None:
    """Refuse (exit 2) a command that would change the tree under a live loop: one
    running on this backlog, or any loop that owns this work tree."""
    live = live_loop(state_dir) or tree_owner(root)
    if live is not None:
        raise LoopRunning(running_message(live))


def live_note(state_dir: StrPath) -> str | None:
    """The line read-only commands print while a loop runs, or ``None``."""
    live = live_loop(state_dir)
    if live is None:
        return None
    return f"a loop is running on this backlog ({live.described}); what follows may change"


def in_progress_refusal(state_dir: StrPath) -> str | None:
    """While a loop runs, the message that refuses changing the item it works on
    (``{id}`` is filled in under the backlog's lock); ``None`` when none runs."""
    live = live_loop(state_dir)
    if live is None:
        return None
    return ("item {id} is being worked on by the running loop (" + live.described
            + "); wait for it to finish, or stop the loop with git forge loop stop")


def request_stop(state_dir: StrPath) -> bool:
    """Ask the running loop to stop; ``False`` when none runs."""
    if not loop_is_running(state_dir):
        return False
    try:
        run_token_path(state_dir).unlink()
    except FileNotFoundError:  # already asked
        pass
    return True


def stop_requested(state_dir: StrPath) -> bool:
    return not run_token_path(state_dir).exists()


def arm_stop_token(state_dir: StrPath, run_id: str) -> None:
    """At the start of a run (under the loop lock): the token a stop removes."""
    from git_forge.atomic import atomic_write  # common-case boundary: the check writes none

    atomic_write(run_token_path(state_dir), f"run {run_id}\n".encode())


def disarm_stop_token(state_dir: StrPath) -> None:
    try:
        run_token_path(state_dir).unlink()
    except FileNotFoundError:
        pass


def item_of(manifest: Any) -> str | None:
    """The backlog item a supervised process was started for: the loop puts it in
    the manifest's origin labels (``item_id``); the supervisor never reads them."""
    item_id = manifest.origin.get("item_id")
    return item_id if isinstance(item_id, str) else None


class OrphanedAgent(NamedTuple):
    """An orphaned agent tree."""

    handle: str
    item_id: str | None
    #: The processes holding its liveness lock, as the kernel lists them.
    pids: tuple[int, ...]


def _any_tree_alive(proc_root: str) -> bool:
    """Whether some agent tree under ``proc_root`` holds its liveness lock — asked
    with ``lockprobe`` alone, so that the common answer (none) imports nothing."""
    try:
        names = os.listdir(proc_root)
    except OSError:
        return False
    return any(lock_is_held(os.path.join(proc_root, name))
               for name in names if name.endswith(ALIVE_SUFFIX))


def orphaned_agent(state_dir: StrPath, handle: str, item_id: str | None) -> OrphanedAgent:
    """The orphan ``handle`` with the processes that hold its liveness lock now."""
    # common-case boundary: the supervisor, and pathlib, only for an agent tree alive
    from pathlib import Path

    from git_forge.supervisor.liveness import holders
    from git_forge.supervisor.paths import ProcPaths

    alive = ProcPaths(Path(state_dir) / PROC_DIR).alive(handle)
    return OrphanedAgent(handle, item_id, tuple(sorted(holders(alive))))


def orphaned_agents(state_dir: StrPath) -> list[OrphanedAgent]:
    """Agent trees of an earlier run still alive with no loop supervising them
    (their liveness locks are held; see ``supervisor.liveness``)."""
    if not _any_tree_alive(os.path.join(state_dir, PROC_DIR)):
        return []  # the common case, answered without importing the supervisor
    # common-case boundary: the supervisor, and pathlib, only for an agent tree alive
    from pathlib import Path

    from git_forge.supervisor.liveness import orphans
    from git_forge.supervisor.manifest import ManifestStore
    from git_forge.supervisor.paths import ProcPaths

    root = Path(state_dir) / PROC_DIR
    found = []
    for orphan in orphans(ProcPaths(root)):
        item_id = None
        with contextlib.suppress(ForgeError):
            item_id = item_of(ManifestStore(root).load(orphan.handle))
        found.append(orphaned_agent(state_dir, orphan.handle, item_id))
    return found


class LiveAgent(NamedTuple):
    """An agent the running loop supervises, as its manifest says."""

    handle: str
    item_id: str | None
    started_at: str | None
    output_bytes: int
    cwd: str
    #: A verification gate's process (``loop.verify``), not an agent: its command.
    gate: str | None = None
    #: The profile whose structured stream it prints (``claude``), else ``None``.
    stream: str | None = None


def live_agents(state_dir: StrPath, run_id: str | None) -> list[LiveAgent]:
    """The agents of run ``run_id`` whose manifests say they run (``status`` shows one
    line each; a parallel run has several)."""
    from pathlib import Path  # common-case boundary: the clean pre-launch check

    root = Path(state_dir) / PROC_DIR
    if run_id is None or not root.is_dir():
        return []
    from git_forge.supervisor.view import ProcView  # common-case boundary: a live run

    view = ProcView(root)
    found = []
    for handle in view.store.scan():
        with contextlib.suppress(ForgeError):
            manifest = view.manifest(handle)
            if manifest.owner.run_id == run_id and manifest.state == "running":
                # The count proc list shows: a running agent's spool is ahead of
                # its manifest's last durable cursor (0 until it ends).
                gate, stream = manifest.origin.get("gate"), manifest.origin.get("stream")
                found.append(LiveAgent(handle, item_of(manifest), manifest.started_at,
                                       view.total_bytes(manifest), manifest.command.cwd,
                                       gate if isinstance(gate, str) else None,
                                       stream if isinstance(stream, str) else None))
    return sorted(found, key=lambda agent: (agent.started_at or "", agent.handle))


#: How much of the end of a process's output ``output_tails`` reads (a structured
#: stream's last event may be long).
TAIL_BYTES = 64 * 1024


def output_tails(state_dir: StrPath, handles: list[str]) -> dict[str, bytes]:
    """The last ``TAIL_BYTES`` each process printed (``b''`` when none, or when its
    records cannot be read), from the end of its spool, without a lock: what a
    watcher shows the last line of."""
    if not handles:
        return {}
    from pathlib import Path  # common-case boundary: the clean pre-launch check

    from git_forge.supervisor.view import ProcView  # common-case boundary: a live run

    view = ProcView(Path(state_dir) / PROC_DIR)
    found: dict[str, bytes] = {}
    for handle in handles:
        found[handle] = b""
        with contextlib.suppress(ForgeError, OSError):
            total = view.total_bytes(view.manifest(handle))
            found[handle] = view.read(handle, max(0, total - TAIL_BYTES), TAIL_BYTES)[1].data
    return found


def orphan_message(orphan: OrphanedAgent) -> str:
    pids = ", ".join(map(str, orphan.pids)) or "unknown"
    return (f"an agent of an earlier run is still running (item {orphan.item_id or 'unknown'}, "
            f"pid {pids}, handle {orphan.handle}); stop it with "
            f"git forge proc stop {orphan.handle}")


def orphan_blocker(state_dir: StrPath | None, root: StrPath) -> str | None:
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


def launch_blocker(state_dir: StrPath | None, root: StrPath) -> str | None:
    """Why no launch may start now, whatever the tree holds: a live loop owns the
    tree or the backlog, or an agent of an earlier run still lives. Cheap while
    neither is so (the pre-launch check's clean path asks it, with no ``state_dir``)."""
    live = tree_owner(root) or (live_loop(state_dir) if state_dir is not None else None)
    if live is not None:
        return running_message(live)
    return orphan_blocker(state_dir, root)
