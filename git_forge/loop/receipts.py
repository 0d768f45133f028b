"""The receipts ledger: what each item and each run has cost so far, summed from the
receipt of every agent start (retries included).

Each receipt itself is kept with its process (the manifest's ``receipt``, the
journal's ``llm_exited``), but manifests are pruned and journals rotated, so the
sums live here: ``status``, the loop's summary and recover's questions read these
files instead of every manifest ever kept. Two files, so that what a receipt
costs to add does not grow with the project's history:

* ``{stateDir}/receipts.json`` — every run before the current one, summed:
  ``{"schemaVersion": "1", "items": {id: Totals}, "runs": {runId: {"totals":
  Totals, "items": {id: Totals}}}}`` (the last ``KEEP_RUNS`` runs; items for good).
  Written only when a run is folded into it, durably.
* ``{stateDir}/run/receipts.json`` — one run's sums, added to at every receipt
  (``LedgerWriter``, under the file's sidecar lock; its size is the run's), in the
  run's own directory, which ignores itself (its ``.gitignore``: ``*``):
  ``{"schemaVersion": "1", "runId": …, "folded": false, "totals": Totals, "items":
  {id: Totals}}``.

A Totals object is ``agents.receipt.Totals``' JSON (attempts, durationMs, tokens,
costUsd: ``null`` while no agent reported one). Both files are compact JSON, byte
for byte what ``json.dumps`` gives for them.

**Folding** (``fold_runs``, at a run's start, under the loop lock): the run file's
run is added to receipts.json, durably, and only then marked ``folded``. A run
already listed in receipts.json is never added again, so a fold cut short by a
crash between the two writes is finished by the next one, and a reader that finds
a run in both files counts it once. Readers read the run file first: a fold
between their two reads leaves the run in receipts.json, where they find it.

Only a loop holding the loop lock writes the run file, and a run's receipts come
from that run alone, so the run a writer finds there is its own or an earlier,
ended one. A corrupt file is refused, never overwritten.
"""

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple, NotRequired, TypedDict, cast

from git_forge.agents.receipt import Receipt, Totals, TotalsJSON
from git_forge.atomic import make_durable, make_ignored_dir, remove_stale_temp_files
from git_forge.errors import StoreError
from git_forge.jsonfile import read_json, read_json_bytes, read_known, update_json, write_json
from git_forge.layout import RECEIPTS_FILE, RUN_DIR, RUN_RECEIPTS_FILE
from git_forge.locks import locked

SCHEMA_VERSION = "1"
#: Runs kept in the ledger (the oldest go first); items are kept for good.
KEEP_RUNS = 50


class RunReceiptsJSON(TypedDict):
    """The run file, ``{stateDir}/run/receipts.json``, as its writer writes it (see the
    module). Read back, it is checked only to be a run's (``_is_run``) and its sums are
    read tolerantly (``Totals.from_json``)."""

    schemaVersion: str
    runId: str
    folded: bool
    totals: TotalsJSON
    items: dict[str, TotalsJSON]


class CostsJSON(TypedDict):
    """``status --json``'s ``costs``: the run's totals (``None`` when it ran no agent),
    and, unless status asked for the run's alone, its items' and every item's."""

    run: TotalsJSON | None
    runItems: NotRequired[dict[str, TotalsJSON]]
    items: NotRequired[dict[str, TotalsJSON]]


class Ledger(NamedTuple):
    """The ledger as read."""

    items: dict[str, Totals]
    #: runId → (the run's totals, its items' totals), oldest first.
    runs: dict[str, tuple[Totals, dict[str, Totals]]]

    def item(self, item_id: str) -> Totals:
        return self.items.get(item_id, Totals())

    def run(self, run_id: str | None) -> tuple[Totals, dict[str, Totals]]:
        return self.runs.get(run_id or "", (Totals(), {}))


def ledger_path(state_dir: Path) -> Path:
    return Path(state_dir) / RECEIPTS_FILE


