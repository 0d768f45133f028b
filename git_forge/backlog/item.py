"""A backlog item as a frozen value: typed attributes over the item's own JSON object.

backlog.json is shared with other tools (rauf, feature-forge) that may add fields
git-forge does not know, so a file git-forge reads and rewrites without changing
an item must come out byte for byte as it went in. An ``Item`` therefore keeps its
JSON object whole — every field, in the file's key order — and reads the fields
git-forge uses from it as snake_case attributes. The camelCase wire names live in
one table, ``WIRE_NAMES``. A change (``with_changes``, ``without``) returns a new
Item: a changed field keeps its place, a new one is appended (in the order given),
unknown fields stay where they were.

An Item is also a read-only ``Mapping`` of that object under its wire names, which
is what validation reads, what ``to_json`` hands to a writer, and how a field with
no attribute (another tool's) is read. Attributes are tolerant the way a reader of
another tool's output must be: a field that is absent, or not of its type, reads
as the attribute's empty value (``None``, ``""``, ``()``, ``False``); the store
validates its own file before any Item is made from it.
"""

from collections.abc import Iterator, Mapping
from operator import attrgetter
from typing import Any, NotRequired, TypedDict, cast


class BacklogItemJSON(TypedDict):
    """An item of backlog.json as the store validates it (formats.md, "Item"; wire
    names). Other tools' fields may sit beside these, and are kept. An item another
    runner lists (``topology.parse_items``) is checked only for what the graph reads,
    which is why an Item's attributes read their fields tolerantly."""

    id: str
    type: str
    priority: int
    title: str
    status: str
    description: NotRequired[str]
    acceptanceCriteria: NotRequired[list[str]]
    completedAt: NotRequired[str | None]
    dependsOn: NotRequired[list[str]]
    notes: NotRequired[str]
    blockedReason: NotRequired[str | None]
    blockedAt: NotRequired[str | None]
    needsHuman: NotRequired[bool]
    deferred: NotRequired[bool]
    humanAnswer: NotRequired[str | None]
    answeredReason: NotRequired[str | None]
    answeredKind: NotRequired[str | None]


#: The reason a blocked item holds when its agent's signal gave none. Two such items
#: are never one question: nothing says they wait on the same thing.
NO_REASON = "no reason given"

#: snake_case attribute → its name in backlog.json (formats.md, "Item").
WIRE_NAMES: Mapping[str, str] = {
    "id": "id",
    "type": "type",
    "priority": "priority",
    "title": "title",
    "description": "description",
    "acceptance_criteria": "acceptanceCriteria",
    "status": "status",
    "completed_at": "completedAt",
    "depends_on": "dependsOn",
    "notes": "notes",
    "blocked_reason": "blockedReason",
    "blocked_at": "blockedAt",
    "needs_human": "needsHuman",
    "deferred": "deferred",
    "human_answer": "humanAnswer",
    "answered_reason": "answeredReason",
    "answered_kind": "answeredKind",
}


def _wire(name: str) -> str:
    try:
        return WIRE_NAMES[name]
    except KeyError:
        raise TypeError(f"an item has no field {name!r}") from None


# The attributes read their fields by the table's names (``id`` and ``status`` are their
# own). A field that is absent, or not of the attribute's type, reads as ``absent``.


def _text(name: str, *, absent: str | None = None, doc: str | None = None) -> Any:
    key = WIRE_NAMES[name]

    def read(item: "Item") -> str | None:
        value = item._raw.get(key)
        return value if type(value) is str else absent

    return property(read, doc=doc)


def _texts(name: str, *, doc: str | None = None) -> Any:
    key = WIRE_NAMES[name]

    def read(item: "Item") -> tuple[str, ...]:
        value = item._raw.get(key)
        if type(value) is list or type(value) is tuple:  # the JSON list, or one set in code
            return tuple(map(str, value))
        return ()

    return property(read, doc=doc)


def _count(name: str) -> Any:
    key = WIRE_NAMES[name]

    def read(item: "Item") -> int | None:
        value = item._raw.get(key)
        return value if type(value) is int else None  # not bool, a subclass of int

    return property(read)


def _flag(name: str) -> Any:
    key = WIRE_NAMES[name]

    def read(item: "Item") -> bool:
        return item._raw.get(key) is True

    return property(read)


def _read_only(slot: str, doc: str) -> Any:
    """A public read-only view of a private slot, read at C speed (no Python call)."""
    return property(attrgetter(slot), doc=doc)


