"""The supervisor's lifecycle events, written to the events journal.

``started`` → ``llm_spawned``, ``completed`` → ``llm_exited``, ``lost`` →
``process_lost``; each carries the manifest's persisted lifecycle event id as
its ``eventId``, so publishing again (after a crash, on restore) is a no-op.
"""

import shlex
from typing import NotRequired, TypedDict

from git_forge.clock import parse_stamp
from git_forge.loop.control import item_of
from git_forge.loop.journal import Journal
from git_forge.supervisor.lifecycle import State
from git_forge.supervisor.manifest import Manifest


def _minutes_between(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    seconds = (parse_stamp(end) - parse_stamp(start)).total_seconds()
    return round(seconds / 60, 3)


def duration_ms(manifest: Manifest) -> int | None:
    """How long the process ran, from its start (or creation) to its finish."""
    start, end = manifest.started_at or manifest.created_at, manifest.finished_at
    if not start or not end:
        return None
    return max(0, round((parse_stamp(end) - parse_stamp(start)).total_seconds() * 1000))


class LlmSpawnedJSON(TypedDict):
    """``llm_spawned``'s fields: an agent started (or a verification gate: ``gate``)."""

    itemId: str | None
    handle: str
    command: str
    timeoutMinutes: float | None
    gate: NotRequired[str]


class LlmExitedJSON(TypedDict):
    """``llm_exited``'s fields: an agent ended (its receipt when the loop made one)."""

    itemId: str | None
    handle: str
    exitCode: int | None
    state: str
    timedOut: bool
    durationMs: int | None
    receipt: NotRequired[dict[str, object]]
    gate: NotRequired[str]


class ProcessLostJSON(TypedDict):
    """``process_lost``'s fields: an agent's process was lost (a crash, a restore)."""

    itemId: str | None
    handle: str
    gate: NotRequired[str]


def event_fields(kind: str, manifest: Manifest
                 ) -> tuple[str, LlmSpawnedJSON | LlmExitedJSON | ProcessLostJSON]:
    """The journal type and fields of one lifecycle event."""
    item_id = item_of(manifest)
    gate = manifest.origin.get("gate")
    if kind == "started":
        spawned: LlmSpawnedJSON = {
            "itemId": item_id,
            "handle": manifest.handle,
            "command": shlex.join(manifest.command.argv),
            "timeoutMinutes": _minutes_between(
                manifest.started_at or manifest.created_at, manifest.deadline
            ),
        }
        if isinstance(gate, str):  # a verification gate's process, not an agent
            spawned["gate"] = gate
        return "llm_spawned", spawned
    if kind == "completed":
        fields: LlmExitedJSON = {
            "itemId": item_id,
            "handle": manifest.handle,
            "exitCode": manifest.result.exit_code,
            "state": manifest.state,
            "timedOut": manifest.state == State.TIMED_OUT,
            "durationMs": duration_ms(manifest),
        }
        if manifest.receipt is not None:  # the iteration's receipt (loop/attempt.py)
            fields["receipt"] = manifest.receipt
        if isinstance(gate, str):
            fields["gate"] = gate
        return "llm_exited", fields
    if kind == "lost":
        lost: ProcessLostJSON = {"itemId": item_id, "handle": manifest.handle}
        if isinstance(gate, str):
            lost["gate"] = gate
        return "process_lost", lost
    raise ValueError(f"unknown lifecycle event kind {kind!r}")


class ProcessEventPublisher:
    """The supervisor's lifecycle publisher, backed by the events journal."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    def publish(self, kind: str, event_id: str, manifest: Manifest) -> None:
        event_type, fields = event_fields(kind, manifest)
        self.journal.append(event_type, event_id=event_id, **fields)
