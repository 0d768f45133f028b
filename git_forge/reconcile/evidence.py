"""What a prior run left behind to attribute stranded work by.

``state.json`` gives the run's base commit and the item in flight (set for the
duration of an iteration); ``events.ndjson`` gives the same from the journal:
the latest ``item_selected`` / ``llm_spawned`` without a matching
``llm_exited``. Both are *evidence*, read tolerantly: a missing or unreadable
state.json makes every stranded path unattributed rather than stopping anything.

It lives with attribution, its only reader, and reads the loop's files through
the loop's own readers (``read_state``, ``Journal``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from git_forge.errors import StoreError
from git_forge.layout import EVENTS_FILE
from git_forge.loop.journal import Journal
from git_forge.loop.state import StateNotAnObject, read_state


@dataclass(frozen=True)
class Evidence:
    """What the prior run left to attribute by (state.json, events.ndjson)."""

    base_commit: str | None = None
    in_flight: str | None = None
    citations: tuple[str, ...] = ()
    problem: str | None = None
    #: No state.json: no run has happened yet, so there is nothing to attribute and
    #: nothing wrong with that (not "evidence unusable").
    no_run: bool = False

    @property
    def usable(self) -> bool:
        return self.problem is None and (self.base_commit is not None or
                                         self.in_flight is not None)


def in_flight_from_events(events: list[dict[str, object]]) -> str | None:
    """The item of the latest selection or spawn that no ``llm_exited`` followed."""
    in_flight: str | None = None
    for event in events:
        kind, item = event.get("type"), event.get("itemId")
        if kind in ("item_selected", "llm_spawned") and item is not None:
            in_flight = str(item)
        elif kind == "llm_exited" and item is not None and str(item) == in_flight:
            in_flight = None
    return in_flight


def gather(state_dir: Path) -> Evidence:
    """The prior run's evidence, with a citation for each fact used."""
    try:
        state = read_state(state_dir)
    except StateNotAnObject:
        return Evidence(problem="state.json is not a JSON object")
    except StoreError as exc:
        return Evidence(problem=f"state.json unreadable: {exc.message}")
    if state is None:
        return Evidence(no_run=True)
    base = state.base_commit_hash
    current = state.current_item
    citations = [f"state.json: run {state.run_id or '?'} started "
                 f"{state.started_at or '?'}, base commit "
                 f"{base[:12] if base else 'none'}, item in flight "
                 f"{current if current is not None else 'none'}"]
    events = Journal(Path(state_dir) / EVENTS_FILE, state_dir).read()
    from_events = in_flight_from_events(events)
    if from_events is not None:
        citations.append(f"events.ndjson: item {from_events} was selected and never exited")
    in_flight = current if current is not None else from_events
    return Evidence(base_commit=base, in_flight=in_flight, citations=tuple(citations))
