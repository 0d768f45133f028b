"""The backlog item: fields, validation, derived kinds, status transitions, selection.

Pure functions over plain dicts (the parsed ``backlog.json``), so the store, the
loop and the runners share one definition of what a valid item is and what a
change may do. Every mutation here works *in place* on the item dicts, which is
what keeps unknown fields and key order intact when the store rewrites the file.
Nothing here reads or writes files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from git_forge.backlog.errors import BacklogError
from git_forge.backlog.topology import cycle_through, id_key, is_selectable
from git_forge.clock import parse_stamp

SCHEMA_VERSION = "1"

ITEM_TYPES: tuple[str, ...] = ("bug", "bugfix", "refactor", "feature", "chore", "test")
STATUSES: tuple[str, ...] = ("pending", "in_progress", "done", "blocked")
PRIORITY_RANGE = range(1, 5)

#: Legal status transitions (formats.md); anything else is refused.
TRANSITIONS: dict[str, frozenset[str]] = {
    "pending": frozenset({"in_progress", "blocked"}),
    "in_progress": frozenset({"done", "blocked", "pending"}),
    "blocked": frozenset({"pending"}),
    "done": frozenset({"pending"}),
}

#: Item ids are strings of three or more digits ("001"); they are never renumbered.
ID_PATTERN = re.compile(r"^[0-9]{3,}$")
MIN_ID_WIDTH = 3

#: Fields an operator may set on an existing item with ``backlog edit``.
EDITABLE_FIELDS: tuple[str, ...] = (
    "title", "type", "priority", "description", "acceptanceCriteria", "dependsOn", "notes",
)

#: Key order of an item created by ``backlog add`` (rauf's order).
_NEW_ITEM_ORDER: tuple[str, ...] = (
    "id", "type", "priority", "title", "description", "acceptanceCriteria", "status",
    "completedAt", "dependsOn", "notes",
)


# --- validation -----------------------------------------------------------------------------


def _describe(value: Any) -> str:
    """A value as an operator would type it (JSON-ish, short)."""
    if isinstance(value, str):
        return f'"{value}"'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def _is_iso8601(value: str) -> bool:
    try:
        parse_stamp(value)
    except ValueError:
        return False
    return True


def id_problem(item_id: Any) -> str | None:
    """Why ``item_id`` is not a valid item id, or ``None``."""
    if not isinstance(item_id, str) or not ID_PATTERN.match(item_id):
        return f"invalid item id {_describe(item_id)} (expected a string of 3 or more digits)"
    return None


def type_problem(value: Any) -> str | None:
    if value not in ITEM_TYPES or not isinstance(value, str):
        return f"invalid type {_describe(value)} (expected one of {', '.join(ITEM_TYPES)})"
    return None


def priority_problem(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or value not in PRIORITY_RANGE:
        return f"invalid priority {_describe(value)} (expected an integer from 1 to 4)"
    return None


def status_problem(value: Any) -> str | None:
    if value not in STATUSES or not isinstance(value, str):
        return f"invalid status {_describe(value)} (expected one of {', '.join(STATUSES)})"
    return None


def _field_problem(item: Mapping[str, Any]) -> str | None:
    """The first problem with the fields of one item, ignoring other items."""
    for key in ("id", "type", "priority", "title", "status"):
        if key not in item:
            return f"missing required field \"{key}\""
    problem = (
        id_problem(item["id"]) or type_problem(item["type"])
        or priority_problem(item["priority"]) or status_problem(item["status"])
    )
    if problem:
        return problem
    title = item["title"]
    if not isinstance(title, str) or not title.strip():
        return f"invalid title {_describe(title)} (expected a non-empty string)"
    for key in ("description", "notes"):
        if key in item and not isinstance(item[key], str):
            return f"invalid {key} {_describe(item[key])} (expected a string)"
    for key in ("blockedReason", "humanAnswer"):
        if item.get(key) is not None and not isinstance(item[key], str):
            return f"invalid {key} {_describe(item[key])} (expected a string or null)"
    for key in ("needsHuman", "deferred"):
        if key in item and not isinstance(item[key], bool):
            return f"invalid {key} {_describe(item[key])} (expected true or false)"
    criteria = item.get("acceptanceCriteria", [])
    if not isinstance(criteria, list) or not all(isinstance(c, str) for c in criteria):
        return "invalid acceptanceCriteria (expected a list of strings)"
    completed = item.get("completedAt")
    if completed is not None and not (isinstance(completed, str) and _is_iso8601(completed)):
        return f"invalid completedAt {_describe(completed)} (expected an ISO-8601 time or null)"
    depends = item.get("dependsOn", [])
    if not isinstance(depends, list) or not all(isinstance(d, str) for d in depends):
        return "invalid dependsOn (expected a list of item ids)"
    for dependency in depends:
        if dependency == item["id"]:
            return "depends on itself"
        problem = id_problem(dependency)
        if problem:
            return f"dependsOn: {problem}"
    return None


def _where(item: Mapping[str, Any], index: int | None = None) -> str:
    """``item 004`` when the id is usable, else ``items[3]`` (position in the file)."""
    item_id = item.get("id")
    if isinstance(item_id, str) and ID_PATTERN.match(item_id):
        return f"item {item_id}"
    return f"items[{index}]" if index is not None else f"item {_describe(item_id)}"


def backlog_problem(document: Any) -> str | None:
    """Why a parsed backlog.json is not a valid backlog, or ``None``."""
    if not isinstance(document, dict):
        return "the document is not a JSON object"
    version = document.get("schemaVersion", SCHEMA_VERSION)
    if str(version) != SCHEMA_VERSION:
        return f"unsupported schemaVersion {_describe(version)} (expected \"1\")"
    for key in ("project", "description"):
        if key in document and not isinstance(document[key], str):
            return f"invalid {key} {_describe(document[key])} (expected a string)"
    items = document.get("items")
    if not isinstance(items, list):
        return "\"items\" is not a list"
    seen: set[str] = set()
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            return f"items[{index}] is not an object"
        problem = _field_problem(item)
        if problem:
            return f"{_where(item, index)}: {problem}"
        if item["id"] in seen:
            return f"duplicate item id {item['id']}"
        seen.add(item["id"])
    for item in items:
        for dependency in item.get("dependsOn", []):
            if dependency not in seen:
                return f"{_where(item)}: depends on unknown item {dependency}"
    return None


# --- derived kinds and summaries ------------------------------------------------------------


def is_needs_human(item: Mapping[str, Any]) -> bool:
    """needs-human ⇔ blocked and ``needsHuman``."""
    return item.get("status") == "blocked" and item.get("needsHuman") is True


def is_deferred(item: Mapping[str, Any]) -> bool:
    """deferred ⇔ blocked and ``deferred`` — and not needs-human, so the kinds never overlap."""
    return (item.get("status") == "blocked" and item.get("deferred") is True
            and not is_needs_human(item))


def kind(item: Mapping[str, Any]) -> str:
    """``needs-human``, ``deferred``, or the item's status."""
    if is_needs_human(item):
        return "needs-human"
    if is_deferred(item):
        return "deferred"
    return str(item.get("status"))


