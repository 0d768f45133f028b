"""The backlog item: fields, validation, derived kinds, status transitions, selection.

Pure functions over ``Item`` values, so the store, the loop and the runners share
one definition of what a valid item is and what a change may do. Validation reads
the parsed ``backlog.json`` (plain JSON, wire names) before any Item is made of it.
A change returns a new Item (which keeps unknown fields and key order, see
``item.py``); the functions that change an item *in a list* put the new Item in
the old one's place. Nothing here reads or writes files.
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypedDict

from git_forge.backlog.errors import BacklogError
from git_forge.backlog.ids import ID_PATTERN, MAX_ID_WIDTH, MIN_ID_WIDTH
from git_forge.backlog.item import Item, is_deferred, is_needs_human, kind
from git_forge.backlog.topology import cycle_through, id_key, is_selectable
from git_forge.clock import parse_stamp
from git_forge.errors import UsageError

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

#: Fields an operator may set on an existing item with ``backlog edit``.
EDITABLE_FIELDS: tuple[str, ...] = (
    "title", "type", "priority", "description", "acceptance_criteria", "depends_on", "notes",
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
        return (f"invalid item id {_describe(item_id)} (expected a string of "
                f"{MIN_ID_WIDTH} to {MAX_ID_WIDTH} digits)")
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
    for key in ("blockedReason", "humanAnswer", "answeredReason", "answeredKind"):
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


def backlog_problem(document: Any, *, valid: Any = None) -> str | None:
    """Why a parsed backlog.json is not a valid backlog, or ``None``.

    ``valid``: a document already found valid that ``document`` was made from. An
    item that is the very object at the same place in it passed the field checks
    then and is not checked again (a change to a few items of a large backlog
    costs those items); the checks across items run over every one."""
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
    checked = valid["items"] if valid is not None else []
    seen: set[str] = set()
    for index, item in enumerate(items):
        if index < len(checked) and item is checked[index]:
            pass  # validated as part of ``valid``, and an item's object never changes
        elif not isinstance(item, dict):
            return f"items[{index}] is not an object"
        elif problem := _field_problem(item):
            return f"{_where(item, index)}: {problem}"
        if item["id"] in seen:
            return f"duplicate item id {item['id']}"
        seen.add(item["id"])
    for item in items:
        for dependency in item.get("dependsOn", []):
            if dependency not in seen:
                return f"{_where(item)}: depends on unknown item {dependency}"
    return None


# --- summaries ---------------------------------------------------------------------------


class BacklogSummaryJSON(TypedDict):
    """``status --json``'s ``backlogSummary`` (formats.md): counts per status;
    ``needsHuman`` and ``deferred`` are disjoint subsets of ``blocked``."""

    pending: int
    inProgress: int
    blocked: int
    needsHuman: int
    deferred: int
    done: int
    total: int


def summarize(items: Iterable[Item]) -> BacklogSummaryJSON:
    """``backlogSummary``: counts per status; needsHuman and deferred are disjoint
    subsets of blocked."""
    summary: BacklogSummaryJSON = {"pending": 0, "inProgress": 0, "blocked": 0,
                                   "needsHuman": 0, "deferred": 0, "done": 0, "total": 0}
    for item in items:
        summary["total"] += 1
        status = item.status
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


class WaitingItemJSON(TypedDict):
    """An item waiting on a decision, as the run's summary lists it."""

    id: str
    kind: str
    since: str | None
    reason: str | None


def waiting_items(items: list[Item]) -> list[WaitingItemJSON]:
    """The blocked items, in id order: ``{id, kind, since, reason}`` (``since`` is
    when the item was blocked, ``None`` for one blocked before that was recorded)."""
    waiting: list[WaitingItemJSON] = [
        {"id": item.id, "kind": kind(item), "since": item.blocked_at,
         "reason": item.blocked_reason}
        for item in items if item.status == "blocked"]
    return sorted(waiting, key=lambda entry: id_key(entry["id"]))


