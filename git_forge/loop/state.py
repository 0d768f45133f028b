"""``state.json``: the loop's current state, rewritten at every transition.

Only the loop that holds the loop lock writes it, so a plain atomic replace is
enough (no sidecar lock). Readers — ``status``, reconciliation, the pre-launch
check, recovery — treat it as evidence, and all read it through ``read_state``,
the one parser: ``None`` for a missing file (or one holding JSON null: nothing
recorded), a ``StoreError`` for one that does not parse, and a ``RunState`` in
which a field the file lacks (or holds as something other than its type) is
``None`` — a reader says "unknown" rather than guessing a value. How a reader
degrades on the errors is its own business (``status`` reports them, evidence
readers go on without).
"""

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple, TypedDict, cast

from git_forge.clock import wire_now
from git_forge.errors import StoreError
from git_forge.jsonfile import read_json, write_json
from git_forge.layout import STATE_FILE

RUN_STATUSES = ("idle", "starting", "running", "paused_human", "complete",
                "iterations_complete", "stopped", "error")
LAST_SIGNALS = ("clean", "blocked", "needs_human", "error")


class StateNotAnObject(StoreError):
    """state.json parses, but not as an object: readers word this one themselves."""


class StateJSON(TypedDict):
    """state.json as the loop writes it (formats.md), keys in the file's order. A
    reader takes it tolerantly (``RunState.from_json``): another writer's may lack
    a field, or hold it as something else."""

    status: str | None
    iteration: int | None
    maxIterations: int | None
    currentItem: str | None
    lastSignal: str | None
    startedAt: str | None
    updatedAt: str | None
    completedItems: list[str]
    blockedItems: list[str]
    deferredItems: list[str]
    needsHumanItems: list[str]
    baseCommitHash: str | None
    runId: str | None
    error: str | None
    waitingUntil: str | None
    runningItems: list[str]
    verifyFailures: dict[str, str]
    #: ``bwrap`` when the run's agents and checks run sandboxed (``loop.sandbox``).
    sandbox: str | None


class RunState(NamedTuple):
    """The fields of state.json, in the order the file lists them. A field nobody
    set is ``None`` (the lists: empty); the loop sets every one when it starts.
    A copy with changes is ``_replace``."""

    status: str | None = None
    iteration: int | None = None
    max_iterations: int | None = None
    current_item: str | None = None
    last_signal: str | None = None
    started_at: str | None = None
    updated_at: str | None = None
    completed_items: tuple[str, ...] = ()
    blocked_items: tuple[str, ...] = ()
    deferred_items: tuple[str, ...] = ()
    needs_human_items: tuple[str, ...] = ()
    base_commit_hash: str | None = None
    run_id: str | None = None
    error: str | None = None
    #: While the run waits out an agent's usage limit (and after a run stopped
    #: at one): when it lifts, UTC. A run started before then waits too.
    waiting_until: str | None = None
    #: Every item whose agent is running (a parallel run has several); ``None``
    #: when the run set none: then it is ``current_item``'s (``running``).
    running_items: tuple[str, ...] | None = None
    #: Items whose last attempt this run failed its verification gates, with why
    #: (``loop.verify``); an item that passes them later leaves the list.
    verify_failures: tuple[tuple[str, str], ...] = ()
    #: The sandbox the run's agents and checks run in (``bwrap``); ``None``: none.
    sandbox: str | None = None

    @property
    def running(self) -> tuple[str, ...]:
        """The items whose agents are running: ``runningItems``, else ``currentItem``."""
        if self.running_items is not None:
            return self.running_items
        return (self.current_item,) if self.current_item else ()

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> "RunState":
        """The state a parsed state.json object records (tolerant, see the module)."""
        return cls(**{name: read(document.get(wire)) for name, wire, read in _FIELDS})

    def to_json(self) -> StateJSON:
        """The state.json object, camelCase keys in the file's order."""
        document: dict[str, object] = {}
        for name, wire, _ in _FIELDS:
            value = self.running if name == "running_items" else getattr(self, name)
            if name == "verify_failures":
                value = dict(self.verify_failures)
            document[wire] = list(value) if isinstance(value, tuple) else value
        return cast(StateJSON, document)  # every key of StateJSON: ``_FIELDS`` names them


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _item_id(value: object) -> str | None:
    """An item id: text, or an integer a hand-edited file may hold, as text."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return _text(value)


def _ids(value: object) -> tuple[str, ...]:
    return tuple(map(str, value)) if isinstance(value, list) else ()


def _ids_or_none(value: object) -> tuple[str, ...] | None:
    return tuple(map(str, value)) if isinstance(value, list) else None


def _reasons(value: object) -> tuple[tuple[str, str], ...]:
    """``{itemId: reason}``, the pairs whose reason is text."""
    if not isinstance(value, dict):
        return ()
    return tuple((str(key), reason) for key, reason in value.items() if isinstance(reason, str))


#: (attribute, state.json key, how a read value becomes the attribute), in file order:
#: the one place the camelCase names of state.json appear.
_FIELDS: tuple[tuple[str, str, Callable[[object], Any]], ...] = (
    ("status", "status", _text),
    ("iteration", "iteration", _count),
    ("max_iterations", "maxIterations", _count),
    ("current_item", "currentItem", _item_id),
    ("last_signal", "lastSignal", _text),
    ("started_at", "startedAt", _text),
    ("updated_at", "updatedAt", _text),
    ("completed_items", "completedItems", _ids),
    ("blocked_items", "blockedItems", _ids),
    ("deferred_items", "deferredItems", _ids),
    ("needs_human_items", "needsHumanItems", _ids),
    ("base_commit_hash", "baseCommitHash", _text),
    ("run_id", "runId", _text),
    ("error", "error", _text),
    ("waiting_until", "waitingUntil", _text),
    ("running_items", "runningItems", _ids_or_none),
    ("verify_failures", "verifyFailures", _reasons),
    ("sandbox", "sandbox", _text),
)


def state_path(state_dir: Path) -> Path:
    return Path(state_dir) / STATE_FILE


def write_state(state_dir: Path, state: RunState, *, durable: bool = True) -> RunState:
    """Replace state.json atomically with ``state`` stamped ``updatedAt`` (``durable``:
    see ``atomic_write``); the stamped state."""
    if state.status not in RUN_STATUSES:
        raise ValueError(f"unknown loop status {state.status!r}")
    if state.last_signal is not None and state.last_signal not in LAST_SIGNALS:
        raise ValueError(f"unknown last signal {state.last_signal!r}")

    stamped = state._replace(updated_at=wire_now())
    write_json(state_path(state_dir), stamped.to_json(), durable=durable)
    return stamped


def read_state(state_dir: Path) -> RunState | None:
    """The state state.json records; ``None`` when it records none (missing, or JSON
    null); a ``StoreError`` when it does not parse (``StateNotAnObject`` when it
    parses as something other than an object)."""
    path = state_path(state_dir)
    document = read_json(path, default=None)
    if document is None:
        return None
    if not isinstance(document, dict):
        raise StateNotAnObject(f"{path} is corrupt (not a JSON object)")
    return RunState.from_json(document)
