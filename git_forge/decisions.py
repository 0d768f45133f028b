"""The decision record: ``forge-decisions.json``, byte-compatible with feature-forge.

The record is the durable memory of the post-run recovery procedure: every
answer, deferral and cancel-early an operator gives is appended here *before*
anything acts on it, so a crash, a closed terminal or a new session never costs
a decision. It is append-only — the single permitted edit is stamping
``appliedAt``/``appliedBy`` on an item's latest entry once the runner accepted it.

Byte compatibility with feature-forge's ``decision-*`` verbs: 2-space indent,
``ensure_ascii=False``, trailing newline, top-level keys ``schemaVersion``,
``feature``, ``createdAt``, ``decisions``, ``updatedAt`` and entry keys in the
order ``_new_entry`` builds them. Timestamps are UTC, second precision, ``Z``.
"""

import json
import os
from itertools import repeat
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple, NotRequired, TypedDict, cast

from git_forge.clock import wire_now
from git_forge.credentials import credential_refusal
from git_forge.errors import ForgeError, StoreError
from git_forge.jsonfile import read_json, update_json
from git_forge.layout import DECISIONS_FILE, state_directory
from git_forge.locks import host_name
from git_forge.parsing import DocumentTooComplex, check_depth

SCHEMA_VERSION = "1"
#: The record may hold operator text; only its owner reads it.
RECORD_MODE = 0o600


class DecisionError(ForgeError):
    """A decision-record refusal (exit 2): bad input, unknown item, corrupt record."""


class DecisionJSON(TypedDict):
    """One entry of the record, keys in the order ``_new_entry`` writes them."""

    itemId: str
    question: str
    answer: str | None
    deferred: bool
    decidedAt: str
    recordedBy: str
    appliedAt: str | None
    appliedBy: str | None
    clusterId: NotRequired[str]


class DecisionRecordJSON(TypedDict):
    """``forge-decisions.json`` (formats.md; ``schemas/forge-decisions.schema.json``).
    A record read is checked for what every reader relies on (``_check_document``:
    ``decisions``, each entry's ``itemId``); readers take the other fields with
    ``get``, as another writer's record may lack them."""

    schemaVersion: str
    feature: str
    createdAt: str
    decisions: list[DecisionJSON]
    updatedAt: str


class NoRecordJSON(TypedDict):
    """``decision list --json`` when nothing was ever recorded."""

    decisions: list[DecisionJSON]


class UnappliedJSON(TypedDict):
    """``decision list --unapplied --json``."""

    feature: str | None
    unapplied: list[DecisionJSON]
    count: int


def default_actor() -> str:
    """``git-forge@<host>``: a machine label, never a person's identity."""
    return f"git-forge@{host_name()}"


class DecisionRecord(NamedTuple):
    """The record file of one backlog directory."""

    backlog_dir: Path
    path: Path

    @property
    def feature(self) -> str:
        """The record's ``feature``: the backlog directory's basename."""
        return self.backlog_dir.resolve().name


def open_record(backlog_dir: Path | str, state_dir: str) -> DecisionRecord:
    """Locate the record of ``backlog_dir``; the directory must exist."""
    backlog_dir = Path(backlog_dir)
    if not backlog_dir.is_dir():
        raise DecisionError(f"no backlog directory at {backlog_dir} "
                            "(git forge init sets one up)")
    state = state_directory(backlog_dir, state_dir)
    # A name in the backlog dir, or "" (the dir itself): never a way out of it. Read
    # as written (a state dir that is a symlink is the operator's layout, as
    # ``workspace.locate`` takes it).
    if os.path.relpath(os.path.normpath(state), os.path.normpath(backlog_dir)).split(
            os.sep, 1)[0] == os.pardir:
        raise DecisionError(f"the state dir {state} is outside the backlog dir {backlog_dir}")
    return DecisionRecord(backlog_dir, state / DECISIONS_FILE)


def _check_document(path: Path, document: Any) -> DecisionRecordJSON:
    """Refuse a record whose shape we cannot safely append to or read from."""
    if not isinstance(document, dict):
        raise StoreError(f"{path} is corrupt (not a JSON object); refusing to touch it")
    decisions = document.get("decisions")
    # Each entry a JSON object with a string itemId, checked by C loops (``map``):
    # a parsed document holds plain dicts and strs, never subclasses.
    if not isinstance(decisions, list) or not {dict}.issuperset(map(type, decisions)) or not (
        {str}.issuperset(map(type, map(dict.get, decisions, repeat("itemId"))))
    ):
        raise StoreError(
            f"{path} is corrupt (\"decisions\" is not a list of entries with an itemId);"
            " refusing to touch it"
        )
    return cast(DecisionRecordJSON, document)  # checked just above