def index_items(items: Sequence[Item]) -> dict[str, int]:
    """Where each id is in ``items`` (the first of a duplicated id, as ``find_item``
    finds it): a pass that changes many items builds this once instead of scanning
    per item. A change puts its new Item in the old one's place, so it stays true."""
    index: dict[str, int] = {}
    for position, item in enumerate(items):
        index.setdefault(item.id, position)
    return index


class AmbiguousId(BacklogError, UsageError):
    """A short number that names two ids (``3``, with both ``03`` and ``003``): input
    to write again, as a prompt that asks again takes a ``UsageError``."""


def _number(text: str) -> str | None:
    """The number ``text`` writes without its leading zeros (``""`` for zero), or
    ``None`` when it is not made of digits. Compared as text: no ``int()``, whose
    digit limit a 4,300-digit word would hit."""
    return text.lstrip("0") if text.isascii() and text.isdigit() else None


def match_id(key: str, known: Iterable[str]) -> str | None:
    """The id among ``known`` that ``key`` names: ``key`` itself, else the one id
    with the same number — ``3`` (or ``0003``) names ``003``, and ``c3`` names
    ``c003``, a question's id as ``recover`` takes it — else ``None``. The one rule
    for every command that takes an item id (``backlog show 3``, ``proc output 3``,
    ``decision revoke 3``, ``recover --answer 3=…``). Two ids of that number
    (``03`` and ``003``) is an ``AmbiguousId`` naming them: write the id in full."""
    known = list(known)
    if key in known:
        return key
    prefix = "c" if key[:1] in ("c", "C") else ""
    number = _number(key[len(prefix):])
    if number is None:
        return None
    matches = [name for name in known if name[:len(prefix)].lower() == prefix
               and _number(name[len(prefix):]) == number]
    if len(matches) > 1:
        named = ", ".join(sorted(matches, key=id_key))
        raise AmbiguousId(f"{key} could be any of {named}: write the id in full")
    return matches[0] if matches else None


def _index_of(items: Sequence[Item], item_id: str,
              index: Mapping[str, int] | None = None) -> int:
    """Where the item ``item_id`` names is (``index``: ``index_items(items)``, to
    find it without a scan): see ``id_position``."""
    if index is not None:
        found = index.get(item_id)
        if found is not None:
            return found
    return id_position([item.id for item in items], item_id)


def id_position(ids: list[str], item_id: str) -> int:
    """Where the id ``item_id`` names is in ``ids``: its own id, else a short number
    of it (``match_id``), white space around it aside (as ``--depends-on`` and
    recover's ids take it); refused with the runner contract's message if absent."""
    item_id = item_id.strip()
    if item_id in ids:
        return ids.index(item_id)
    named = match_id(item_id, ids)
    if named is not None:
        return ids.index(named)
    raise BacklogError(f"Item not found: {item_id}")


def find_item(items: Sequence[Item], item_id: str) -> Item:
    """The item with ``item_id``; refused with the runner contract's message if absent."""
    return items[_index_of(items, item_id)]


def selectable_items(items: list[Item]) -> list[Item]:
    """Every selectable item (``topology.is_selectable``), in the order the loop takes them."""
    status_of = {item.id: item.status for item in items}
    # the raw list, not ``depends_on``: the loop selects from the whole backlog every
    # iteration, and a new tuple per item is measurable there
    ready = [item for item in items
             if is_selectable(item.status, item.raw.get("dependsOn") or (), status_of)]
    return sorted(ready, key=_selection_order)


def _selection_order(item: Item) -> tuple[int, tuple[int | str, ...]]:
    """Lowest priority number first (an item without one last), then id order."""
    priority = item.priority
    return (4 if priority is None else priority, id_key(item.id))


