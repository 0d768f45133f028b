"""Which finished processes a process root keeps, and pruning the rest.

**Settled.** A process is settled when nothing about it can change any more: its
manifest is terminal, its completion is marked published, and no member of its
tree lives (no held liveness lock). Restore never needs to read a settled
manifest again, so ``settled.json`` in the root lists them — handles by owner
run — and restore reads only the manifests it does not list: the cost of a
launch follows the processes since the last one, not the whole history.

``settled.json`` is derived data. Only restore and prune add to it, and only
manifests they read and found settled; a handle in it stays settled forever (a
terminal result and the completion mark never change, and handles are never
reused). So it is written without fsyncs and read leniently: lost, stale or
unreadable, it only makes the next restore read more manifests (and replace it).

**Kept.** ``prune`` removes the settled processes of every run except the
``keep_runs`` most recent ones (runs are told apart by ``owner.run_id``, an
opaque label, and ordered by their first process's ``created_at``), except:

* anything not settled (a manifest not terminal, an unpublished completion, a
  tree still alive) — it is not even listed;
* a process that was lost (``lost_on_restore``): what it wrote is all there is
  to tell what happened;
* a process marked to keep: a ``<handle>.keep`` file (``mark_keep``) — how a
  caller says "this one explains something not yet resolved" (the loop: a
  blocked item's last attempt) without the supervisor knowing why.

A process is removed manifest first, then its spool and small files: a crash
in the middle leaves either a whole process or files no manifest names (never
a manifest whose spool is half gone), and ``settled.json`` still lists the
handle until everything is gone, so the next prune finishes the job.
"""

import contextlib
import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypedDict

from git_forge.atomic import atomic_write
from git_forge.errors import StoreError, os_error_text
from git_forge.jsonfile import write_json
from git_forge.layout import MANIFEST_SUFFIX
from git_forge.locks import locked, sidecar_lock_path
from git_forge.parsing import DocumentTooComplex, load_json
from git_forge.supervisor import liveness
from git_forge.supervisor.handles import is_valid_handle
from git_forge.supervisor.lifecycle import ProcessError, State
from git_forge.supervisor.manifest import Manifest, ManifestStore
from git_forge.supervisor.paths import FILE_MODE, ProcPaths

SETTLED_VERSION = 1
TEMP_SUFFIX = ".tmp"


class SettledRunJSON(TypedDict):
    run_id: str
    first: str
    handles: list[str]


class SettledJSON(TypedDict):
    """``settled.json``: the settled processes' handles by run, oldest run first."""

    version: int
    runs: list[SettledRunJSON]


@dataclass
class RunRecord:
    """The settled processes of one run: its label, its first ``created_at``."""

    run_id: str
    first: str
    handles: set[str] = field(default_factory=set)


@dataclass
class Ledger:
    """``settled.json`` in memory: settled handles by run."""

    runs: dict[str, RunRecord] = field(default_factory=dict)

    def handles(self) -> set[str]:
        return {handle for run in self.runs.values() for handle in run.handles}

    def add(self, manifest: Manifest) -> None:
        run = self.runs.get(manifest.owner.run_id)
        if run is None:
            run = self.runs[manifest.owner.run_id] = RunRecord(manifest.owner.run_id,
                                                               manifest.created_at)
        run.first = min(run.first, manifest.created_at)
        run.handles.add(manifest.handle)

    def discard(self, handles: Iterable[str]) -> None:
        gone = set(handles)
        for run_id in list(self.runs):
            self.runs[run_id].handles -= gone
            if not self.runs[run_id].handles:
                del self.runs[run_id]

    def merge(self, other: "Ledger") -> None:
        for run in other.runs.values():
            mine = self.runs.setdefault(run.run_id, RunRecord(run.run_id, run.first))
            mine.first = min(mine.first, run.first)
            mine.handles |= run.handles

    def ordered(self) -> list[RunRecord]:
        """Oldest run first."""
        return sorted(self.runs.values(), key=lambda run: (run.first, run.run_id))

    def to_document(self) -> SettledJSON:
        return {"version": SETTLED_VERSION, "runs": [
            {"run_id": run.run_id, "first": run.first, "handles": sorted(run.handles)}
            for run in self.ordered()]}

    @classmethod
    def from_document(cls, document: Any) -> "Ledger":
        """Lenient: whatever does not fit is left out (it is derived data)."""
        ledger = cls()
        if not isinstance(document, dict) or document.get("version") != SETTLED_VERSION:
            return ledger
        for run in document.get("runs") or ():
            if not (isinstance(run, dict) and isinstance(run.get("run_id"), str)
                    and isinstance(run.get("first"), str)
                    and isinstance(run.get("handles"), list)):
                continue
            # Not validated one by one (a launch reads them all): a handle listed here
            # is only ever compared with names found in the root, and any path built
            # from one goes through ``require_handle``.
            handles = {h for h in run["handles"] if isinstance(h, str)}
            if handles:
                ledger.runs[run["run_id"]] = RunRecord(run["run_id"], run["first"], handles)
        return ledger