def _new_entry(
    item_id: str,
    question: str,
    answer: str | None,
    cluster_id: str | None,
    actor: str,
    decided_at: str,
) -> DecisionJSON:
    entry: DecisionJSON = {
        "itemId": item_id,
        "question": question,
        "answer": answer,
        "deferred": answer is None,
        "decidedAt": decided_at,
        "recordedBy": actor,
        "appliedAt": None,
        "appliedBy": None,
    }
    if cluster_id is not None:
        entry["clusterId"] = cluster_id
    return entry


def _stamp(document: DecisionRecordJSON) -> DecisionRecordJSON:
    document["updatedAt"] = wire_now()
    return document


class NewDecision(NamedTuple):
    """One entry to append: an answer, or a deferral when ``answer`` is None."""

    item_id: str
    question: str
    answer: str | None = None
    cluster_id: str | None = None


def record(
    rec: DecisionRecord,
    item_ids: list[str],
    question: str,
    *,
    answer: str | None = None,
    deferred: bool = False,
    cluster_id: str | None = None,
    actor: str | None = None,
) -> DecisionRecordJSON:
    """Append one entry per item id (in the given order); return the document.

    Exactly one of ``answer`` / ``deferred`` (the ``decision record`` verb's rule).
    """
    if deferred == (answer is not None):
        raise DecisionError("exactly one of --answer or --deferred is required")
    if not item_ids:
        raise DecisionError("at least one --item is required")
    return record_all(
        rec, [NewDecision(item_id, question, answer, cluster_id) for item_id in item_ids],
        actor=actor,
    )


def record_all(
    rec: DecisionRecord, entries: list[NewDecision], *, actor: str | None = None
) -> DecisionRecordJSON:
    """Append ``entries`` in one atomic write (all or none); return the document.

    A credential-looking answer is refused before anything is written.
    """
    for entry in entries:
        if not entry.item_id:
            raise DecisionError("an item id may not be empty")
        refusal = credential_refusal(entry.answer, f"to record the answer for {entry.item_id}")
        if refusal:
            raise DecisionError(refusal)
    actor = actor or default_actor()
    rec.path.parent.mkdir(parents=True, exist_ok=True)

    def append(current: Any) -> DecisionRecordJSON:
        if current is None:
            created = wire_now()
            document: DecisionRecordJSON = {
                "schemaVersion": SCHEMA_VERSION,
                "feature": rec.feature,
                "createdAt": created,
                "decisions": [],
                "updatedAt": created,  # stamped again below, in its place
            }
        else:
            document = _check_document(rec.path, current)
        decided_at = wire_now()
        for entry in entries:
            document["decisions"].append(_new_entry(
                entry.item_id, entry.question, entry.answer, entry.cluster_id, actor, decided_at
            ))
        return _stamp(document)

    return update_json(rec.path, append, mode=RECORD_MODE)


def load(rec: DecisionRecord, *, limit_depth: bool = True) -> DecisionRecordJSON | None:
    """The whole document, or ``None`` when nothing was ever recorded
    (``limit_depth``: see ``parsing.load_json``)."""
    document = read_json(rec.path, default=None, limit_depth=limit_depth)
    if document is None:
        if rec.path.exists():
            raise StoreError(f"{rec.path} is corrupt (it holds JSON null); refusing to touch it")
        return None
    return _check_document(rec.path, document)


def latest_entries(decisions: list[DecisionJSON]) -> dict[str, DecisionJSON]:
    """The latest entry per item (stored order is chronological: a later key wins)."""
    return dict(zip(map(itemgetter("itemId"), decisions), decisions, strict=True))


def unapplied_entries(decisions: list[DecisionJSON]) -> list[DecisionJSON]:
    """Latest entry per item whose ``appliedAt`` is null, deferrals included,
    sorted by item id *as strings* (so "10" < "2" < "9")."""
    latest = latest_entries(decisions)
    return [latest[item] for item in sorted(latest) if latest[item].get("appliedAt") is None]


def list_view(rec: DecisionRecord) -> DecisionRecordJSON | NoRecordJSON:
    """``decision list``: the document as stored, or ``{"decisions": []}``."""
    document = load(rec)
    if document is None:
        return {"decisions": []}
    return document