def selection_order(items: Sequence[Item]) -> list[int]:
    """The positions of ``items`` in the order the loop takes them — lowest priority
    number first (an item without one ranks as 4), then id (numeric-aware). It
    depends only on ids and priorities, which no status change touches: a loop
    computes it once per backlog it reads."""
    return sorted(range(len(items)), key=lambda position: _selection_order(items[position]))


def first_selectable(items: Sequence[Item], order: Iterable[int],
                     status_of: Mapping[str, object] | None = None) -> Item | None:
    """The first item in ``order`` that is selectable (``topology.is_selectable``);
    ``status_of`` (each id's status) is built only if an item has dependencies."""
    for position in order:
        item = items[position]
        if item.status != "pending":
            continue
        dependencies = item.raw.get("dependsOn")
        if dependencies:
            if status_of is None:
                status_of = {other.id: other.status for other in items}
            if not is_selectable("pending", dependencies, status_of):
                continue
        return item
    return None


def select_next(items: list[Item]) -> Item | None:
    """The item the loop works on next: pending with every in-backlog dependency
    done; lowest priority number first, then id (numeric-aware). ``None`` if none."""
    return first_selectable(items, selection_order(items))


def next_id(items: Iterable[Item]) -> str:
    """Max numeric id + 1, zero-padded to 3 digits or the widest existing id."""
    highest = 0
    width = MIN_ID_WIDTH
    for item in items:
        item_id = item.id
        if item_id.isdigit():
            highest = max(highest, int(item_id))
            width = max(width, len(item_id))
    return str(highest + 1).zfill(width)


# --- building and changing items -------------------------------------------------------------


def _check_references(items: list[Item], item: Item) -> None:
    """Dependencies of ``item`` must exist, and must not close a cycle through it."""
    known = {other.id for other in items}
    for dependency in item.depends_on:
        if dependency == item.id:
            raise BacklogError(f"item {item.id}: depends on itself")
        if dependency not in known:
            raise BacklogError(f"item {item.id}: depends on unknown item {dependency}")
    cycle = cycle_through(items, item.id)
    if cycle:
        chain = " → ".join([*cycle, cycle[0]])
        raise BacklogError(f"item {item.id}: dependency cycle {chain}")


def item_problem(item: Item) -> str | None:
    """Why one item's fields are invalid (``item 004: …``), ignoring other items."""
    problem = _field_problem(item)
    return f"{_where(item)}: {problem}" if problem else None


def _checked(item: Item) -> Item:
    problem = item_problem(item)
    if problem:
        raise BacklogError(problem)
    return item


def _named_dependencies(items: Sequence[Item], fields: Mapping[str, Any]) -> dict[str, Any]:
    """``fields`` with each dependency as the id it names (``match_id``: ``2`` is
    ``002``; one that names none is kept as written — a short number as the id it
    would name, ``7`` as ``007`` — for the check of references to refuse as an
    unknown item); a dependency named twice (``2,002``) is refused."""
    if "depends_on" not in fields:
        return dict(fields)
    ids = [item.id for item in items]
    named = []
    for written in fields["depends_on"]:
        dependency = match_id(written, ids) or (
            written.zfill(3) if _number(written) is not None else written)
        if dependency in named:
            raise BacklogError(f"dependsOn names {dependency} more than once")
        named.append(dependency)
    return {**fields, "depends_on": named}


def new_item(items: list[Item], fields: Mapping[str, Any]) -> Item:
    """Append a new pending item with the next id; return it. Refused if invalid.
    ``fields`` are ``EDITABLE_FIELDS`` (attribute names: ``depends_on``)."""
    unknown = set(fields) - set(EDITABLE_FIELDS)
    if unknown:
        raise BacklogError(f"cannot set field(s): {', '.join(sorted(unknown))}")
    fields = _named_dependencies(items, fields)
    item = Item({}).with_changes(
        id=next_id(items),
        type=fields.get("type", "feature"),
        priority=fields.get("priority", 2),
        title=fields.get("title", ""),
        description=fields.get("description", ""),
        acceptance_criteria=list(fields.get("acceptance_criteria", [])),
        status="pending",
        completed_at=None,
        depends_on=list(fields.get("depends_on", [])),
        notes=fields.get("notes", ""),
    )  # rauf's key order
    _checked(item)
    items.append(item)
    try:
        _check_references(items, item)
    except BacklogError:
        items.pop()
        raise
    return item


