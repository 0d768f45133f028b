"""Publishing a terminal process: its lifecycle event and its completion notification.

Both carry ids that were persisted in the manifest before the process started,
so a retry (after a crash, on the next restore) publishes the same ids again
and the events journal deduplicates them. ``completion_published`` is set only
after both went out, which is what makes the retry happen at all.
"""

from __future__ import annotations

from typing import Protocol

from git_forge.supervisor.lifecycle import ProcessError, State
from git_forge.supervisor.manifest import Manifest, ManifestStore

#: ``completion_published`` of a manifest whose completion went out.
PUBLISHED = 1


class LifecyclePublisher(Protocol):
    """Receives ``started``, ``completed`` and ``lost`` with the persisted event id."""

    def publish(self, kind: str, event_id: str, manifest: Manifest) -> None: ...


class CompletionNotifier(Protocol):
    """Told once a process is terminal, with the persisted command id."""

    def notify(self, command_id: str, manifest: Manifest) -> None: ...


def lifecycle_kind(manifest: Manifest) -> tuple[str, str | None]:
    """The terminal lifecycle event of ``manifest``: (kind, persisted event id)."""
    if manifest.state == State.LOST_ON_RESTORE:
        return "lost", manifest.events.lost
    return "completed", manifest.events.completed


def publish_completion(
    manifest: Manifest,
    store: ManifestStore,
    lifecycle: LifecyclePublisher | None,
    notifications: CompletionNotifier | None,
    errors: list[BaseException],
) -> Manifest:
    """Publish, notify, then durably mark ``completion_published``.

    Failures are appended to ``errors`` and leave the marker unset, so the next
    restore publishes again. Returns the manifest as it now stands.
    """
    kind, event_id = lifecycle_kind(manifest)
    delivered = True
    if lifecycle is not None and event_id:
        try:
            lifecycle.publish(kind, event_id, manifest)
        except Exception as exc:  # a broken publisher must not break terminalization
            errors.append(exc)
            delivered = False
    if notifications is not None and manifest.events.command_id:
        try:
            notifications.notify(manifest.events.command_id, manifest)
        except Exception as exc:
            errors.append(exc)
            delivered = False
    if not delivered:
        return manifest
    marked = manifest.evolve(completion_published=PUBLISHED)
    try:
        store.save(marked)  # not fsynced: restore publishes again (``needs_fsync``)
    except ProcessError as exc:
        errors.append(exc)
        return manifest
    return marked
