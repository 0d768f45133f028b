"""Recognising the runner's own uncommitted bookkeeping in backlog.json.

The loop commits every backlog change it makes, except one: while an item runs
it is marked ``in_progress`` in the working tree. A run that crashed leaves that
mark behind. It is the runner's bookkeeping, not stranded work, so neither the
pre-launch check nor reconciliation treats a backlog.json whose *only*
difference from HEAD is such marks as work to decide about (the next run's
restore resets the item to pending).

``recover`` commits the answers it applies to backlog.json in its last step; a
pass killed before that commit leaves them uncommitted, and the next pass
recognises them (``only_applied_answers``) and commits them as its own — never
an operator's edit beside them.
"""

from __future__ import annotations

from git_forge.backlog.topology import id_key
from git_forge.parsing import DocumentTooComplex, load_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


def _items_by_id(document: Any) -> dict[str, dict[str, object]] | None:
    if not isinstance(document, dict) or not isinstance(document.get("items"), list):
        return None
    items = {}
    for item in document["items"]:
        if not isinstance(item, dict) or "id" not in item:
            return None
        items[str(item["id"])] = item
    return items


def only_in_progress_marks(head_raw: bytes, work_raw: bytes) -> bool:
    """True when the working backlog.json differs from HEAD's only by items that
    were ``pending`` at HEAD and are ``in_progress`` now.

    A working copy whose bytes hold neither ``in_progress`` nor a ``\\u`` escape
    has no string that reads ``in_progress``, so no mark: it is answered without
    parsing either copy (after ``recover`` answers thousands of items, the tree
    check would otherwise parse both for nothing)."""
    if b"in_progress" not in work_raw and b"\\u" not in work_raw:
        return False
    try:
        head = load_json(head_raw, "backlog.json at HEAD")
        work = load_json(work_raw, "backlog.json")
    except (ValueError, DocumentTooComplex):
        return False
    head_items, work_items = _items_by_id(head), _items_by_id(work)
    if head_items is None or work_items is None:
        return False
    marked = False
    for item_id, item in work_items.items():
        before = head_items.get(item_id)
        if item.get("status") == "in_progress" and before is not None and (
            before.get("status") == "pending"
        ):
            item["status"] = "pending"
            marked = True
    return marked and head == work


def only_applied_answers(head_raw: bytes, work_raw: bytes,
                         answers: Mapping[str, str]) -> list[str]:
    """The items whose decided answers (``answers``: item id → answer text) explain
    every difference between HEAD's backlog.json and the working one — or ``[]``
    when anything else differs, or nothing does.

    Each changed item must be one ``answers`` names, blocked at HEAD and not blocked
    now, holding that answer (a runner that threads it) or the one it held at HEAD
    (a runner that only unblocks), with no other field changed than the ones an
    answer or an unblock changes; the items, their order and the rest of the
    document must be HEAD's."""
    try:
        head = load_json(head_raw, "backlog.json at HEAD")
        work = load_json(work_raw, "backlog.json")
    except (ValueError, DocumentTooComplex):
        return []
    head_items, work_items = _items_by_id(head), _items_by_id(work)
    if (head_items is None or work_items is None or list(head_items) != list(work_items)
            or len(head_items) != len(head["items"]) or len(work_items) != len(work["items"])
            or {**head, "items": None} != {**work, "items": None}):
        return []
    changed = [item_id for item_id, item in work_items.items() if item != head_items[item_id]]
    for item_id in changed:
        before, after = head_items[item_id], work_items[item_id]
        if (item_id not in answers or before.get("status") != "blocked"
                or after.get("status") == "blocked"
                or after.get("humanAnswer") not in (answers[item_id], before.get("humanAnswer"))
                or _unblock_kept(before) != _unblock_kept(after)):
            return []
    return changed


#: What answering or unblocking an item changes (``model._clear_block``).
_UNBLOCK_FIELDS = frozenset(
    {"status", "humanAnswer", "answeredReason", "answeredKind", "needsHuman", "deferred",
     "blockedReason", "blockedAt"})


def _unblock_kept(item: dict[str, object]) -> dict[str, object]:
    return {key: value for key, value in item.items() if key not in _UNBLOCK_FIELDS}


def describe_changes(head_raw: bytes | None, work_raw: bytes) -> str:
    """What a backlog.json changed since HEAD, for the commit that records it:
    ``add 004, 005; change 002`` (``add the backlog`` when HEAD had none)."""
    if head_raw is None:
        return "add the backlog"
    try:
        head_items = _items_by_id(load_json(head_raw, "backlog.json at HEAD")) or {}
        work_items = _items_by_id(load_json(work_raw, "backlog.json")) or {}
    except (ValueError, DocumentTooComplex):
        return "update the backlog"
    parts = []
    for verb, ids in (
        ("add", [i for i in work_items if i not in head_items]),
        ("change", [i for i in work_items if i in head_items and work_items[i] != head_items[i]]),
        ("remove", [i for i in head_items if i not in work_items]),
    ):
        if ids:
            parts.append(f"{verb} {', '.join(sorted(ids, key=id_key))}")
    return "; ".join(parts) or "update the backlog"