def unapplied_view(rec: DecisionRecord, *, writing: bool = False) -> UnappliedJSON:
    """``decision list --unapplied``: ``{feature, unapplied, count}``. Of a record
    of thousands of entries it walks only the latest ones it returns: their depth
    is checked, not that of every entry before them, which nothing here walks (the
    record's shape is checked whole, as for every reader). ``writing``: the caller
    appends to the record later (``recover``), so the whole record is checked now,
    as that write will check it — a record it could not write is refused before
    any question is asked."""
    document = load(rec, limit_depth=writing)
    if document is None:
        return {"feature": rec.feature, "unapplied": [], "count": 0}
    pending = unapplied_entries(document["decisions"])
    view: UnappliedJSON = {"feature": document.get("feature"), "unapplied": pending,
                           "count": len(pending)}
    if writing:
        return view
    try:
        check_depth(view, rec.path)
    except DocumentTooComplex as exc:  # worded as every reader of the file words it
        raise StoreError(exc.message) from exc
    return view


def apply(rec: DecisionRecord, item_id: str, *,
          actor: str | None = None) -> DecisionRecordJSON:
    """Stamp ``appliedAt``/``appliedBy`` on the item's latest entry.

    Call this only after the runner accepted the change: a stamped entry means
    the runner really has it.
    """
    return apply_all(rec, [item_id], actor=actor)


def apply_all(
    rec: DecisionRecord, item_ids: list[str], *, actor: str | None = None
) -> DecisionRecordJSON:
    """``apply`` for several items in one atomic write, all or none: an item with
    no unapplied latest entry is refused (naming it) before anything is stamped."""
    if not item_ids:
        raise DecisionError("at least one item id is required")
    actor = actor or default_actor()

    def stamp(current: Any) -> DecisionRecordJSON:
        if current is None:
            raise DecisionError(f"no decision recorded for item {item_ids[0]!r}")
        document = _check_document(rec.path, current)
        latest = latest_entries(document["decisions"])
        applied_at = wire_now()
        for item_id in item_ids:
            entry = latest.get(item_id)
            if entry is None:
                raise DecisionError(f"no decision recorded for item {item_id!r}")
            if entry.get("appliedAt") is not None:
                raise DecisionError(
                    f"latest decision for item {item_id!r} is already applied "
                    f"(at {entry['appliedAt']}) — nothing unapplied"
                )
            entry["appliedAt"] = applied_at
            entry["appliedBy"] = actor
        return _stamp(document)

    if not rec.path.exists():
        raise DecisionError(f"no decision recorded for item {item_ids[0]!r}")
    return update_json(rec.path, stamp, mode=RECORD_MODE)


#: What makes an entry the one a caller read or recorded (``appliedAt`` aside).
_IDENTITY = ("itemId", "question", "answer", "deferred", "decidedAt", "recordedBy", "clusterId")


def _identity(entry: DecisionJSON) -> tuple[Any, ...]:
    """``_IDENTITY``'s values as a dictionary key: two entries are the same one when
    their keys are equal (a value JSON cannot hash is compared by its text)."""
    return tuple(_hashable(entry.get(key)) for key in _IDENTITY)


def _hashable(value: Any) -> Any:
    if isinstance(value, dict | list):
        return ("json", json.dumps(value, sort_keys=True))
    return value


def apply_entries(
    rec: DecisionRecord, entries: list[DecisionJSON], *, actor: str | None = None
) -> DecisionRecordJSON:
    """Stamp exactly ``entries`` — answers as the caller recorded or read them, and
    then gave to the runner — in one atomic write, all or none.

    Unlike ``apply_all`` this never stamps whatever happens to be an item's latest
    entry: a deferral or another answer recorded meanwhile (by another process) is
    left unapplied, so it surfaces again, and an entry that is no longer in the
    record unapplied is refused, naming its item, before anything is stamped.
    """
    if not entries:
        raise DecisionError("at least one entry is required")
    actor = actor or default_actor()

    def stamp(current: Any) -> DecisionRecordJSON:
        if current is None:
            raise DecisionError(f"no decision recorded for item {entries[0]['itemId']!r}")
        document = _check_document(rec.path, current)
        applied_at = wire_now()
        unapplied: dict[tuple[Any, ...], list[DecisionJSON]] = {}
        for entry in reversed(document["decisions"]):  # the newest match is taken first
            if entry.get("appliedAt") is None:
                unapplied.setdefault(_identity(entry), []).append(entry)
        found: list[DecisionJSON] = []
        for expected in entries:
            candidates = unapplied.get(_identity(expected))
            match = candidates.pop(0) if candidates else None
            if match is None or match.get("answer") is None:
                raise DecisionError(
                    f"item {expected['itemId']!r}: the decision to stamp (recorded "
                    f"{expected.get('decidedAt')}) is not an unapplied answer in {rec.path}")
            found.append(match)
        for entry in found:
            entry["appliedAt"] = applied_at
            entry["appliedBy"] = actor
        return _stamp(document)

    if not rec.path.exists():
        raise DecisionError(f"no decision recorded for item {entries[0]['itemId']!r}")
    return update_json(rec.path, stamp, mode=RECORD_MODE)