def run_path(state_dir: Path) -> Path:
    return Path(state_dir) / RUN_DIR / RUN_RECEIPTS_FILE


#: The run directory's ignore rules: nothing in it is ever tracked.
_IGNORE = b"# git-forge's files of the current or last run: never tracked\n*\n"


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _totals_map(value: Any) -> dict[str, Totals]:
    if not isinstance(value, dict):
        return {}
    return {str(key): Totals.from_json(entry) for key, entry in value.items()}


def _run_of(entry: Any) -> tuple[Totals, dict[str, Totals]]:
    """A run's sums — a member of receipts.json's ``runs`` or the run file: its
    totals and its items' (none for what is not an object)."""
    if not isinstance(entry, dict):
        return Totals(), {}
    return Totals.from_json(entry.get("totals")), _totals_map(entry.get("items"))


def _read_run_file(state_dir: Path) -> RunReceiptsJSON | None:
    """The run file's document (``None`` when there is none); a ``StoreError`` when it
    does not parse or is not a run's sums."""
    path = run_path(state_dir)
    document = _present(read_json(path, default=None), path)
    if document is None:
        return None
    if not _is_run(document):
        raise _not_a_run(path)
    return cast(RunReceiptsJSON, document)  # a run's: its sums are read tolerantly


def _present(document: Any, path: Path) -> Any:
    """A document read with ``default=None``: ``None`` when there is no file, a
    ``StoreError`` when the file holds JSON null."""
    if document is None and path.exists():
        raise StoreError(f"{path} is corrupt (it holds JSON null); refusing to touch it")
    return document


def _is_run(document: Any) -> bool:
    """The run file's shape: a run id, and its sums as objects when there are any."""
    return (isinstance(document, dict) and isinstance(document.get("runId"), str)
            and isinstance(document.get("totals", {}), dict)
            and isinstance(document.get("items", {}), dict))


def _not_a_run(path: Path) -> StoreError:
    return StoreError(f"{path} is corrupt (not a run's receipts); refusing to touch it")


def _ledger_document(document: Any, path: Path) -> dict[str, object]:
    """receipts.json's document (an empty one when there is no file); a
    ``StoreError`` when it is not a ledger — refused, never overwritten."""
    document = _present(document, path)
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise StoreError(f"{path} is corrupt (not a receipts ledger); refusing to touch it")
    return document


def _add_run(document: dict[str, object], run: RunReceiptsJSON | None) -> bool:
    """Add the run file's ``run`` to receipts.json's ``document``, in place — its items'
    sums to theirs, itself as the latest run, the oldest dropped beyond ``KEEP_RUNS``
    — unless there is none to add: no run, one marked folded, or one the document
    already holds (once, whenever a fold is cut short). Whether it was added."""
    runs = document["runs"] = _object(document.get("runs"))
    if run is None or run.get("folded") is True or run["runId"] in runs:
        return False
    totals, run_items = _run_of(run)
    items = document["items"] = _object(document.get("items"))
    for item_id, each in run_items.items():
        items[item_id] = Totals.from_json(items.get(item_id)).merge(each).to_json()
    runs[run["runId"]] = {"totals": totals.to_json(),
                          "items": {key: each.to_json() for key, each in run_items.items()}}
    for old in list(runs)[:-KEEP_RUNS]:
        del runs[old]
    return True


def _with_current_run(state_dir: Path) -> dict[str, object]:
    """receipts.json's document with the run file's run added when it was not folded
    in yet: what every reader of the whole ledger sees. The run file is read first
    (see the module)."""
    run = _read_run_file(state_dir)
    path = ledger_path(state_dir)
    document = _ledger_document(read_json(path, default=None), path)
    _add_run(document, run)
    return document


def attempts_of(state_dir: Path, item_id: str) -> int:
    """How many agent starts of ``item_id`` every run has recorded so far, this one's
    included (0 when a ledger cannot be read: a reason then counts this run's)."""
    try:
        items = _object(_with_current_run(state_dir).get("items"))
    except StoreError:
        return 0
    return Totals.from_json(items.get(item_id)).attempts