def edit_item(items: list[Item], item_id: str, changes: Mapping[str, Any], *, now: str) -> Item:
    """Apply operator edits (``EDITABLE_FIELDS`` and ``status``, attribute names) to
    one item, in its place in ``items``.

    A status change goes through the transition rules. Refused as a whole if any
    part is invalid: the item is left as it was.
    """
    index = _index_of(items, item_id)
    before = items[index]
    unknown = set(changes) - set(EDITABLE_FIELDS) - {"status"}
    if unknown:
        raise BacklogError(f"cannot edit field(s): {', '.join(sorted(unknown))}")
    changes = _named_dependencies(items, changes)
    item = before.with_changes(**{key: changes[key] for key in EDITABLE_FIELDS if key in changes})
    try:
        if "status" in changes and changes["status"] != before.status:
            item = apply_transition(item, changes["status"], now=now)
        _checked(item)
        items[index] = item
        _check_references(items, item)
    except BacklogError:
        items[index] = before
        raise
    return item


def check_transition(item: Item, new_status: str) -> None:
    """Refuse an illegal status change with a message naming both states."""
    problem = status_problem(new_status)
    if problem:
        raise BacklogError(problem)
    current = item.status
    if new_status not in TRANSITIONS.get(str(current), frozenset()):
        allowed = ", ".join(sorted(TRANSITIONS.get(str(current), ()))) or "none"
        raise BacklogError(
            f"item {item.id}: illegal status transition {current} → {new_status} "
            f"(allowed from {current}: {allowed})"
        )


def _clear_block(item: Item, **changes: Any) -> Item:
    """Forget why an item was blocked (``humanAnswer`` is kept for the next prompt),
    making ``changes`` in the same pass (recover's batch makes two Items per answer,
    not four)."""
    flags = {flag: False for flag in ("needs_human", "deferred") if item.has(flag)}
    return item.without("blocked_reason", "blocked_at").with_changes(**{**flags, **changes})


#: What a human's answer answered (``answeredKind``), by the block it lifted: the
#: agent's question (needs-human), a blocker (blocked), or failed attempts (deferred).
ANSWERED_KINDS: tuple[str, ...] = ("question", "blocker", "failure")
#: The answer and what it answered: threaded into the next prompt together, cleared together.
ANSWER_FIELDS: tuple[str, ...] = ("human_answer", "answered_reason", "answered_kind")


#: Fields a transition may set alongside the status (attribute names).
TRANSITION_FIELDS: frozenset[str] = frozenset(
    {"blocked_reason", "needs_human", "deferred", "completed_at", "human_answer", "notes"}
)


def apply_transition(item: Item, new_status: str, *, now: str, **fields: Any) -> Item:
    """``item`` moved to ``new_status`` with the bookkeeping each target implies.

    * → ``done``: ``completedAt`` set (now unless given), ``humanAnswer`` and what it
      answered cleared (they were for this item's last attempt), block fields cleared.
    * → ``blocked``: ``blockedReason``, ``needsHuman`` and ``deferred`` from
      ``fields`` (needs-human and deferred are exclusive); ``blockedAt`` now.
    * → ``pending``: from blocked, block fields cleared; from done, ``completedAt``
      nulled.
    Other ``fields`` (``TRANSITION_FIELDS``, attribute names) are set as given.
    """
    check_transition(item, new_status)
    unknown = set(fields) - TRANSITION_FIELDS
    if unknown:
        raise BacklogError(f"a transition cannot set field(s): {', '.join(sorted(unknown))}")
    previous = item.status
    if new_status == "blocked":
        needs_human = bool(fields.pop("needs_human", False))
        deferred = bool(fields.pop("deferred", False))
        if needs_human and deferred:
            raise BacklogError(f"item {item.id}: needs-human and deferred are exclusive")
        item = item.with_changes(status="blocked")
        reason = fields.pop("blocked_reason", None)
        item = (item.without("blocked_reason") if reason is None
                else item.with_changes(blocked_reason=reason))
        # blockedAt: since when it waits (the loop's summary says so)
        item = item.with_changes(needs_human=needs_human, deferred=deferred, blocked_at=now)
    else:
        item = item.with_changes(status=new_status)
        if previous == "blocked" or new_status == "done":
            item = _clear_block(item)
        if new_status == "done":
            item = item.with_changes(completed_at=fields.pop("completed_at", None) or now)
            item = item.without(*ANSWER_FIELDS)
        elif previous == "done":
            item = item.with_changes(completed_at=None)
    return item.with_changes(**fields) if fields else item


