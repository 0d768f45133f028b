"""The receipts ledger, ``{stateDir}/receipts.json``: what each item and each run
has cost so far, summed from the receipt of every agent start (retries included).

Each receipt itself is kept with its process (the manifest's ``receipt``, the
journal's ``llm_exited``), but manifests are pruned and journals rotated, so the
sums live here: ``status``, the loop's summary and recover's questions read one
small file instead of every manifest ever kept. The loop adds each receipt under
the file's sidecar lock (``LedgerWriter``: written compact, and parsed again only
when another writer changed it); a corrupt ledger is refused, never overwritten.

``{"schemaVersion": "1", "items": {id: Totals}, "runs": {runId: {"totals":
Totals, "items": {id: Totals}}}}`` — a Totals object is ``agents.receipt.Totals``'
JSON (attempts, durationMs, tokens, costUsd: ``null`` while no agent reported one).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from git_forge.agents.receipt import Receipt, Totals
from git_forge.errors import StoreError
from git_forge.jsonfile import read_json, update_json
from git_forge.layout import RECEIPTS_FILE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = "1"
#: Runs kept in the ledger (the oldest go first); items are kept for good.
KEEP_RUNS = 50


class Ledger:
    """The ledger as read (a plain class: no ``import dataclasses`` on status's path)."""

    __slots__ = ("items", "runs")

    def __init__(self, items: dict[str, Totals] | None = None,
                 runs: dict[str, tuple[Totals, dict[str, Totals]]] | None = None) -> None:
        self.items: dict[str, Totals] = {} if items is None else items
        #: runId → (the run's totals, its items' totals), oldest first.
        self.runs: dict[str, tuple[Totals, dict[str, Totals]]] = {} if runs is None else runs

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


def check_ledger(state_dir: Path) -> None:
    """A ``StoreError`` when the ledger is corrupt (a run refuses it before any work:
    it is never rewritten); nothing is built from what it holds."""
    read_json(ledger_path(state_dir), default=None)


def run_totals(state_dir: Path, run_id: str | None) -> tuple[Totals, dict[str, Totals]]:
    """One run's totals and its items' (``Ledger.run``), read without a ``Totals`` for
    every item the ledger ever summed: items are kept for good, so a long-lived
    project's ledger holds thousands that a run's summary never shows. A
    ``StoreError`` when the ledger is corrupt."""
    document = read_json(ledger_path(state_dir), default=None)
    return _run_of(_object(_object(document).get("runs")).get(run_id or ""))


def _run_of(entry: Any) -> tuple[Totals, dict[str, Totals]]:
    """A run's member of the ledger: its totals and its items' (none for what is not
    an object)."""
    if not isinstance(entry, dict):
        return Totals(), {}
    return Totals.from_json(entry.get("totals")), _totals_map(entry.get("items"))


def _ledger_of(document: Any) -> Ledger:
    if not isinstance(document, dict):
        return Ledger()
    runs: dict[str, tuple[Totals, dict[str, Totals]]] = {}
    found = document.get("runs")
    for run_id, entry in (found.items() if isinstance(found, dict) else ()):
        if isinstance(entry, dict):
            runs[str(run_id)] = _run_of(entry)
    return Ledger(_totals_map(document.get("items")), runs)


def _add(document: dict[str, Any], run_id: str, item_id: str, receipt: Receipt) -> None:
    """Add one receipt to its item and its run, in place."""
    items = document["items"] = _object(document.get("items"))
    runs = document["runs"] = _object(document.get("runs"))
    items[item_id] = Totals.from_json(items.get(item_id)).add(receipt).to_json()
    run = _object(runs.pop(run_id, None))
    run_items = _object(run.get("items"))
    run_items[item_id] = Totals.from_json(run_items.get(item_id)).add(receipt).to_json()
    runs[run_id] = {"totals": Totals.from_json(run.get("totals")).add(receipt).to_json(),
                    "items": run_items}
    for old in list(runs)[:-KEEP_RUNS]:
        del runs[old]


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _member(key: str, value: Any) -> str:
    """``"key":value`` as a compact object holds it."""
    return _compact(key) + ":" + _compact(value)


class LedgerWriter:
    """The running loop's side of the ledger: it adds every receipt of its run, so
    it keeps the document it last wrote, parses the file again only when its bytes
    are not the ones written, and encodes again only what a receipt changed — an
    item's totals and its run's. The other members keep their text, in the
    document's own order, so a receipt costs a join, not an encode of every item
    the ledger ever summed. The file is compact JSON, byte for byte what
    ``json.dumps`` gives for it."""

    def __init__(self, state_dir: Path) -> None:
        self.path = ledger_path(state_dir)
        #: The bytes last written and their document, which the texts below belong to.
        self._known: tuple[bytes, Any] | None = None
        #: Member texts in the document's order: ``items``' and, per run, its items'.
        self._items: dict[str, str] | None = None
        self._run_items: dict[str, dict[str, str]] = {}

    def record(self, run_id: str, item_id: str, receipt: Receipt) -> None:
        """Add one agent start's receipt to its item and its run (under the file's
        sidecar lock; a corrupt ledger is refused, never overwritten)."""
        written: list[bytes] = []
        known, self._known = self._known, None  # a failure below must not leave it

        def add(current: Any) -> dict[str, Any]:
            document = current if isinstance(current, dict) else {}
            if known is None or document is not known[1]:  # read afresh: no text is known
                self._items, self._run_items = None, {}
            _add(document, run_id, item_id, receipt)
            # A changed member keeps its place, a new one goes last: as in the dicts.
            if self._items is not None:
                self._items[item_id] = _member(item_id, document["items"][item_id])
            run_texts = self._run_items.get(run_id)
            if run_texts is not None:
                run_texts[item_id] = _member(item_id, document["runs"][run_id]["items"][item_id])
            return {"schemaVersion": SCHEMA_VERSION, "items": document["items"],
                    "runs": document["runs"]}

        document = update_json(self.path, add, durable=False, known=known,
                               on_write=written.append, encode=self._encode)
        self._known = (written[0], document)

    def _encode(self, document: dict[str, Any]) -> bytes:
        if self._items is None:
            self._items = {key: _member(key, value) for key, value in document["items"].items()}
        runs = document["runs"]
        for gone in [run_id for run_id in self._run_items if run_id not in runs]:
            del self._run_items[gone]
        parts = [self._run_text(run_id, entry) for run_id, entry in runs.items()]
        return ('{"schemaVersion":' + _compact(document["schemaVersion"]) + ',"items":{'
                + ",".join(self._items.values()) + '},"runs":{' + ",".join(parts)
                + "}}\n").encode("utf-8")

    def _run_text(self, run_id: str, entry: Any) -> str:
        """A run's member; its items' texts kept for the next receipt of the run."""
        if not (isinstance(entry, dict) and list(entry) == ["totals", "items"]
                and isinstance(entry["items"], dict)):
            return _member(run_id, entry)  # not as this writer lays it out: encoded whole
        texts = self._run_items.get(run_id)
        if texts is None:
            texts = self._run_items[run_id] = {key: _member(key, value)
                                               for key, value in entry["items"].items()}
        return (_compact(run_id) + ':{"totals":' + _compact(entry["totals"]) + ',"items":{'
                + ",".join(texts.values()) + "}}")


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def run_costs_json(state_dir: Path, run_id: str | None) -> dict[str, Any] | None:
    """``costs_json``'s ``run`` alone (``run_totals``: what the text of ``status``
    shows); a ``StoreError`` when the ledger is corrupt."""
    totals = run_totals(state_dir, run_id)[0]
    return totals.to_json() if totals.attempts else None


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
        document = read_json(ledger_path(state_dir), default=None)
    except StoreError:
        return {}
    items = _object(_object(document).get("items"))
    return {item_id: totals.describe() for item_id in item_ids
            if reported(totals := Totals.from_json(items.get(item_id)))}