def read_ledger(state_dir: Path) -> Ledger:
    """Every run's sums, the current one's included (empty when there are none); a
    ``StoreError`` when a file is corrupt."""
    return _ledger_of(_with_current_run(state_dir))


def check_ledger(state_dir: Path) -> tuple[bytes, Any] | None:
    """A ``StoreError`` when either file is corrupt (a run refuses it before any work:
    it is never rewritten). Returns receipts.json's bytes and document, for the run
    start's ``fold_runs``: the history is parsed once per run."""
    _read_run_file(state_dir)
    path = ledger_path(state_dir)
    found = read_json_bytes(path)
    _ledger_document(None if found is None else found[1], path)
    return found


def run_totals(state_dir: Path, run_id: str | None) -> tuple[Totals, dict[str, Totals]]:
    """One run's totals and its items' (``Ledger.run``). The current or last run's
    come from the run file alone, whatever the project's history; an earlier run's
    from receipts.json. A ``StoreError`` when a file read is corrupt."""
    run = _read_run_file(state_dir)
    if run is not None and run["runId"] == run_id:
        return _run_of(run)
    document = read_json(ledger_path(state_dir), default=None)
    return _run_of(_object(_object(document).get("runs")).get(run_id or ""))


def _ledger_of(document: Any) -> Ledger:
    if not isinstance(document, dict):
        return Ledger({}, {})
    runs: dict[str, tuple[Totals, dict[str, Totals]]] = {}
    found = document.get("runs")
    for run_id, entry in (found.items() if isinstance(found, dict) else ()):
        if isinstance(entry, dict):
            runs[str(run_id)] = _run_of(entry)
    return Ledger(_totals_map(document.get("items")), runs)


def fold_runs(state_dir: Path, known: tuple[bytes, Any] | None = None) -> None:
    """Sum the run file's run into receipts.json, once (see the module): at a run's
    start, so that the new run's file holds the new run alone. ``known``: what
    ``check_ledger`` read, used while receipts.json still holds those bytes."""
    ledger_file, run_file = ledger_path(state_dir), run_path(state_dir)
    if not run_file.exists():  # no run summed yet (only a run, under the loop lock, makes one)
        return

    with locked(ledger_file), locked(run_file):  # always in this order
        remove_stale_temp_files(run_file)
        run = _read_run_file(state_dir)
        if run is None or run.get("folded") is True:
            return
        remove_stale_temp_files(ledger_file)
        document = _ledger_document(read_known(ledger_file, known) if known is not None
                                    else read_json(ledger_file, default=None), ledger_file)
        if _add_run(document, run):
            # Durable before the mark below: a mark never outlives the sums it vouches for.
            write_json(ledger_file, {"schemaVersion": SCHEMA_VERSION,
                                     "items": document["items"], "runs": document["runs"]},
                       indent=None)
        else:  # a fold cut short after its ledger's replace, maybe before its fsyncs
            make_durable(ledger_file)
        write_json(run_file, {**run, "folded": True}, indent=None, durable=False)


class _AnotherRun(Exception):
    """The run file holds an earlier run that was not folded yet."""


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _member(key: str, value: Any) -> str:
    """``"key":value`` as a compact object holds it."""
    return _compact(key) + ":" + _compact(value)


