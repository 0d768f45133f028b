"""``state.json``: the loop's current state, rewritten at every transition.

Only the loop that holds the loop lock writes it, so a plain atomic replace is
enough (no sidecar lock). Readers — ``status``, reconciliation, the pre-launch
check — treat it as evidence: ``read_state`` returns ``None`` for a missing file
and raises ``StoreError`` for a corrupt one, which evidence readers degrade on.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from git_forge.clock import wire_now
from git_forge.jsonfile import read_json, write_json
from git_forge.layout import STATE_FILE

RUN_STATUSES = ("idle", "starting", "running", "paused_human", "complete",
                "iterations_complete", "stopped", "error")
LAST_SIGNALS = ("clean", "blocked", "needs_human", "error")



@dataclass
class RunState:
    """The fields of state.json, in the order the file lists them."""

    status: str = "idle"
    iteration: int = 0
    maxIterations: int = 0
    currentItem: str | None = None
    lastSignal: str | None = None
    startedAt: str | None = None
    updatedAt: str | None = None
    completedItems: list[str] = field(default_factory=list)
    blockedItems: list[str] = field(default_factory=list)
    deferredItems: list[str] = field(default_factory=list)
    needsHumanItems: list[str] = field(default_factory=list)
    baseCommitHash: str | None = None
    runId: str | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def state_path(state_dir: Path) -> Path:
    return Path(state_dir) / STATE_FILE


def write_state(state_dir: Path, state: RunState, *, durable: bool = True) -> None:
    """Stamp ``updatedAt`` and replace state.json atomically (``durable``: see
    ``atomic_write``)."""
    if state.status not in RUN_STATUSES:
        raise ValueError(f"unknown loop status {state.status!r}")
    if state.lastSignal is not None and state.lastSignal not in LAST_SIGNALS:
        raise ValueError(f"unknown last signal {state.lastSignal!r}")
    state.updatedAt = wire_now()
    write_json(state_path(state_dir), state.to_json(), durable=durable)


def read_state(state_dir: Path) -> dict[str, Any] | None:
    """The raw state.json document, ``None`` when absent (corrupt → StoreError)."""
    return read_json(state_path(state_dir), default=None)