def summarize(items: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """``backlogSummary``: counts per status; needsHuman and deferred are disjoint
    subsets of blocked."""
    summary = {"pending": 0, "inProgress": 0, "blocked": 0, "needsHuman": 0, "deferred": 0,
               "done": 0, "total": 0}
    for item in items:
        summary["total"] += 1
        status = item.get("status")
        if status == "pending":
            summary["pending"] += 1
        elif status == "in_progress":
            summary["inProgress"] += 1
        elif status == "done":
            summary["done"] += 1
        elif status == "blocked":
            summary["blocked"] += 1
            if is_needs_human(item):
                summary["needsHuman"] += 1
            elif is_deferred(item):
                summary["deferred"] += 1
    return summary


# --- lookup, selection, ids -----------------------------------------------------------------


ItemsOrIndex = list[dict[str, Any]] | Mapping[Any, dict[str, Any]]


def index_items(items: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    """Items by id (the first of a duplicated id, as ``find_item`` finds it): a pass
    that finds many items builds this once instead of scanning per item."""
    index: dict[Any, dict[str, Any]] = {}
    for item in items:
        index.setdefault(item.get("id"), item)
    return index


def find_item(items: ItemsOrIndex, item_id: str) -> dict[str, Any]:
    """The item with ``item_id`` in a list or an ``index_items`` index; refused with
    the runner contract's message if absent."""
    if isinstance(items, Mapping):
        found = items.get(item_id)
        if found is not None:
            return found
    else:
        for item in items:
            if item.get("id") == item_id:
                return item
    raise BacklogError(f"Item not found: {item_id}")


def selectable_items(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every selectable item (``topology.is_selectable``), in the order the loop takes them."""
    status_of = {str(item.get("id")): item.get("status") for item in items}
    ready = [item for item in items
             if is_selectable(item.get("status"), item.get("dependsOn", []), status_of)]
    return sorted(ready, key=lambda item: (item.get("priority", 4), id_key(item.get("id"))))


def select_next(items: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The item the loop works on next: pending with every in-backlog dependency
    done; lowest priority number first, then id (numeric-aware). ``None`` if none."""
    ready = selectable_items(items)
    return ready[0] if ready else None


def next_id(items: Iterable[Mapping[str, Any]]) -> str:
    """Max numeric id + 1, zero-padded to 3 digits or the widest existing id."""
    highest = 0
    width = MIN_ID_WIDTH
    for item in items:
        item_id = str(item.get("id", ""))
        if item_id.isdigit():
            highest = max(highest, int(item_id))
            width = max(width, len(item_id))
    return str(highest + 1).zfill(width)


# --- building and changing items -------------------------------------------------------------


def _check_references(items: list[dict[str, Any]], item: dict[str, Any]) -> None:
    """Dependencies of ``item`` must exist, and must not close a cycle through it."""
    known = {str(other.get("id")) for other in items}
    for dependency in item.get("dependsOn", []):
        if dependency == item["id"]:
            raise BacklogError(f"item {item['id']}: depends on itself")
        if dependency not in known:
            raise BacklogError(f"item {item['id']}: depends on unknown item {dependency}")
    cycle = cycle_through(items, item["id"])
    if cycle:
        chain = " → ".join([*cycle, cycle[0]])
        raise BacklogError(f"item {item['id']}: dependency cycle {chain}")


def _checked(item: dict[str, Any]) -> dict[str, Any]:
    problem = _field_problem(item)
    if problem:
        raise BacklogError(f"{_where(item)}: {problem}")
    return item


def new_item(items: list[dict[str, Any]], fields: Mapping[str, Any]) -> dict[str, Any]:
    """Append a new pending item with the next id; return it. Refused if invalid."""
    item: dict[str, Any] = {
        "id": next_id(items),
        "type": fields.get("type", "feature"),
        "priority": fields.get("priority", 2),
        "title": fields.get("title", ""),
        "description": fields.get("description", ""),
        "acceptanceCriteria": list(fields.get("acceptanceCriteria", [])),
        "status": "pending",
        "completedAt": None,
        "dependsOn": list(fields.get("dependsOn", [])),
        "notes": fields.get("notes", ""),
    }
    item = {key: item[key] for key in _NEW_ITEM_ORDER}
    _checked(item)
    items.append(item)
    try:
        _check_references(items, item)
    except BacklogError:
        items.pop()
        raise
    return item


def edit_item(
    items: list[dict[str, Any]], item_id: str, changes: Mapping[str, Any], *, now: str
) -> dict[str, Any]:
    """Apply operator edits (``EDITABLE_FIELDS`` and ``status``) to one item.

    A status change goes through the transition rules. Refused as a whole if any
    part is invalid: the item is left as it was.
    """
    item = find_item(items, item_id)
    unknown = set(changes) - set(EDITABLE_FIELDS) - {"status"}
    if unknown:
        raise BacklogError(f"cannot edit field(s): {', '.join(sorted(unknown))}")
    before = dict(item)
    try:
        for key in EDITABLE_FIELDS:
            if key in changes:
                item[key] = changes[key]
        if "status" in changes and changes["status"] != before["status"]:
            apply_transition(item, changes["status"], now=now)
        _checked(item)
        _check_references(items, item)
    except BacklogError:
        item.clear()
        item.update(before)
        raise
    return item


def check_transition(item: Mapping[str, Any], new_status: str) -> None:
    """Refuse an illegal status change with a message naming both states."""
    problem = status_problem(new_status)
    if problem:
        raise BacklogError(problem)
    current = item.get("status")
    if new_status not in TRANSITIONS.get(str(current), frozenset()):
        allowed = ", ".join(sorted(TRANSITIONS.get(str(current), ()))) or "none"
        raise BacklogError(
            f"item {item.get('id')}: illegal status transition {current} → {new_status} "
            f"(allowed from {current}: {allowed})"
        )


def _clear_block(item: dict[str, Any]) -> None:
    """Forget why an item was blocked; ``humanAnswer`` is kept for the next prompt."""
    item.pop("blockedReason", None)
    item.pop("blockedAt", None)
    for flag in ("needsHuman", "deferred"):
        if flag in item:
            item[flag] = False


#: Fields a transition may set alongside the status.
TRANSITION_FIELDS: frozenset[str] = frozenset(
    {"blockedReason", "needsHuman", "deferred", "completedAt", "humanAnswer", "notes"}
)


def apply_transition(
    item: dict[str, Any], new_status: str, *, now: str, **fields: Any
) -> dict[str, Any]:
    """Move ``item`` to ``new_status`` with the bookkeeping each target implies.

    * → ``done``: ``completedAt`` set (now unless given), ``humanAnswer`` cleared
      (it was for this item's last attempt), block fields cleared.
    * → ``blocked``: ``blockedReason``, ``needsHuman`` and ``deferred`` from
      ``fields`` (needs-human and deferred are exclusive); ``blockedAt`` now.
    * → ``pending``: from blocked, block fields cleared; from done, ``completedAt``
      nulled.
    Other ``fields`` (``TRANSITION_FIELDS``) are set as given.
    """
    check_transition(item, new_status)
    unknown = set(fields) - TRANSITION_FIELDS
    if unknown:
        raise BacklogError(f"a transition cannot set field(s): {', '.join(sorted(unknown))}")
    previous = item["status"]
    if new_status == "blocked":
        needs_human = bool(fields.pop("needsHuman", False))
        deferred = bool(fields.pop("deferred", False))
        if needs_human and deferred:
            raise BacklogError(f"item {item['id']}: needs-human and deferred are exclusive")
        item["status"] = "blocked"
        reason = fields.pop("blockedReason", None)
        if reason is None:
            item.pop("blockedReason", None)
        else:
            item["blockedReason"] = reason
        item["needsHuman"] = needs_human
        item["deferred"] = deferred
        item["blockedAt"] = now  # since when it waits (the loop's summary says so)
    else:
        item["status"] = new_status
        if previous == "blocked" or new_status == "done":
            _clear_block(item)
        if new_status == "done":
            item["completedAt"] = fields.pop("completedAt", None) or now
            item.pop("humanAnswer", None)
        elif previous == "done":
            item["completedAt"] = None
    for key, value in fields.items():
        item[key] = value
    return item


def answer_item(items: ItemsOrIndex, item_id: str, text: str) -> dict[str, Any]:
    """``backlog answer``: a blocked item back to pending with the human's answer,
    which the loop threads into the item's next prompt."""
    item = find_item(items, item_id)
    if item.get("status") != "blocked":
        raise BacklogError(f"Item {item_id} is not blocked (status: {item.get('status')})")
    item["status"] = "pending"
    _clear_block(item)
    item["humanAnswer"] = text
    item["needsHuman"] = False
    item["deferred"] = False
    return item


def unblock_items(items: list[dict[str, Any]], item_id: str | None, *,
                  index: Mapping[Any, dict[str, Any]] | None = None) -> list[str]:
    """``backlog unblock``: blocked → pending for one item, or for every blocked
    item when ``item_id`` is None. Returns the ids unblocked (possibly none).
    ``index`` (``index_items(items)``) finds the one item without a scan."""
    if item_id is not None:
        item = find_item(items if index is None else index, item_id)
        if item.get("status") != "blocked":
            raise BacklogError(f"Item {item_id} is not blocked (status: {item.get('status')})")
        targets = [item]
    else:
        targets = [item for item in items if item.get("status") == "blocked"]
    for item in targets:
        item["status"] = "pending"
        _clear_block(item)
    return [str(item["id"]) for item in targets]