class Item(Mapping[str, Any]):
    """One backlog item (see the module docstring); immutable.

    ``id`` and ``status`` are read from the object once, when the Item is made:
    every lookup, selection, summary and graph reads them for every item of a list.
    The other attributes read the object when asked. No attribute can be set (they are
    read-only properties, over private slots for the three kept).
    """

    __slots__ = ("_raw", "_id", "_status")
    _raw: BacklogItemJSON
    _id: str
    _status: str | None

    raw: Mapping[str, Any] = _read_only(
        "_raw", "The JSON object itself, read-only (what validation and hot loops read).")
    id: str = _read_only(
        "_id", "The id as text (a runner may list integer ids; they are compared as text).")
    status: str | None = _read_only("_status", "The status, or None if it is not text.")

    def __new__(cls, fields: Mapping[str, Any]) -> "Item":
        return Item.from_json(cast(BacklogItemJSON, dict(fields)))

    @staticmethod
    def from_json(fields: BacklogItemJSON) -> "Item":
        """The item of a JSON object just parsed, adopted rather than copied (a
        100,000-item list is not copied twice): the caller keeps no other use of it."""
        item = _new_object(Item)
        item._raw = fields
        value = fields.get("id")
        item._id = value if type(value) is str else str(value)
        value = fields.get("status")
        item._status = value if type(value) is str else None
        return item

    def to_json(self) -> BacklogItemJSON:
        """The item's JSON object, in its key order (a new dict; nested values are shared
        and read-only)."""
        return self._raw.copy()

    def __reduce__(self) -> tuple[type["Item"], tuple[Mapping[str, Any]]]:
        return (Item, (self._raw,))

    # --- the Mapping of wire names ----------------------------------------------------------

    def __getitem__(self, key: str) -> Any:
        return cast(Mapping[str, Any], self._raw)[key]  # any field, another tool's too

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def get(self, key: str, default: Any = None) -> Any:
        return self._raw.get(key, default)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Item):
            return self._raw == other._raw
        if isinstance(other, Mapping):
            return self._raw == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a dict, so unhashable like one

    def __repr__(self) -> str:
        return f"Item({self._raw!r})"

    # --- changes ----------------------------------------------------------------------------

    def has(self, name: str) -> bool:
        """Whether the object holds the field ``name`` at all (even as null)."""
        return _wire(name) in self._raw

    def with_changes(self, **changes: Any) -> "Item":
        """A copy with ``changes`` (attribute names) set: an existing field keeps its
        place, a new one is appended in the order given."""
        fields: dict[str, object] = dict(self._raw)
        for name, value in changes.items():
            fields[_wire(name)] = value
        return Item.from_json(cast(BacklogItemJSON, fields))

    def without(self, *names: str) -> "Item":
        """A copy without the fields ``names`` (attribute names); absent ones are fine."""
        fields: dict[str, object] = dict(self._raw)
        for name in names:
            fields.pop(_wire(name), None)
        return Item.from_json(cast(BacklogItemJSON, fields))

    # --- the fields git-forge reads (read from the object when asked) ----------------------

    type: str | None = _text("type")
    priority: int | None = _count("priority")
    title: str = _text("title", absent="")
    description: str = _text("description", absent="")
    acceptance_criteria: tuple[str, ...] = _texts("acceptance_criteria")
    completed_at: str | None = _text("completed_at")
    depends_on: tuple[str, ...] = _texts(
        "depends_on", doc="The ids this item depends on, as text, in the file's order.")
    notes: str = _text("notes", absent="")
    blocked_reason: str | None = _text("blocked_reason")
    blocked_at: str | None = _text(
        "blocked_at", doc="Since when a blocked item waits (set by the transition to blocked).")
    needs_human: bool = _flag("needs_human")
    deferred: bool = _flag("deferred")
    human_answer: str | None = _text(
        "human_answer", doc="The operator's answer, threaded into the item's next prompt.")
    answered_reason: str | None = _text(
        "answered_reason", doc="What the answer answers: the item's blockedReason when the "
                               "answer was applied (its question, its blocker, its failure).")
    answered_kind: str | None = _text(
        "answered_kind", doc="Which that was: question, blocker or failure (model.ANSWERED_KINDS).")


_new_object = object.__new__


# --- the kind of an item, read from its status and flags ------------------------------------


def is_needs_human(item: Item) -> bool:
    """needs-human ⇔ blocked and ``needsHuman``."""
    return item.status == "blocked" and item.needs_human


def is_deferred(item: Item) -> bool:
    """deferred ⇔ blocked and ``deferred`` — and not needs-human, so the kinds never overlap."""
    return item.status == "blocked" and item.deferred and not item.needs_human


def kind(item: Item) -> str:
    """``needs-human``, ``deferred``, or the item's status."""
    if is_needs_human(item):
        return "needs-human"
    if is_deferred(item):
        return "deferred"
    return str(item.status)
