"""The loop's backlog: read and validated once, changed in memory, written per change.

A running loop holds the loop lock, so it is the backlog's main writer — but not
its only one: ``backlog add``, ``answer`` or ``edit`` from another terminal go
through the store's sidecar lock while it runs. Re-reading and re-validating
the whole file for every read and change (what ``BacklogStore`` does, rightly,
for a command that runs once) made each iteration cost in proportion to the
backlog. ``HeldBacklog`` keeps the parsed document and its Items instead:

* the file is read, parsed and validated when it is not the file last seen —
  told by its identity (device, inode, size, modification and change times), which
  an atomic replace or an in-place edit always changes. The last file read or
  written is kept open, so its inode cannot be freed and reused by a later file
  that might then look the same;
* a change is made under the sidecar lock, after that same check (so a change
  another writer made in between is read first, never overwritten); only the
  changed item is validated — a transition cannot touch ids or dependencies, the
  rest of the document was validated as read — and only it is encoded again: the
  other items' texts are kept, so a write costs a join, not an encode;
* a write is the same atomic, durable replace ``BacklogStore`` makes, of the bytes
  it would write (``jsonenc.join_list_in`` is byte-identical to the full encoder).

Refusals are the store's: a missing, corrupt or invalid file, an unknown item, an
illegal transition — and a refused change changes neither the file nor memory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from git_forge.atomic import atomic_write, remove_stale_temp_files
from git_forge.backlog import model
from git_forge.backlog.errors import BacklogError
from git_forge.backlog.item import Item
from git_forge.backlog.store import BacklogStore, FileIdentity, file_identity, remember_valid
from git_forge.clock import wire_now
from git_forge.jsonenc import encode_nested, join_list_in
from git_forge.jsonfile import unencodable
from git_forge.locks import locked

#: Depth of an item object in backlog.json (document → "items" list → item).
_ITEM_DEPTH = 2


#: How backlog.json's item list opens, and how its items are separated and it closes,
#: in the layout every git-forge writer gives it (``json.dumps(indent=2)``'s).
_LIST_OPENS, _ITEM_SEPARATOR, _LIST_CLOSES = b'\n  "items": [\n    ', b",\n    {", b"\n  ]"


def item_texts(raw: bytes, items: list[Any]) -> list[bytes | None]:
    """Each item's text as ``raw`` (the file's bytes, holding ``items``) has it, so a
    write keeps it instead of encoding every item again; ``None`` for every item
    when the file is not laid out as git-forge writes it (then items are encoded).

    In that layout a line never holds a raw newline inside a string, the list's own
    lines are indented exactly 4 spaces and everything inside an item more, so the
    list is cut at its separators without reading the items. The cut is then proved:
    the texts, parsed, must be the items the file parsed to (a C parse, far cheaper
    than encoding), else none of them is used."""
    unknown: list[bytes | None] = [None] * len(items)
    start = raw.find(_LIST_OPENS)
    if start < 0 or not items:
        return unknown
    start += len(_LIST_OPENS)
    end = raw.find(_LIST_CLOSES, start)
    if end < 0:
        return unknown
    texts = raw[start:end].split(_ITEM_SEPARATOR)
    if len(texts) != len(items):
        return unknown
    for position in range(1, len(texts)):
        texts[position] = b"{" + texts[position]
    try:
        if json.loads(b"[" + b",".join(texts) + b"]") != items:
            return unknown
    except ValueError:  # a cut inside a value: not the layout after all
        return unknown
    return list(texts)


class _Statuses(Mapping[str, object]):
    """Each id's status in a held backlog, read through its index (no dict per call)."""

    def __init__(self, held: HeldBacklog) -> None:
        self._items, self._index = held._items, held._index

    def __getitem__(self, item_id: str) -> object:
        return self._items[self._index[item_id]].status

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


