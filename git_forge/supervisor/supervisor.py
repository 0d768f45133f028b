"""The supervisor: admission, start, stop, wait, shutdown and restore of processes.

It knows nothing of backlogs: ``owner`` ({run_id}) and ``origin`` ({item_id,
iteration}) are opaque labels it stores and hands back. While alive it holds
the owner lock of its process root, which is how another process (``git forge
proc stop``) tells a live owner from one that is gone — never by a PID.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

from git_forge.clock import precise_now, precise_stamp
from git_forge.errors import os_error_text
from git_forge.locks import FileLock
from git_forge.supervisor import liveness, retention
from git_forge.supervisor.buffer import Chunk
from git_forge.supervisor.config import SupervisorConfig
from git_forge.supervisor.entry import LEFTOVER_GRACE_SECONDS, Entry, Outcome
from git_forge.supervisor.handles import mint_handle, require_handle
from git_forge.supervisor.lifecycle import REASONS, ProcessError, State
from git_forge.supervisor.manifest import (
    Command,
    EventIds,
    Manifest,
    ManifestStore,
    Origin,
    Owner,
    Result,
    finish_time,
)
from git_forge.supervisor.paths import ProcPaths
from git_forge.supervisor.process import PreparedProcess
from git_forge.supervisor.publication import (
    CompletionNotifier,
    LifecyclePublisher,
    publish_completion,
)
from git_forge.supervisor.quota import Quota, Reservation
from git_forge.supervisor.render import RenderedOutput
from git_forge.supervisor.requests import check_stop
from git_forge.supervisor.restore import RestoreReport, reconcile
from git_forge.supervisor.spool_writer import SpoolWriter
from git_forge.supervisor.view import ProcView, render_chunk
from git_forge.supervisor.watchdog import Child, Watchdog


def _owner(value: Owner | Mapping[str, object]) -> Owner:
    if isinstance(value, Owner):
        return value
    if isinstance(value, dict) and isinstance(run_id := value.get("run_id"), str):
        return Owner(run_id=run_id)
    raise ProcessError("invalid_arguments", "owner must be {run_id: str}")


def _origin(value: Origin | Mapping[str, object] | None) -> Origin:
    if isinstance(value, Origin):
        return value
    if value is None or isinstance(value, dict):
        try:
            return Origin.of(value)
        except ValueError as exc:
            raise ProcessError("invalid_arguments", f"origin: {exc}") from exc
    raise ProcessError("invalid_arguments", "origin must be a mapping of labels")


def _iso_after(seconds: float) -> str:
    return precise_stamp(datetime.now(UTC) + timedelta(seconds=seconds))


class Supervisor:
    """Runs prepared processes under one process root, with durable manifests and
    output. Use one per root (a second live one is ``supervisor_busy``); end it
    with ``shutdown`` (or a ``with`` block), which also releases the root."""

    def __init__(
        self,
        config: SupervisorConfig | None,
        manifests: ManifestStore,
        spool_root: Path | str | None = None,
        lifecycle: LifecyclePublisher | None = None,
        notifications: CompletionNotifier | None = None,
    ) -> None:
        self.config = config or SupervisorConfig()
        self.store = manifests
        self.paths = manifests.paths
        self.spool_paths = ProcPaths(Path(spool_root)) if spool_root else self.paths
        self.lifecycle = lifecycle
        self.notifications = notifications
        self.view = ProcView(self.paths.root, self.spool_paths.root)
        self._quota = Quota(
            self.config.max_processes, self.config.memory_budget, self.config.spool_budget
        )
        self._lock = threading.Lock()
        self._entries: dict[str, Entry] = {}
        self._closed = False
        self._starts_in_flight = 0
        self._no_starts = threading.Condition(self._lock)
        #: Notified each time an entry's gate is done (``wait_any``), or on ``wake``.
        self._settled = threading.Condition(threading.Lock())
        self._woken = False
        self._shutdown_started = False
        self._shutdown_done = threading.Event()
        self._shutdown_error: ProcessError | None = None
        try:
            self.paths.ensure_root()
            self.spool_paths.ensure_root()
        except OSError as exc:
            raise ProcessError(
                "process_setup_failed", f"cannot create {self.paths.root}: {os_error_text(exc)}"
            ) from exc
        self._watchdog = Watchdog() if self.config.watchdog else None
        self._owner_lock = FileLock(self.paths.owner_lock)
        if not self._owner_lock.try_acquire(patience=0.05):
            raise ProcessError("supervisor_busy", "another live supervisor owns this process root")

    # -- starting ----------------------------------------------------------------
    def warm_up(self) -> None:
        """Start what the first ``start`` would otherwise wait for — the watchdog
        process — so that it boots while the caller finishes its own start-up.
        A watchdog that cannot start now is left to the first ``start`` to report."""
        if self._watchdog is not None:
            with contextlib.suppress(OSError):
                self._watchdog.start()

    def start(
        self,
        owner: Owner | Mapping[str, object],
        origin: Origin | Mapping[str, object] | None,
        prepared: PreparedProcess,
    ) -> str:
        """Start ``prepared`` and return its handle, which always has a durable manifest.

        reserve quota → mint handle and lifecycle ids → save ``starting`` →
        spawn → save ``running`` → publish ``started``. A failed spawn leaves a
        ``failed`` manifest and raises ``spawn_failed`` (its ``handle`` attribute
        names it); every failure releases what was reserved.
        """
        owner, origin = _owner(owner), _origin(origin)
        if not isinstance(prepared, PreparedProcess) or prepared.used:
            raise ProcessError("invalid_arguments", "start needs an unused PreparedProcess")
        with self._lock:
            if self._closed:
                raise ProcessError("supervisor_shutting_down", "admission is closed")
            self._starts_in_flight += 1
        try:
            return self._start(owner, origin, prepared)
        finally:
            with self._lock:
                self._starts_in_flight -= 1
                self._no_starts.notify_all()

    def _start(self, owner: Owner, origin: Origin, prepared: PreparedProcess) -> str:
        config = self.config
        reservation = self._quota.reserve(config.window_bytes, config.spool_reservation_bytes)
        try:
            manifest = self._save_starting(owner, origin, prepared)
        except BaseException:
            reservation.release()
            raise
        handle = manifest.handle
        released = self._releaser(reservation, prepared)
        try:
            spool = SpoolWriter(
                self.spool_paths.spool(handle), ceiling=config.max_spool_bytes,
                segment_bytes=config.spool_segment_bytes, window_bytes=config.window_bytes,
                flush_interval=config.flush_interval_seconds,
            )
        except ProcessError as exc:
            self._fail_unstarted(manifest, released)
            raise ProcessError("process_setup_failed", exc.cause, handle=handle) from exc
        entry = Entry(
            manifest=manifest, store=self.store, spool=spool, paths=self.paths, config=config,
            lifecycle=self.lifecycle, notifications=self.notifications, release=released,
            on_done=self._notify_settled,
        )
        try:
            child = self._spawn(handle, prepared)
        except Exception as exc:  # whatever refused the spawn, the manifest says failed
            entry.terminalize(Outcome(State.FAILED))
            with self._lock:
                self._entries[handle] = entry
            raise ProcessError("spawn_failed", _describe(exc), handle=handle) from exc
        entry.attach(child, stdin=prepared.stdin, timeout=prepared.timeout,
                     observe=prepared.observe, receipt=prepared.receipt,
                     sandbox=prepared.sandbox)
        with self._lock:
            self._entries[handle] = entry
        running = manifest.evolve(state=State.RUNNING, started_at=precise_now())
        try:
            self.store.save(running)  # not fsynced: ``starting`` covers a crash (needs_fsync)
        except ProcessError as exc:
            entry.request_stop("kill")
            entry.start_watcher()
            entry.wait()
            raise ProcessError("process_setup_failed", exc.cause, handle=handle) from exc
        entry.manifest = running
        if self.lifecycle is not None and running.events.started:
            try:
                self.lifecycle.publish("started", running.events.started, running)
            except Exception as exc:  # the process runs; a journal hiccup is recorded
                entry.errors.append(exc)
        entry.start_watcher()
        return handle

    def _spawn(self, handle: str, prepared: PreparedProcess) -> Child:
        """Spawn with the tree's liveness lock held; the child inherits the locked
        descriptor and this process keeps no copy of it (``start`` consumes it)."""
        config = self.config
        alive_path = self.paths.alive(handle)
        alive = liveness.hold(alive_path)
        try:
            return prepared.start(
                self._watchdog, alive=(alive, alive_path), linger=config.drain_timeout_seconds,
                leftover_grace=min(config.grace_seconds, LEFTOVER_GRACE_SECONDS),
                orphan_grace=config.orphan_grace_seconds, marker=handle,
            )
        except BaseException:
            liveness.forget(alive_path)  # the descriptor is closed: the lock is free
            raise

    def _save_starting(self, owner: Owner, origin: Origin, prepared: PreparedProcess) -> Manifest:
        handle = mint_handle()
        while self.store.exists(handle) or handle in self._entries:
            handle = mint_handle()
        manifest = Manifest(
            handle=handle, owner=owner, origin=origin,
            command=Command(argv=tuple(prepared.argv), cwd=str(prepared.cwd),
                            sandbox=prepared.sandbox.describe() if prepared.sandbox else None),
            state=State.STARTING, created_at=precise_now(),
            deadline=_iso_after(prepared.timeout) if prepared.timeout else None,
            events=EventIds.mint(),
        )
        try:
            self.store.save(manifest)
        except ProcessError as exc:
            if exc.code == "invalid_arguments":
                raise
            raise ProcessError("process_setup_failed", exc.cause) from exc
        return manifest

    def _releaser(self, reservation: Reservation,
                  prepared: PreparedProcess) -> Callable[[], None]:
        def release() -> None:
            reservation.release()  # quota first, then the workspace lease
            if prepared.lease is not None:
                prepared.lease.release()

        return release

    def _fail_unstarted(self, manifest: Manifest, release: Callable[[], None]) -> None:
        """A process that never spawned: durable ``failed``, everything released,
        the completion published like any other."""
        failed = manifest.evolve(
            state=State.FAILED, finished_at=finish_time(manifest.created_at),
            result=Result(reason=REASONS[State.FAILED]),
        )
        try:
            self.store.save(failed)
        finally:
            release()
        publish_completion(failed, self.store, self.lifecycle, self.notifications, [])

    # -- queries -----------------------------------------------------------------
    def _entry(self, handle: str) -> Entry | None:
        require_handle(handle)
        with self._lock:
            return self._entries.get(handle)

    def entry(self, handle: str) -> Entry:
        """The live entry of ``handle`` (for callers that need its events)."""
        entry = self._entry(handle)
        if entry is None:
            raise ProcessError("not_found", "not supervised by this process")
        return entry

    def tail(self, handle: str, stream: str) -> bytes:
        """The last bytes ``handle`` wrote to ``stream`` (``stdout`` or ``stderr``),
        apart from the combined record — while this supervisor knows the process."""
        entry = self.entry(handle)
        if stream not in entry.tails:
            raise ProcessError("invalid_arguments", "a stream is stdout or stderr")
        return entry.tails[stream].data

    def storage_error(self, handle: str) -> ProcessError | None:
        """The first failure to write ``handle``'s output or manifest (a full disk),
        after which the supervisor stopped it; ``None`` when everything was written."""
        entry = self._entry(handle)
        return entry.storage_error if entry is not None else None

    def output_bytes(self, handle: str) -> int:
        """How many bytes of output ``handle`` has recorded so far (both streams)."""
        entry = self._entry(handle)
        if entry is None:
            return self.view.total_bytes(self.store.load(handle))
        return entry.spool.total_bytes

    def snapshot(self, handle: str) -> Manifest:
        entry = self._entry(handle)
        return entry.manifest if entry is not None else self.store.load(handle)

    def read(self, handle: str, cursor: int, max_bytes: int) -> Chunk:
        """Raw bytes from ``cursor`` (spool cursor rules); recent bytes come from memory."""
        entry = self._entry(handle)
        if entry is None:
            return self.view.read(handle, cursor, max_bytes)[1]
        return entry.spool.read(cursor, max_bytes)

    def render(
        self, handle: str, cursor: int, max_bytes: int, encoding: str = "text"
    ) -> RenderedOutput:
        entry = self._entry(handle)
        if entry is None:
            return self.view.render(handle, cursor, max_bytes, encoding)[1]
        terminal = entry.exited.is_set()
        chunk = entry.spool.read(cursor, max_bytes)
        total = max(chunk.next_cursor, entry.spool.total_bytes)
        return render_chunk(
            handle, chunk, total_bytes=total, terminal=terminal, max_bytes=max_bytes,
            encoding=encoding,
        )

    # -- stopping and waiting ----------------------------------------------------
    def stop(self, handle: str, mode: str = "terminate", grace: float | None = None) -> Manifest:
        """Stop the whole tree of ``handle`` and return its manifest.

        ``interrupt`` sends SIGINT and never escalates (the snapshot comes back
        after the process ended or ``grace`` passed); ``terminate`` sends SIGTERM,
        waits ``grace``, then SIGKILL; ``kill`` sends SIGKILL. A terminal process
        gets nothing.
        """
        check_stop(mode, grace)
        entry = self._entry(handle)
        if entry is None:
            manifest = self.store.load(handle)
            if manifest.terminal:
                return manifest
            raise ProcessError(
                "owner_gone", "not supervised by this process; restore reconciles it"
            )
        if entry.exited.is_set():
            return entry.manifest
        entry.request_stop(mode, grace)
        grace = self.config.grace_seconds if grace is None else grace
        if mode == "interrupt":
            entry.wait(grace)
            return entry.manifest
        if not entry.wait(grace + entry.stop_bound):
            raise ProcessError("teardown_failed", "the process tree did not end", handle=handle)
        return entry.manifest

    def wait(self, handle: str, timeout: float | None = None) -> Manifest:
        """The terminal manifest of ``handle``, once published and notified."""
        entry = self._entry(handle)
        if entry is None:
            return self.view.wait([handle], timeout=timeout)[0]
        if not entry.wait(timeout):
            raise ProcessError("wait_timeout", f"still {entry.manifest.state}", handle=handle)
        return entry.manifest

    def wait_ended(self, handle: str, timeout: float) -> bool:
        """Whether ``handle``'s tree has ended (``Entry.ended``), waiting up to
        ``timeout`` seconds: what the process did is final from then on, while its
        end is still being recorded. A handle this supervisor does not run has."""
        entry = self._entry(handle)
        return entry is None or entry.ended.wait(max(0.0, timeout))

    def wait_any(self, handles: Iterable[str], timeout: float) -> list[str]:
        """Those of ``handles`` whose processes ``wait`` would return at once, waiting
        up to ``timeout`` seconds for the first: a caller watching several processes
        hears of each end as it happens, not when it next looks at that one. A handle
        this supervisor does not run counts as settled (``wait`` answers for it)."""
        handles = list(handles)
        deadline = time.monotonic() + max(0.0, timeout)
        with self._settled:
            while True:
                settled = [handle for handle in handles if self._is_settled(handle)]
                remaining = deadline - time.monotonic()
                if settled or self._woken or remaining <= 0:
                    self._woken = False
                    return settled
                self._settled.wait(remaining)

    def wake(self) -> None:
        """Have the ``wait_any`` under way, or else the next one, return now with what
        has settled (perhaps nothing): the caller has other news to act on (another
        thread's work done) and watches processes and that news in one wait."""
        with self._settled:
            self._woken = True
            self._settled.notify_all()

    def _is_settled(self, handle: str) -> bool:
        entry = self._entry(handle)
        return entry is None or entry.done.is_set()

    def _notify_settled(self) -> None:
        with self._settled:
            self._settled.notify_all()

    # -- shutdown ----------------------------------------------------------------
    def shutdown(self) -> None:
        """Close admission, terminate every tree at once, kill after the grace
        period, and wait until every entry is terminalized. Idempotent: concurrent
        and later callers share the one sequence and its result."""
        with self._lock:
            first = not self._shutdown_started
            self._shutdown_started = True
            self._closed = True
        if first:
            try:
                self._shutdown()
            finally:
                self._shutdown_done.set()
        else:
            self._shutdown_done.wait()
        if self._shutdown_error is not None:
            raise self._shutdown_error

    def _shutdown(self) -> None:
        with self._lock:
            self._no_starts.wait_for(lambda: self._starts_in_flight == 0)
            entries = list(self._entries.values())
        for entry in entries:
            if not entry.reaped:
                entry.request_stop("terminate", self.config.grace_seconds)
        failures: list[str] = []
        for entry in entries:
            entry.join()
            failures.extend(entry.teardown_errors)
        if self._watchdog is not None:
            self._watchdog.close()
        self._owner_lock.release()
        if failures:
            self._shutdown_error = ProcessError("teardown_failed", failures[0])

    def __enter__(self) -> Supervisor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    # -- restore and retention ---------------------------------------------------
    def restore(self) -> RestoreReport:
        """Reconcile the manifests left in the root (see ``restore.reconcile``)."""
        with self._lock:
            live = set(self._entries)
        return reconcile(
            self.store, self.spool_paths, self.lifecycle, self.notifications, skip=live
        )

    def prune(self, *, dry_run: bool = False) -> retention.PruneReport:
        """Remove the settled processes of all but the ``keep_runs`` most recent runs
        (see ``retention``); what this supervisor runs is never touched."""
        with self._lock:
            live = set(self._entries)
        return retention.prune(self.store, self.spool_paths, self.config.keep_runs,
                               dry_run=dry_run, skip=live)

    def keep(self, handle: str, keep: bool = True) -> None:
        """Keep ``handle`` whatever its run's age, or (``keep=False``) no longer."""
        retention.mark_keep(self.paths, handle, keep)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return str(exc)