def load_ledger(paths: ProcPaths) -> Ledger:
    """``settled.json``; empty when it is missing or unreadable."""
    try:
        raw = paths.settled.read_bytes()
        return Ledger.from_document(load_json(raw.decode("utf-8"), paths.settled))
    except (OSError, UnicodeDecodeError, ValueError, DocumentTooComplex):
        return Ledger()


def update_ledger(paths: ProcPaths, change: Callable[[Ledger], None]) -> None:
    """Re-read ``settled.json`` under its sidecar lock, ``change`` it, replace it
    (without fsyncs: see the module's docstring). An unreadable one is replaced:
    it holds nothing a scan of the manifests cannot tell again."""
    with locked(paths.settled):
        ledger = load_ledger(paths)
        change(ledger)
        write_json(paths.settled, ledger.to_document(), indent=None, mode=FILE_MODE,
                   durable=False)


def is_settled(manifest: Manifest, paths: ProcPaths) -> bool:
    """Terminal, its completion published, and no member of its tree alive."""
    return (manifest.terminal and bool(manifest.completion_published)
            and not liveness.tree_alive(paths.alive(manifest.handle)))


@dataclass(frozen=True)
class Listing:
    """One look at a process root: the handles of its manifests, and the names of
    temp files a writer killed mid-write left (``sweep_stale_temp_files``)."""

    handles: list[str]
    temp_files: list[str]


def list_root(paths: ProcPaths) -> Listing:
    """The root's manifests, from one listing of its names (no file is read)."""
    try:
        names = os.listdir(paths.root)
    except (FileNotFoundError, NotADirectoryError):
        return Listing([], [])
    size = len(MANIFEST_SUFFIX)
    handles = sorted(handle for name in names if name.endswith(MANIFEST_SUFFIX)
                     and is_valid_handle(handle := name[:-size]))
    temps = [name for name in names if name[0] == "." and name.endswith(TEMP_SUFFIX)]
    return Listing(handles, temps)


def sweep_stale_temp_files(paths: ProcPaths, names: list[str]) -> None:
    """Remove the temp files of writers killed mid-write. A manifest's (or
    ``settled.json``'s) temp file is named ``.<file>.<random>.tmp`` and written only
    under that file's sidecar lock, so one found while holding the lock is stale.
    (The stores write the root's files without a per-write sweep: a listing of a
    root with a long history per write would cost more than the write.)"""
    for name in names:
        target = name[1:].rsplit(".", 2)[0]
        if not (target.endswith(MANIFEST_SUFFIX) or target == paths.settled.name):
            continue  # another file's temp (a stop request's is written without a lock)
        with contextlib.suppress(OSError, StoreError), locked(paths.root / target, timeout=0.5):
            (paths.root / name).unlink()


@dataclass
class PruneReport:
    #: The processes removed (with ``dry_run``: that would be removed), oldest first.
    removed: list[Manifest] = field(default_factory=list)
    #: Settled processes of older runs left in place: lost, or marked to keep.
    kept: list[Manifest] = field(default_factory=list)
    errors: list[tuple[str, ProcessError]] = field(default_factory=list)