class HeldBacklog:
    """``store``'s file, held in memory by the one run that owns it."""

    def __init__(self, store: BacklogStore) -> None:
        self.store = store
        self.path: Path = store.path
        self._header: dict[str, object] = {}
        self._items: list[Item] = []
        self._index: dict[str, int] = {}
        #: The encoded text of each item, as UTF-8 (``None``: not encoded since it changed).
        self._texts: list[bytes | None] = []
        #: Item positions in the order the loop takes them (``model.selection_order``).
        self._order: list[int] | None = None
        self._identity: FileIdentity | None = None
        self._fd: int | None = None
        #: Set when a file another writer made was read (``backlog add``, ``done`` …
        #: from another terminal): the loop commits that change apart from its own.
        self.changed_elsewhere = False

    # --- reading ----------------------------------------------------------------------------

    def load(self) -> None:
        """Read the file if it is not the one last seen (validated; refusals raise)."""
        try:
            identity = file_identity(os.stat(self.path))
        except FileNotFoundError as exc:
            raise self.store.unreadable(exc) from None
        except OSError as exc:
            raise self.store.unreadable(exc) from exc
        if identity != self._identity:
            self._read()

    def _read(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError as exc:
            raise self.store.unreadable(exc) from None
        except OSError as exc:
            raise self.store.unreadable(exc) from exc
        try:
            identity = file_identity(os.fstat(fd))  # of exactly the bytes read next
            with os.fdopen(os.dup(fd), "rb") as file:
                raw = file.read()
            document = self.store.validated(raw)
        except BaseException:
            os.close(fd)
            raise
        self.changed_elsewhere = self.changed_elsewhere or self._identity is not None
        self._hold(fd, identity)
        items = [Item.from_json(fields) for fields in document["items"]]
        # the top-level fields in their order; "items" keeps its place, its list is ours
        self._header = {key: (None if key == "items" else value)
                        for key, value in document.items()}
        self._items = items
        self._index = model.index_items(items)
        self._texts = item_texts(raw, document["items"])
        self._order = None

    def _hold(self, fd: int, identity: FileIdentity) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._fd, self._identity = fd, identity

    def close(self) -> None:
        """Let go of the file held open (the run is over)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd, self._identity = None, None

    def items(self) -> list[Item]:
        """The backlog's items as the file holds them now (a new list)."""
        self.load()
        return list(self._items)

    def get(self, item_id: str) -> Item:
        self.load()
        return self._items[self._position(item_id)]

    def select_next(self) -> Item | None:
        """``model.select_next`` of the backlog as the file holds it now, without a
        pass over every item: the order is computed once per file read."""
        self.load()
        if self._order is None:
            self._order = model.selection_order(self._items)
        return model.first_selectable(self._items, self._order, _Statuses(self))

    def description(self) -> str:
        """The backlog's ``description`` (the prompt's ``## Project`` section)."""
        self.load()
        value = self._header.get("description")
        return value if isinstance(value, str) else ""

    def _position(self, item_id: str) -> int:
        position = self._index.get(item_id)
        if position is None:
            raise BacklogError(f"Item not found: {item_id}")
        return position

    # --- changing ---------------------------------------------------------------------------

    def transition(self, item_id: str, new_status: str, *, durable: bool = True,
                   **fields: Any) -> Item:
        """Move one item to ``new_status`` (``BacklogStore.transition``'s rules and
        bookkeeping); the changed item. ``durable=False`` replaces the file without
        fsyncs (``atomic_write``): for a change something else already makes
        recoverable after a power cut."""
        now = wire_now()
        return self._change(
            item_id, lambda item: model.apply_transition(item, new_status, now=now, **fields),
            durable=durable)

    def replace(self, item: Item) -> None:
        """Put ``item`` back in the place of the item with its id, as it is (undoing a
        change whose commit failed)."""
        self._change(item.id, lambda _current: item)

    def _change(self, item_id: str, change: Callable[[Item], Item], *,
                durable: bool = True) -> Item:
        with locked(self.path):
            remove_stale_temp_files(self.path)
            self.load()  # under the lock: a change made by another writer is read first
            position = self._position(item_id)
            before = self._items[position]
            item: Item = change(before)
            if item.id != before.id or item.get("dependsOn") != before.get("dependsOn"):
                raise BacklogError(f"item {item_id}: a held backlog changes neither ids "
                                   "nor dependencies")
            if item.raw == before.raw:
                return item
            problem = model.item_problem(item)
            if problem:
                raise BacklogError(f"refusing to write an invalid backlog ({problem})")
            self._items[position], self._texts[position] = item, None
            try:
                try:
                    data = self._encode()
                except UnicodeEncodeError:
                    raise BacklogError(unencodable(self.path)) from None
                atomic_write(self.path, data, durable=durable)
                fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            except BaseException:
                self._items[position], self._texts[position] = before, None
                raise
            self._hold(fd, file_identity(os.fstat(fd)))
            remember_valid(self.path, data)
            return item

    def _encode(self) -> bytes:
        """The bytes ``BacklogStore`` would write for the held document (text that is
        not valid Unicode raises ``UnicodeEncodeError``, as it would there)."""
        texts = self._texts
        for position, text in enumerate(texts):
            if text is None:
                encoded = encode_nested(self._items[position].raw, _ITEM_DEPTH)
                texts[position] = encoded.encode("utf-8")
        return join_list_in(self._header, "items", texts,  # type: ignore[arg-type]
                            end=b"\n")