class LedgerWriter:
    """The running loop's side of the ledger: it adds every receipt of its run to the
    run file. It keeps the document it last wrote, parses the file again only when
    its bytes are not the ones written, and encodes again only what a receipt
    changed — an item's totals and the run's; the other items keep their text, in
    the document's own order, so a receipt costs a join, not an encode of every
    item the run summed."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = Path(state_dir)
        self.path = run_path(state_dir)
        #: The bytes last written and their document, which the texts below belong to.
        self._known: tuple[bytes, Any] | None = None
        #: The run's item members' texts, in the document's order.
        self._items: dict[str, str] | None = None

    def record(self, run_id: str, item_id: str, receipt: Receipt) -> None:
        """Add one agent start's receipt to its item and its run (under the file's
        sidecar lock; a corrupt file is refused, never overwritten). A run file of an
        earlier run is folded first, as a run's start does."""
        self._add(run_id, item_id, lambda totals: totals.add(receipt))

    def record_check(self, run_id: str, item_id: str, duration_ms: int, passed: bool) -> None:
        """Add one verification gate's run after an attempt of ``item_id`` (``record``'s
        rules)."""
        self._add(run_id, item_id, lambda totals: totals.add_check(duration_ms, passed))

    def _add(self, run_id: str, item_id: str, change: Callable[[Totals], Totals]) -> None:
        try:
            self._record(run_id, item_id, change)
        except _AnotherRun:
            fold_runs(self.state_dir)
            try:
                self._record(run_id, item_id, change)
            except _AnotherRun:  # another writer, which the loop lock rules out
                raise StoreError(f"{self.path} holds another run's receipts again after "
                                 "they were folded; this one is not added") from None

    def _record(self, run_id: str, item_id: str, change: Callable[[Totals], Totals]) -> None:
        if self._known is None:  # before its first file: no project's rules know of it
            make_ignored_dir(self.path.parent, _IGNORE)
        written: list[bytes] = []
        known, self._known = self._known, None  # a failure below must not leave it

        def add(current: Any) -> RunReceiptsJSON:
            run = self._run_to_add_to(current, run_id)
            if known is None or run is not known[1]:  # read afresh: no text is known
                self._items = None
            items = _object(run.get("items"))
            items[item_id] = change(Totals.from_json(items.get(item_id))).to_json()
            if self._items is not None:  # a changed member keeps its place, a new one goes last
                self._items[item_id] = _member(item_id, items[item_id])
            return {"schemaVersion": SCHEMA_VERSION, "runId": run_id, "folded": False,
                    "totals": change(Totals.from_json(run.get("totals"))).to_json(),
                    "items": items}

        # The run's first write is durable: a file a power cut left empty would be
        # refused at every later start. The others need not be (see README, Files).
        document = update_json(self.path, add, durable=known is None, known=known,
                               on_write=written.append, encode=self._encode)
        self._known = (written[0], document)

    def _run_to_add_to(self, current: dict[str, object] | None,
                       run_id: str) -> dict[str, object]:
        """The run's sums so far: the file's when it is this run's, else none yet."""
        if current is None:
            return {}
        if not _is_run(current):
            raise _not_a_run(self.path)
        if current["runId"] != run_id:
            if current.get("folded") is not True:
                raise _AnotherRun
            return {}
        if current.get("folded") is True:  # never while its run records: see the module
            raise StoreError(f"run {run_id}'s receipts in {self.path} were summed into "
                             f"{RECEIPTS_FILE} while it ran; this one is not added")
        return current

    def _encode(self, document: RunReceiptsJSON) -> bytes:
        if self._items is None:
            self._items = {key: _member(key, value) for key, value in document["items"].items()}
        return ('{"schemaVersion":' + _compact(document["schemaVersion"]) + ',"runId":'
                + _compact(document["runId"]) + ',"folded":false,"totals":'
                + _compact(document["totals"]) + ',"items":{' + ",".join(self._items.values())
                + "}}\n").encode("utf-8")


def run_costs_json(state_dir: Path, run_id: str | None) -> TotalsJSON | None:
    """``costs_json``'s ``run`` alone (``run_totals``: what the text of ``status``
    shows); a ``StoreError`` when a file is corrupt."""
    totals = run_totals(state_dir, run_id)[0]
    return totals.to_json() if totals.attempts else None


def costs_json(ledger: Ledger, run_id: str | None) -> CostsJSON:
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
        items = _object(_with_current_run(state_dir).get("items"))
    except StoreError:
        return {}
    return {item_id: totals.describe() for item_id in item_ids
            if reported(totals := Totals.from_json(items.get(item_id)))}