def transition_item(items: list[Item], item_id: str, new_status: str, *, now: str,
                    **fields: Any) -> Item:
    """``apply_transition`` to the item with ``item_id``, in its place in ``items``."""
    index = _index_of(items, item_id)
    items[index] = apply_transition(items[index], new_status, now=now, **fields)
    return items[index]


def replace_item(items: list[Item], item: Item) -> None:
    """Put ``item`` in the place of the item with its id (undoing a change)."""
    items[_index_of(items, item.id)] = item


def _refuse_unless_blocked(item: Item) -> None:
    if item.status != "blocked":
        raise BacklogError(f"Item {item.id} is not blocked (status: {item.status})")


def answered_kind(item: Item) -> str:
    """Which of ``ANSWERED_KINDS`` the blocked ``item``'s block is."""
    return "question" if item.needs_human else "failure" if item.deferred else "blocker"


def answer_item(items: list[Item], item_id: str, text: str, *,
                index: Mapping[str, int] | None = None) -> Item:
    """``backlog answer`` (and recover's answers): a blocked item back to pending with
    the human's answer, which the loop threads into the item's next prompt. The
    ``blockedReason`` it answers goes, as a block's reason does, but is kept as
    ``answeredReason`` with its ``answeredKind``: the agent is told what was asked
    (or what failed) with the answer, never an answer out of context. Both are
    fields feature-forge's backlog tolerates (unknown fields are kept); an item
    blocked with no reason keeps none. ``index``: see ``_index_of``."""
    position = _index_of(items, item_id, index)
    item = items[position]
    _refuse_unless_blocked(item)
    reason = item.blocked_reason
    answered = ({"answered_reason": reason, "answered_kind": answered_kind(item)}
                if reason is not None and reason.strip() else {})
    changed = _clear_block(item, status="pending", human_answer=text, needs_human=False,
                           deferred=False, **answered)
    if not answered and (changed.has("answered_reason") or changed.has("answered_kind")):
        changed = changed.without(*ANSWER_FIELDS[1:])  # an earlier answer's
    items[position] = changed
    return changed


def revoke_answer(items: list[Item], item_id: str, answer: str, *, question: str,
                  now: str) -> Item:
    """``decision revoke``: an item that holds ``answer`` for its next attempt back
    to waiting for a decision, blocked as it was before the answer — on what the
    answer answered (``answeredReason``; else ``question``, the record's), needing a
    human, blocked or deferred as ``answeredKind`` says (needing a human when it does
    not say), since ``now`` — with the answer and what it answered gone. An item that
    no longer holds that answer (its agent took it, or another answer replaced it)
    is refused: its attempt cannot be taken back."""
    position = _index_of(items, item_id)
    item = items[position]
    if item.status != "pending" or item.human_answer != answer:
        raise BacklogError(f"item {item_id} no longer holds that answer (it is {item.status})")
    kind = item.answered_kind
    items[position] = apply_transition(
        item, "blocked", now=now, blocked_reason=item.answered_reason or question,
        needs_human=kind not in ("blocker", "failure"), deferred=kind == "failure",
    ).without(*ANSWER_FIELDS)
    return items[position]


