"""The receipts ledger, ``{stateDir}/receipts.json``: what each item and each run
has cost so far, summed from the receipt of every agent start (retries included).

Each receipt itself is kept with its process (the manifest's ``receipt``, the
journal's ``llm_exited``), but manifests are pruned and journals rotated, so the
sums live here: ``status``, the loop's summary and recover's questions read one
small file instead of every manifest ever kept. The loop adds each receipt under
the file's sidecar lock; a corrupt ledger is refused, never overwritten.

``{"schemaVersion": "1", "items": {id: Totals}, "runs": {runId: {"totals":
Totals, "items": {id: Totals}}}}`` — a Totals object is ``agents.receipt.Totals``'
JSON (attempts, durationMs, tokens, costUsd: ``null`` while no agent reported one).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from git_forge.agents.receipt import Receipt, Totals
from git_forge.errors import StoreError
from git_forge.jsonfile import read_json, update_json
from git_forge.layout import RECEIPTS_FILE

SCHEMA_VERSION = "1"
#: Runs kept in the ledger (the oldest go first); items are kept for good.
KEEP_RUNS = 50


@dataclass(frozen=True)
class Ledger:
    items: dict[str, Totals] = field(default_factory=dict)
    #: runId → (the run's totals, its items' totals), oldest first.
    runs: dict[str, tuple[Totals, dict[str, Totals]]] = field(default_factory=dict)

    def item(self, item_id: str) -> Totals:
        return self.items.get(item_id, Totals())

    def run(self, run_id: str | None) -> tuple[Totals, dict[str, Totals]]:
        return self.runs.get(run_id or "", (Totals(), {}))


def ledger_path(state_dir: Path) -> Path:
    return Path(state_dir) / RECEIPTS_FILE


def _totals_map(value: Any) -> dict[str, Totals]:
    if not isinstance(value, dict):
        return {}
    return {str(key): Totals.from_json(entry) for key, entry in value.items()}


def read_ledger(state_dir: Path) -> Ledger:
    """The ledger (empty when there is none yet); a ``StoreError`` when it is corrupt."""
    return _ledger_of(read_json(ledger_path(state_dir), default=None))


def _ledger_of(document: Any) -> Ledger:
    if not isinstance(document, dict):
        return Ledger()
    runs: dict[str, tuple[Totals, dict[str, Totals]]] = {}
    found = document.get("runs")
    for run_id, entry in (found.items() if isinstance(found, dict) else ()):
        if isinstance(entry, dict):
            runs[str(run_id)] = (Totals.from_json(entry.get("totals")),
                                 _totals_map(entry.get("items")))
    return Ledger(_totals_map(document.get("items")), runs)


def record(state_dir: Path, run_id: str, item_id: str, receipt: Receipt) -> Ledger:
    """Add one agent start's receipt to its item and its run; the ledger as it now is."""

    def add(current: Any) -> dict[str, Any]:
        document = current if isinstance(current, dict) else {}
        items = _object(document.get("items"))
        runs = _object(document.get("runs"))
        items[item_id] = Totals.from_json(items.get(item_id)).add(receipt).to_json()
        run = _object(runs.pop(run_id, None))
        run_items = _object(run.get("items"))
        run_items[item_id] = Totals.from_json(run_items.get(item_id)).add(receipt).to_json()
        runs[run_id] = {"totals": Totals.from_json(run.get("totals")).add(receipt).to_json(),
                        "items": run_items}
        for old in list(runs)[:-KEEP_RUNS]:
            del runs[old]
        return {"schemaVersion": SCHEMA_VERSION, "items": items, "runs": runs}

    return _ledger_of(update_json(ledger_path(state_dir), add, durable=False))


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def costs_json(ledger: Ledger, run_id: str | None) -> dict[str, Any]:
    """``status --json``'s ``costs``: the run's totals and each item's so far."""
    run, run_items = ledger.run(run_id)
    return {"run": run.to_json() if run.attempts else None,
            "runItems": {item_id: totals.to_json() for item_id, totals in run_items.items()},
            "items": {item_id: totals.to_json() for item_id, totals in ledger.items.items()}}


def reported(totals: Totals) -> bool:
    """Whether an agent reported anything to sum (a generic agent reports nothing)."""
    return bool(totals.cost_usd is not None or totals.input_tokens or totals.output_tokens)


def spent_so_far(state_dir: Path, item_ids: Iterable[str]) -> dict[str, str]:
    """What each of ``item_ids`` has cost so far, in words (``3 attempts, 12.3k tokens
    in / 4.1k out, $0.42``), for those whose agents reported any; a ledger that
    cannot be read tells nothing."""
    try:
        ledger = read_ledger(state_dir)
    except StoreError:
        return {}
    return {item_id: totals.describe() for item_id in item_ids
            if reported(totals := ledger.item(item_id))}
