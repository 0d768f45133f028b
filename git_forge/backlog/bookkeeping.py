"""Recognising the runner's own uncommitted bookkeeping in backlog.json.

The loop commits every backlog change it makes, except one: while an item runs
it is marked ``in_progress`` in the working tree. A run that crashed leaves that
mark behind. It is the runner's bookkeeping, not stranded work, so neither the
pre-launch check nor reconciliation treats a backlog.json whose *only*
difference from HEAD is such marks as work to decide about (the next run's
restore resets the item to pending).
"""

from __future__ import annotations

from git_forge.parsing import DocumentTooComplex, load_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _items_by_id(document: Any) -> dict[str, dict[str, Any]] | None:
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
    from git_forge.backlog.topology import id_key

    parts = []
    for verb, ids in (
        ("add", [i for i in work_items if i not in head_items]),
        ("change", [i for i in work_items if i in head_items and work_items[i] != head_items[i]]),
        ("remove", [i for i in head_items if i not in work_items]),
    ):
        if ids:
            parts.append(f"{verb} {', '.join(sorted(ids, key=id_key))}")
    return "; ".join(parts) or "update the backlog"