def refresh(store: ManifestStore, ledger: Ledger, listing: Listing,
            skip: Iterable[str] = ()) -> tuple[Ledger, list[tuple[str, ProcessError]]]:
    """The manifests ``ledger`` does not list yet that are settled now (read-only)."""
    found = Ledger()
    errors: list[tuple[str, ProcessError]] = []
    known, skipped = ledger.handles(), set(skip)
    for handle in listing.handles:
        if handle in known or handle in skipped:
            continue
        try:
            manifest = store.load(handle)
        except ProcessError as exc:
            if exc.code != "not_found":
                errors.append((handle, exc))
            continue
        if is_settled(manifest, store.paths):
            found.add(manifest)
    return found, errors


def prune(store: ManifestStore, spool_paths: ProcPaths, keep_runs: int, *,
          dry_run: bool = False, skip: Iterable[str] = ()) -> PruneReport:
    """Remove the settled processes of all but the ``keep_runs`` most recent runs
    (lost ones and ones marked to keep excepted). ``skip``: handles a live
    supervisor holds. With ``dry_run`` nothing changes; the report says what would."""
    if keep_runs < 1:
        raise ProcessError("invalid_arguments", "keep_runs must be at least 1")
    paths = store.paths
    report = PruneReport()
    listing = list_root(paths)
    ledger = load_ledger(paths)
    found, report.errors = refresh(store, ledger, listing, skip)
    ledger.merge(found)
    present = set(listing.handles)
    vanished = ledger.handles() - present  # removed by hand, or a prune cut short
    runs = ledger.ordered()
    old = runs[:max(0, len(runs) - keep_runs)]
    candidates = sorted((handle for run in old for handle in run.handles if handle in present),
                        key=lambda handle: (ledger_first(ledger, handle), handle))
    removed: list[str] = []
    for handle in candidates:
        try:
            manifest = store.load(handle)
        except ProcessError as exc:
            if exc.code != "not_found":
                report.errors.append((handle, exc))
            continue
        if not is_settled(manifest, paths):
            continue  # never listed wrongly, but never trusted blindly either
        if manifest.state == State.LOST_ON_RESTORE or paths.keep(handle).exists():
            report.kept.append(manifest)
            continue
        report.removed.append(manifest)
        if dry_run:
            continue
        try:
            remove_process(paths, spool_paths, handle)
        except ProcessError as exc:
            report.errors.append((handle, exc))
            continue
        removed.append(handle)
    if dry_run:
        return report
    for handle in vanished:
        with contextlib.suppress(ProcessError):
            remove_process(paths, spool_paths, handle)  # the files a cut-short prune left
    gone = set(removed) | vanished
    if found.runs or gone:
        def change(current: Ledger) -> None:
            current.merge(found)
            current.discard(gone)

        try:
            update_ledger(paths, change)
        except StoreError as exc:
            report.errors.append(("settled.json", ProcessError("process_setup_failed",
                                                              exc.message)))
    return report


def ledger_first(ledger: Ledger, handle: str) -> str:
    return next((run.first for run in ledger.runs.values() if handle in run.handles), "")


def remove_process(paths: ProcPaths, spool_paths: ProcPaths, handle: str) -> None:
    """Delete one process: its manifest first (from then on nothing lists it), then
    its spool and the small files around it."""
    try:
        with contextlib.suppress(FileNotFoundError):
            paths.manifest(handle).unlink()
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(spool_paths.spool(handle))
        for path in (paths.alive(handle), paths.stop_request(handle), paths.keep(handle),
                     sidecar_lock_path(paths.manifest(handle))):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    except OSError as exc:
        raise ProcessError("teardown_failed",
                           f"cannot remove process {handle}: {os_error_text(exc)}") from exc


def mark_keep(paths: ProcPaths, handle: str, keep: bool = True) -> None:
    """Keep ``handle`` whatever its run's age (``keep=False``: let prune have it
    again). Durable: a mark lost in a power cut would let a prune delete output
    someone still needs."""
    path = paths.keep(handle)
    if not paths.manifest(handle).exists():
        raise ProcessError("not_found", "no such process handle")
    if keep:
        try:
            atomic_write(path, b"", mode=FILE_MODE)
        except StoreError as exc:
            raise ProcessError("process_setup_failed", exc.message) from exc
        return
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
