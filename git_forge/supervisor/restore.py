"""Restore is reconciliation, not reattachment.

After the supervising process died, its children are not ours any more: we
never read a PID and never signal anything. Each tree's liveness lock tells
whether it is provably gone: a manifest left ``starting`` or ``running``
whose tree still holds its lock (its watchdog failed, or a process escaped)
is an *orphan* — reported, left ``running``, never claimed lost. One whose
tree is gone is durably changed to ``lost_on_restore`` (cursors refreshed from
the spool's durable bytes) *before* its ``lost`` event and completion
notification go out with the ids persisted at start. A terminal manifest is
reopened read-only, and its completion is published again if the crash came
between the terminal save and the publication. One unreadable manifest or
spool is reported and the others continue. Restoring twice publishes nothing
new: the marker is set, and the journal deduplicates by event id anyway.

Restore reads only the manifests that may still need it: those ``settled.json``
does not list (``retention``). A manifest it finds settled — terminal, its
completion already published, its tree gone, its spool readable — is added
there, so the next restore skips it: a launch costs one listing of the root's
names plus the processes since the last launch, whatever the history.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from git_forge.errors import StoreError
from git_forge.supervisor import liveness, retention
from git_forge.supervisor.lifecycle import REASONS, ProcessError, State
from git_forge.supervisor.manifest import Cursors, Manifest, ManifestStore, Result, finish_time
from git_forge.supervisor.paths import ProcPaths
from git_forge.supervisor.publication import (
    CompletionNotifier,
    LifecyclePublisher,
    publish_completion,
)
from git_forge.supervisor.requests import discard_stop_request
from git_forge.supervisor.spool import Extent, SpoolReader


@dataclass(frozen=True)
class RestoreError:
    handle: str
    error: BaseException


@dataclass
class RestoreReport:
    #: Manifests that were starting/running and are now ``lost_on_restore``.
    reconciled: list[Manifest] = field(default_factory=list)
    #: Terminal manifests reopened for read-only queries.
    reopened: list[Manifest] = field(default_factory=list)
    #: Handles whose completion was published by this restore.
    published: list[str] = field(default_factory=list)
    errors: list[RestoreError] = field(default_factory=list)
    #: Manifests whose process tree is still alive with nobody supervising it.
    orphans: list[Manifest] = field(default_factory=list)


def _refreshed(manifest: Manifest, extent: Extent | None) -> Cursors:
    cursors = manifest.cursors
    if extent is None:
        return cursors
    return Cursors(
        total_bytes=max(cursors.total_bytes, extent.total_bytes),
        retained_from=max(cursors.retained_from, min(extent.retained_from, extent.total_bytes)),
    )


def reconcile(
    store: ManifestStore,
    spool_paths: ProcPaths,
    lifecycle: LifecyclePublisher | None,
    notifications: CompletionNotifier | None,
    *,
    skip: Iterable[str] = (),
) -> RestoreReport:
    """Reconcile every manifest under ``store`` except the ``skip`` handles (live ones)."""
    report = RestoreReport()
    skipped = set(skip)
    paths = store.paths
    listing = retention.list_root(paths)
    retention.sweep_stale_temp_files(paths, listing.temp_files)
    skipped |= retention.load_ledger(paths).handles()
    settled = retention.Ledger()
    for handle in listing.handles:
        if handle in skipped:
            continue
        try:
            manifest = store.load(handle)
        except ProcessError as exc:
            if exc.code != "not_found":
                report.errors.append(RestoreError(handle, exc))
            continue
        errors_before = len(report.errors)
        alive_path = store.paths.alive(handle)
        if liveness.tree_alive(alive_path):
            report.orphans.append(manifest)  # a terminal one: a process escaped its tree
            if not manifest.terminal:
                continue
        else:
            liveness.forget(alive_path)
        discard_stop_request(store.paths, handle)
        extent: Extent | None = None
        try:
            extent = SpoolReader(spool_paths.spool(handle)).extent()
        except ProcessError as exc:
            report.errors.append(RestoreError(handle, exc))
        if manifest.terminal:
            if extent is not None and extent.total_bytes < manifest.cursors.total_bytes:
                report.errors.append(RestoreError(handle, ProcessError(
                    "spool_corrupt", "the spool holds fewer bytes than the manifest records"
                )))
            report.reopened.append(manifest)
            if len(report.errors) == errors_before and retention.is_settled(manifest, paths):
                settled.add(manifest)
        else:
            lost = manifest.evolve(
                state=State.LOST_ON_RESTORE,
                finished_at=finish_time(manifest.created_at),
                result=Result(reason=REASONS[State.LOST_ON_RESTORE]),
                cursors=_refreshed(manifest, extent),
            )
            try:
                store.save(lost)
            except ProcessError as exc:
                report.errors.append(RestoreError(handle, exc))
                continue
            manifest = lost
            report.reconciled.append(manifest)
        if manifest.completion_published == 0:
            errors: list[BaseException] = []
            published = publish_completion(manifest, store, lifecycle, notifications, errors)
            report.errors.extend(RestoreError(handle, error) for error in errors)
            if not errors:
                report.published.append(handle)
            _replace(report, published)
    if settled.runs:
        try:
            retention.update_ledger(paths, lambda ledger: ledger.merge(settled))
        except StoreError as exc:  # only a cache: the next restore reads them again
            report.errors.append(RestoreError(paths.settled.name, exc))
    return report


def _replace(report: RestoreReport, manifest: Manifest) -> None:
    for listing in (report.reconciled, report.reopened):
        for index, existing in enumerate(listing):
            if existing.handle == manifest.handle:
                listing[index] = manifest