def unblock_items(items: list[Item], item_id: str | None, *,
                  index: Mapping[str, int] | None = None) -> list[str]:
    """``backlog unblock``: blocked → pending for one item, or for every blocked
    item when ``item_id`` is None. Returns the ids unblocked (possibly none).
    ``index``: see ``_index_of``."""
    if item_id is not None:
        position = _index_of(items, item_id, index)
        _refuse_unless_blocked(items[position])
        targets = [position]
    else:
        targets = [position for position, item in enumerate(items) if item.status == "blocked"]
    for position in targets:
        items[position] = _clear_block(items[position], status="pending")
    return [items[position].id for position in targets]


def _named_items(items: Sequence[Item], item_ids: Iterable[str]) -> list[int]:
    """The positions of the items ``item_ids`` name (``_index_of``), each once, in
    the order named."""
    positions: list[int] = []
    for item_id in item_ids:
        position = _index_of(items, item_id)
        if position not in positions:
            positions.append(position)
    return positions


#: The legal steps from each status to done (``TRANSITIONS``), as the loop takes them.
_TO_DONE: dict[str, tuple[str, ...]] = {"blocked": ("pending", "in_progress", "done"),
                                        "pending": ("in_progress", "done"),
                                        "in_progress": ("done",)}


def mark_done(items: list[Item], item_ids: Iterable[str], *, now: str) -> list[str]:
    """``backlog done`` (and an item ``reconcile --integrate`` landed by hand): each
    item done, whatever it waited on, by the legal steps the loop takes (blocked →
    pending → in progress → done) — so it ends as a done item the loop leaves:
    ``completedAt`` now, its block and any answer cleared. Its dependents may then
    be selected. An item done already is refused, naming it (nothing is changed).
    The ids of the items done, in the order named."""
    positions = _named_items(items, item_ids)
    for position in positions:
        if items[position].status == "done":
            raise BacklogError(f"item {items[position].id} is done already")
    for position in positions:
        for status in _TO_DONE[str(items[position].status)]:
            items[position] = apply_transition(items[position], status, now=now)
    return [items[position].id for position in positions]


def drop_items(items: list[Item], item_ids: Iterable[str], *,
               keep_dependents: bool = False) -> tuple[list[str], list[str]]:
    """``backlog drop``: the items taken out of the backlog, whatever their status
    (git's history keeps what was committed of them). An item that depends on one
    of them and is not dropped with it keeps the backlog from being valid, so it is
    refused, naming both — unless ``keep_dependents``: then such an item no longer
    depends on the dropped ones (its other dependencies kept), and may be selected.
    The ids dropped (in the order named) and the ids of the items that lost a
    dependency (in backlog order)."""
    positions = _named_items(items, item_ids)
    dropped = [items[position].id for position in positions]
    gone = set(dropped)
    dependents = [(position, [d for d in item.depends_on if d in gone])
                  for position, item in enumerate(items)
                  if item.id not in gone and any(d in gone for d in item.depends_on)]
    if dependents and not keep_dependents:
        needed = sorted({d for _, named in dependents for d in named}, key=id_key)
        ids = ", ".join(items[position].id for position, _ in dependents)
        if len(dependents) == 1:
            raise BacklogError(f"item {ids} depends on {', '.join(needed)}: drop {ids} too, "
                               "or keep it without that dependency (--keep-dependents)")
        raise BacklogError(f"items {ids} depend on {', '.join(needed)}: drop them too, or "
                           "keep them without that dependency (--keep-dependents)")
    for position, _ in dependents:
        item = items[position]
        items[position] = item.with_changes(
            depends_on=[d for d in item.depends_on if d not in gone])
    detached = [items[position].id for position, _ in dependents]
    for position in sorted(positions, reverse=True):
        del items[position]
    return dropped, detached
