"""One supervised process: drains, watcher, stop machinery and the terminalization gate.

Threads per process (reused ones, ``workers``): one drain per output stream
(stdout, stderr), an optional stdin feeder, and the watcher. The leader's exit
comes from the child (``when_exited``): from the watchdog's answer, or for a
direct child from a waiter that notices it without reaping it. The watcher
owns the timing: deadline, escalation after a grace period, stop requests
from other processes, periodic spool flushes, and the end — when both streams
reached EOF and the leader exited, it sweeps what is left of the tree, reaps
the leader and passes the one-shot gate.

Drain before wait: the streams are read to EOF before the leader is reaped.
A grandchild that keeps a pipe open after the leader exited must not hang the
entry: after ``drain_timeout`` the rest of the tree is terminated, and if a
pipe is still held after another ``drain_timeout`` the drains stop waiting.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from git_forge.atomic import write_all
from git_forge.supervisor import liveness, workers
from git_forge.supervisor.buffer import StreamTail
from git_forge.supervisor.config import SupervisorConfig
from git_forge.supervisor.lifecycle import REASONS, ProcessError, State
from git_forge.supervisor.manifest import (
    Cursors,
    Manifest,
    ManifestStore,
    Result,
    finish_time,
)
from git_forge.supervisor.paths import ProcPaths
from git_forge.supervisor.process import ProcessTree
from git_forge.supervisor.publication import (
    CompletionNotifier,
    LifecyclePublisher,
    publish_completion,
)
from git_forge.supervisor.requests import discard_stop_request, take_stop_request
from git_forge.supervisor.spool_writer import SpoolWriter
from git_forge.supervisor.stopplan import StopKind, StopPlan, stop_kind
from git_forge.supervisor.watchdog import Child

if TYPE_CHECKING:
    from git_forge.supervisor.sandbox import Sandbox

TICK_SECONDS = 0.1
DESCENDANT_REFRESH_SECONDS = 1.0
#: Leftovers of a tree whose leader already exited get at most this long after SIGTERM.
LEFTOVER_GRACE_SECONDS = 1.0
PIPE_BYTES = 1024 * 1024
#: How much of the end of each stream is kept apart (``Entry.tails``).
TAIL_BYTES = 64 * 1024
#: The longest incomplete line a stream holds back from the combined record. A
#: longer line goes into the record in pieces (so the other stream may land
#: between its pieces): holding more would only delay output nobody can read
#: yet, and a line that long is rarely a line.
LINE_HOLD_BYTES = 64 * 1024
_POLL_MS = 250


@dataclass(frozen=True)
class Outcome:
    """How a process ended: a terminal state (and its exit code when ``exited``)."""

    state: str
    exit_code: int | None = None




class Entry:
    """The live record of one process. ``ended`` is set once the supervisor is done
    with its tree — reaped, swept, its output drained — and only its own bookkeeping
    is left (a caller may look at what the process left meanwhile), or at the latest
    with ``done``; ``exited`` once its terminal manifest is durable; ``done`` once
    release, publication and notification ran."""

    def __init__(
        self,
        *,
        manifest: Manifest,
        store: ManifestStore,
        spool: SpoolWriter,
        paths: ProcPaths,
        config: SupervisorConfig,
        lifecycle: LifecyclePublisher | None,
        notifications: CompletionNotifier | None,
        release: Callable[[], None],
        on_done: Callable[[], None] | None = None,
    ) -> None:
        self.handle = manifest.handle
        self._on_done = on_done
        self.manifest = manifest
        self.store = store
        self.spool = spool
        self.paths = paths
        self.config = config
        self.lifecycle = lifecycle
        self.notifications = notifications
        self._release = release
        self.ended = threading.Event()
        self.exited = threading.Event()
        self.done = threading.Event()
        #: Failures inside the gate (a save, a publication); the outcome stands.
        self.errors: list[BaseException] = []
        #: The last bytes of stdout and of stderr, each apart from the combined record.
        self.tails = {"stdout": StreamTail(TAIL_BYTES), "stderr": StreamTail(TAIL_BYTES)}
        self._observe: Callable[[str, bytes], None] | None = None
        self._receipt: Callable[[Manifest], Mapping[str, Any] | None] | None = None
        self._sandbox: Sandbox | None = None
        #: The first failure to write this process's output or manifest (None: none).
        self.storage_error: ProcessError | None = None
        #: Signals that could not be delivered.
        self.teardown_errors: list[str] = []
        self.pid: int | None = None  # for tests and diagnostics only; never persisted
        self._lock = threading.RLock()
        self._gate_lock = threading.Lock()
        self._gate_taken = False
        self._released = False
        self._wake = threading.Event()
        self._leader_exited = threading.Event()
        self._abandon = threading.Event()
        self._child: Child | None = None
        self._tree: ProcessTree | None = None
        self._drains: list[workers.Task] = []
        self._open_streams = 0
        self._watcher: workers.Task | None = None
        self._reaped = False
        self._deadline: float | None = None
        self._stop = StopPlan()

    # -- starting ----------------------------------------------------------------
    def attach(self, child: Child, *, stdin: bytes | None, timeout: float | None,
               observe: Callable[[str, bytes], None] | None = None,
               receipt: Callable[[Manifest], Mapping[str, Any] | None] | None = None,
               sandbox: Sandbox | None = None) -> None:
        """Begin draining a freshly spawned process (before anything else can fail).
        ``observe(stream, data)`` sees each read of stdout and stderr as it is spooled;
        ``receipt(manifest)`` is asked once in the gate (see ``PreparedProcess``);
        what a ``sandbox`` must not leave behind is removed in the gate."""
        self._observe = observe
        self._receipt = receipt
        self._sandbox = sandbox
        self._child = child
        self.pid = child.pid
        self._tree = ProcessTree(child.pid)
        if timeout is not None:
            self._deadline = time.monotonic() + timeout
        self._open_streams = 2
        for name, stream in (("stdout", child.stdout), ("stderr", child.stderr)):
            assert stream is not None
            self._drains.append(workers.start(self._drain, stream.fileno(), self._sink(name),
                                              name=f"drain-{self.handle[:6]}"))
        child.when_exited(self._leader_ended)
        if stdin is not None:
            workers.start(self._feed_stdin, child, stdin, name=f"stdin-{self.handle[:6]}")

    def start_watcher(self) -> None:
        self._watcher = workers.start(self._watch, name=f"watch-{self.handle[:6]}")

    def _sink(self, stream: str) -> Callable[[memoryview], None]:
        """What each read of ``stream`` also goes to: its tail, and the observer."""
        tail, observe = self.tails[stream], self._observe

        def sink(data: memoryview) -> None:
            tail.add(data)
            if observe is not None:
                try:
                    observe(stream, bytes(data))
                except Exception as exc:  # an observer never stops the output
                    self.errors.append(exc)

        return sink

    def _drain(self, fd: int, sink: Callable[[memoryview], None]) -> None:
        """Read one stream to its end into the combined record, whole lines at a time.

        Two drains append to one record, so a stream's incomplete last line is held
        back until its newline comes (or the stream ends, or it outgrows
        ``LINE_HOLD_BYTES``): the other stream's lines land between this one's,
        never inside one. ``sink`` (the stream's tail and the observer) still sees
        every read as it arrives.
        """
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)  # fewer wake-ups per byte
        limit = self.config.read_chunk_bytes
        buffer = bytearray(limit + LINE_HOLD_BYTES)
        view = memoryview(buffer)
        held = 0  # buffer[:held]: the incomplete last line, not in the record yet
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        try:
            while not self._abandon.is_set():
                # Poll first: the read then never blocks, and an abandoned drain ends.
                if not poller.poll(_POLL_MS):
                    continue
                count = os.readv(fd, [view[held:held + limit]])
                if count == 0:
                    break
                sink(view[held:held + count])
                end = held + count
                # Only a newline in the last LINE_HOLD_BYTES can be held back after:
                # bulk output without one is not scanned to its start (held bytes
                # hold no newline, so nothing before ``held`` is either).
                cut = buffer.rfind(b"\n", max(held, end - LINE_HOLD_BYTES - 1), end) + 1
                if not cut and end > LINE_HOLD_BYTES:
                    cut = end  # no line end near the end: the whole read goes in
                if cut:
                    self.spool.append(view[:cut])
                    if cut < end:
                        buffer[:end - cut] = bytes(view[cut:end])
                held = end - cut
            if held:
                self.spool.append(view[:held])  # the stream ended inside a line
        except ProcessError as exc:  # the spool could not be written: stop the process
            self._storage_failed(exc)
        except OSError as exc:
            self.errors.append(exc)
        finally:
            view.release()
            with self._lock:
                self._open_streams -= 1
            self._wake.set()

    def _drains_finished(self) -> bool:
        with self._lock:
            return self._open_streams == 0

    def _leader_ended(self) -> None:
        self._leader_exited.set()
        self._wake.set()

    def _feed_stdin(self, child: Child, data: bytes) -> None:
        assert child.stdin is not None
        try:
            write_all(child.stdin.fileno(), data)
        except OSError:
            pass  # the child closed its standard input: what it read is what it got
        finally:
            with contextlib.suppress(OSError):
                child.stdin.close()

    # -- stopping ----------------------------------------------------------------
    def request_stop(self, mode: str, grace: float | None = None) -> bool:
        """Signal the tree now; escalation (for ``terminate``) happens on the watcher.
        False when the process already ended (nothing is sent)."""
        grace = self.config.grace_seconds if grace is None else grace
        kind = stop_kind(mode)
        with self._lock:
            if self._tree is None or self._reaped or self._leader_exited.is_set():
                return False
            self._signal(self._stop.request(kind, now=time.monotonic(), grace=grace))
        self._wake.set()
        return True

    def _signal(self, signum: int) -> None:
        assert self._tree is not None
        self.teardown_errors.extend(
            self._tree.signal(signum, leader_unreaped=self._leader_unreaped)
        )

    @property
    def _leader_unreaped(self) -> bool:
        """The leader's pid (= its group id) cannot have been reused yet. A watched
        leader is reaped by the watchdog as soon as it exits."""
        return not self._reaped and self._child is not None and not self._child.reaped

    def _on_deadline(self) -> None:
        with self._lock:
            self._deadline = None
            if self._leader_exited.is_set() or self._reaped:
                return
            self._signal(self._stop.request(StopKind.TIMEOUT, now=time.monotonic(),
                                            grace=self.config.grace_seconds))

    def _escalate(self) -> None:
        with self._lock:
            if self._leader_exited.is_set() or self._reaped:
                self._stop.escalate_at = None  # it ended on the first signal: no escalation
                return
            self._signal(self._stop.escalate())

    def _take_stop_request(self) -> None:
        request = take_stop_request(self.paths, self.handle)
        if request is not None:
            self.request_stop(request.mode, request.grace)

    # -- watching ----------------------------------------------------------------
    def _watch(self) -> None:
        outcome = Outcome(State.FAILED)
        try:
            outcome = self._watch_until_exit()
        except BaseException as exc:  # never leave a process without a terminal state
            self.errors.append(exc)
            with self._lock:
                if not self._reaped and self._tree is not None:
                    self._signal(signal.SIGKILL)
        finally:
            self.terminalize(outcome)

    def _watch_until_exit(self) -> Outcome:
        config = self.config
        # A contained child's descendants cannot escape the watchdog: no scan of
        # every process on the machine per second to remember them.
        contained = self._child is not None and self._child.contained
        next_request_check = 0.0
        next_refresh = 0.0
        exit_seen: float | None = None
        swept = orphans_ended = False
        while True:
            self._wake.wait(TICK_SECONDS)
            self._wake.clear()
            now = time.monotonic()
            try:
                self.spool.flush_if_due(now)
            except ProcessError as exc:
                self._storage_failed(exc)
            if now >= next_request_check:
                next_request_check = now + config.stop_poll_seconds
                self._take_stop_request()
            if self._deadline is not None and now >= self._deadline:
                self._on_deadline()
            if self._stop.due(now):
                self._escalate()
            if not self._leader_exited.is_set():
                if now >= next_refresh and not contained:
                    next_refresh = now + DESCENDANT_REFRESH_SECONDS
                    with self._lock:
                        if not self._reaped and self._tree is not None:
                            self._tree.refresh()
                continue
            if not orphans_ended and self._child is not None and self._child.orphaned:
                self._end_orphaned_tree()
                orphans_ended = True
            if self._drains_finished():
                break
            if exit_seen is None:
                exit_seen = now
            elif now - exit_seen >= config.drain_timeout_seconds:
                if swept:
                    self._abandon.set()  # a pipe holder outside our reach: stop waiting
                    break
                self._sweep_leftovers()
                swept, exit_seen = True, time.monotonic()
        if not swept:
            self._sweep_leftovers()
        for thread in self._drains:
            thread.join()
        return self._reap()

    def _end_orphaned_tree(self) -> None:
        """The watchdog died under a live tree: the leader was never reaped, so its
        group is still its own. Its descendants are remembered now (the watchdog no
        longer catches one that leaves the group), and all of it is killed."""
        assert self._tree is not None
        with self._lock:
            self._tree.refresh()
            self.teardown_errors.extend(self._tree.signal(signal.SIGKILL, leader_unreaped=True))

    def _sweep_leftovers(self) -> None:
        assert self._tree is not None
        grace = min(self.config.grace_seconds, LEFTOVER_GRACE_SECONDS)
        # No lock needed: the sweep signals tracked processes one by one, never the group.
        self.teardown_errors.extend(self._tree.sweep(grace))

    def _reap(self) -> Outcome:
        assert self._child is not None
        with self._lock:
            returncode = self._child.wait()
            self._reaped = True
        for stream in (self._child.stdout, self._child.stderr):
            with contextlib.suppress(OSError):
                stream.close()
        state, exit_code = self._stop.outcome(returncode)
        return Outcome(state, exit_code)

    # -- the gate ----------------------------------------------------------------
    def terminalize(self, outcome: Outcome) -> bool:
        """The one-shot gate every terminal path goes through; True for the one
        caller that passed it, False (and nothing done) for every other.

        1. make the spool durable, record final cursors and the result;
        2. signal ``exited``;
        3. release the quota, then the workspace lease;
        4. publish the lifecycle event with the persisted id;
        5. notify completion with the persisted command id.
        """
        if outcome.state not in REASONS:
            raise ProcessError("invalid_arguments", f"{outcome.state!r} is not a terminal state")
        with self._gate_lock:
            if self._gate_taken:
                return False
            self._gate_taken = True
        if self.reaped:  # not a gate forced past a live process
            self.ended.set()
        persisted = False
        try:
            persisted = self._record(outcome)
        except Exception as exc:  # the gate always finishes: waiters are never left hanging
            self.errors.append(exc)
        finally:
            self.exited.set()
            self._release_once()
        try:
            if persisted:
                self.manifest = publish_completion(
                    self.manifest, self.store, self.lifecycle, self.notifications, self.errors
                )
        finally:
            discard_stop_request(self.paths, self.handle)
            if persisted:  # its end is on record: the liveness file has told all it can
                _forget_liveness(self.paths, self.handle)
            self.done.set()
            self.ended.set()
            if self._on_done is not None:
                self._on_done()
        return True

    def _record(self, outcome: Outcome) -> bool:
        try:
            extent = self.spool.close()
        except ProcessError as exc:
            self._storage_failed(exc)
            extent = self.spool.committed
        current = self.manifest
        manifest = current.evolve(
            state=outcome.state,
            finished_at=finish_time(current.created_at),
            result=Result(
                exit_code=outcome.exit_code if outcome.state == State.EXITED else None,
                reason=REASONS[outcome.state],
            ),
            cursors=Cursors(
                total_bytes=max(current.cursors.total_bytes, extent.total_bytes),
                retained_from=max(current.cursors.retained_from, extent.retained_from),
            ),
        )
        manifest = self._with_receipt(self._sandbox_cleared(manifest))
        try:
            self.store.save(manifest)
        except ProcessError as exc:  # recorded; the gate goes on to release what is held
            self._storage_failed(exc)
            return False
        except Exception as exc:
            self.errors.append(exc)
            return False
        self.manifest = manifest
        return True

    def _sandbox_cleared(self, manifest: Manifest) -> Manifest:
        """``manifest`` once what its sandbox must not leave behind is removed, and
        saying what was (``sandbox_removed``)."""
        sandbox = self._sandbox
        if sandbox is None or not sandbox.absent:
            return manifest
        removed = sandbox.clear_absent()
        return manifest.evolve(sandbox_removed=tuple(removed)) if removed else manifest

    def _with_receipt(self, manifest: Manifest) -> Manifest:
        """``manifest`` with what the caller made of the process, when it says."""
        if self._receipt is None:
            return manifest
        try:
            receipt = self._receipt(manifest)
            return manifest if receipt is None else manifest.evolve(receipt=dict(receipt))
        except Exception as exc:  # a caller's receipt never stops the gate
            self.errors.append(exc)
            return manifest

    def _storage_failed(self, error: ProcessError) -> None:
        """Output or the manifest could not be written (a full disk): nothing more
        can be recorded, so the process is stopped rather than run on unrecorded.
        The first such error is kept for the caller (``storage_error``)."""
        self.errors.append(error)
        with self._lock:
            first = self.storage_error is None
            if first:
                self.storage_error = error
        if first:
            self.request_stop("terminate")

    def _release_once(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        try:
            self._release()
        except Exception as exc:
            self.errors.append(exc)

    # -- waiting -----------------------------------------------------------------
    @property
    def reaped(self) -> bool:
        """The process itself is gone (a forced gate can pass before that)."""
        return self._reaped or self._child is None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the whole gate (publication included); False on timeout."""
        return self.done.wait(None if timeout is None else max(0.0, timeout))

    def join(self) -> None:
        """Wait for the gate and for the watcher: the process is reaped as well."""
        self.done.wait()
        if self._watcher is not None and not self._watcher.running_here:
            self._watcher.join()

    @property
    def stop_bound(self) -> float:
        """How long a terminate may take: grace, then kill and the drain bounds."""
        config = self.config
        drains = 2 * config.drain_timeout_seconds + 2 * LEFTOVER_GRACE_SECONDS
        return config.grace_seconds + drains + 5


def _forget_liveness(paths: ProcPaths, handle: str) -> None:
    """Remove a terminal process's liveness file once no member of its tree holds it.

    Left behind, every finished agent's file made each later ``status`` (and each
    orphan scan) import the supervisor and probe it. A tree member that escaped the
    sweep still holds the lock, so the file stays and the orphan is still found."""
    with contextlib.suppress(OSError):
        liveness.forget(paths.alive(handle))
