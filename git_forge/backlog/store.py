"""``backlog.json`` on disk: load, validate, and change it under its sidecar lock.

Every change is one locked read-modify-write through ``jsonfile.update_json``: the
file is parsed and validated *before* anything is changed, the change is
validated again before it is written, and any refusal raises before the write —
so a corrupt or invalid backlog is never rewritten, and a refused change leaves
the file byte-for-byte as it was.

The store keeps the document as the JSON object it reads and writes (its
top-level fields are nobody's business but the file's) and hands out its items
as ``Item`` values. A change is a function of the item list: it puts new Items in
the places of the ones it changes, and the document is written back with every
other item's object as it was read — unknown fields and key order intact.
"""

import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, NotRequired, TypedDict, TypeVar, cast

from git_forge.backlog import model
from git_forge.backlog.errors import BacklogError
from git_forge.backlog.item import BacklogItemJSON, Item
from git_forge.clock import wire_now
from git_forge.credentials import credential_refusal
from git_forge.errors import StoreError, os_error_text
from git_forge.jsonfile import update_json
from git_forge.layout import backlog_file
from git_forge.parsing import DocumentTooComplex, load_json

T = TypeVar("T")

#: The bytes of each backlog file last found valid (per path, this process): a
#: reader that finds the very same bytes again skips the checks, whose cost grows
#: with the backlog — a loop reads its backlog several times per iteration.
#: Validity is a function of the bytes alone, so this can never vouch for a
#: file that changed (any change, by anyone, is other bytes).
_VALIDATED: dict[Path, bytes] = {}


def remember_valid(path: Path, data: bytes) -> None:
    """``data``, what ``path`` holds now, passed every check: validated before it was
    written, or marked valid in the read-only commands' cache (``backlog/cache.py``)."""
    _VALIDATED[path] = data


#: What tells one backlog file from another at the same path: device, inode, size,
#: modification and change times — an atomic replace or an in-place edit changes it.
FileIdentity = tuple[int, int, int, int, int]


def file_identity(stat: os.stat_result) -> FileIdentity:
    """The identity of the file ``stat`` describes (see ``FileIdentity``)."""
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


class _Unchanged(Exception):
    """Raised inside a locked update to skip the write when nothing changed."""


class BacklogJSON(TypedDict):
    """backlog.json as the store validates it (formats.md; ``model.backlog_problem``).
    Other tools' top-level fields may sit beside these, and are kept."""

    schemaVersion: NotRequired[str]
    project: NotRequired[str]
    description: NotRequired[str]
    items: list[BacklogItemJSON]


class AnsweredJSON(TypedDict):
    """The runner contract's result of ``backlog answer`` (formats.md)."""

    answered: str
    status: str | None


class UnblockedJSON(TypedDict):
    """The runner contract's result of ``backlog unblock`` (formats.md)."""

    unblockedCount: int
    unblockedIds: list[str]


def new_document(project: str, description: str = "") -> BacklogJSON:
    """An empty backlog, as ``git forge init`` writes it."""
    return {"schemaVersion": model.SCHEMA_VERSION, "project": project,
            "description": description, "items": []}


def _refuse_invalid(path: Path, document: Any) -> BacklogJSON:
    problem = model.backlog_problem(document)
    if problem:
        raise BacklogError(f"{path} is invalid ({problem}); refusing to touch it")
    return cast(BacklogJSON, document)  # checked just above


def _refuse_credential(text: str) -> None:
    refusal = credential_refusal(text)
    if refusal:
        raise BacklogError(refusal)


def _refuse_busy(items: list[Item], item_id: str, busy: str | None) -> None:
    """``busy`` (a message with ``{id}``) refuses changing an item a live loop is
    working on. Checked inside the locked update, so it cannot race the loop's own
    transitions (which take the same lock)."""
    if busy is None:
        return
    item = model.find_item(items, item_id)
    if item.status == "in_progress":
        raise BacklogError(busy.format(id=item.id))


def _items_of(document: BacklogJSON) -> list[Item]:
    """The items of a validated document (adopted: an Item never changes its object)."""
    return [Item.from_json(fields) for fields in document["items"]]


class Snapshot(NamedTuple):
    """The bytes of backlog.json as read (or written) and the valid document they
    hold: a caller that reads the file several times in one pass hands it back
    (``known``), and the same bytes are not parsed again. Read-only, like the
    objects an ``Item`` adopts."""

    raw: bytes
    document: BacklogJSON

    @property
    def items(self) -> list[Item]:
        return _items_of(self.document)

    def get(self, item_id: str) -> Item:
        """The item ``item_id`` names (``model.find_item``'s rule), made alone."""
        fields = self.document["items"]
        return Item.from_json(fields[model.id_position([entry["id"] for entry in fields],
                                                       item_id)])


class BacklogStore(NamedTuple):
    """The ``backlog.json`` at ``path``."""

    path: Path

    @classmethod
    def in_dir(cls, backlog_dir: Path | str) -> "BacklogStore":
        return cls(backlog_file(Path(backlog_dir)))

    def missing(self) -> BacklogError:
        """The refusal for a backlog file that is not there: it names the command
        that makes one, since a project without it has not been set up."""
        return BacklogError(f"no backlog at {self.path} (git forge init sets one up)")

    def unreadable(self, exc: OSError) -> BacklogError:
        """The refusal for the file when reading (or finding) it failed with ``exc``."""
        if isinstance(exc, FileNotFoundError):
            return self.missing()
        return BacklogError(f"cannot read {self.path}: {os_error_text(exc)}")

    # --- reading ---------------------------------------------------------------------------

    def _read_bytes(self) -> bytes:
        try:
            return self.path.read_bytes()
        except FileNotFoundError as exc:
            raise self.unreadable(exc) from None
        except OSError as exc:
            raise self.unreadable(exc) from exc

    def _parse(self, raw: bytes) -> Any:
        if _VALIDATED.get(self.path) == raw:  # these very bytes passed every check before
            return json.loads(raw)
        try:
            return load_json(raw.decode("utf-8"), self.path, finite=True)
        except DocumentTooComplex as exc:
            raise BacklogError(exc.message) from exc
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BacklogError(f"{self.path} is corrupt (not valid JSON: {exc}); "
                               "refusing to touch it") from exc

    def validated(self, raw: bytes) -> BacklogJSON:
        """The document ``raw`` (this file's bytes) holds; refused if it is not valid."""
        known = _VALIDATED.get(self.path) == raw
        document = self._parse(raw)
        if known:  # these very bytes passed every check before
            return cast(BacklogJSON, document)
        if document is None:
            raise BacklogError(f"{self.path} is corrupt (it holds JSON null); "
                               "refusing to touch it")
        valid = _refuse_invalid(self.path, document)
        _VALIDATED[self.path] = raw
        return valid

    def load(self) -> BacklogJSON:
        """The validated document; missing, corrupt or invalid is a refusal (exit 2)."""
        return self.validated(self._read_bytes())

    def items(self) -> list[Item]:
        return _items_of(self.load())

    def snapshot(self, known: Snapshot | None = None) -> Snapshot:
        """The file's bytes and valid document; ``known`` itself when the file still
        holds ``known``'s bytes (compared, not parsed)."""
        raw = self._read_bytes()
        if known is not None and known.raw == raw:
            return known
        return Snapshot(raw, self.validated(raw))

    def get(self, item_id: str) -> Item:
        return self.snapshot().get(item_id)

    # --- changing --------------------------------------------------------------------------

    def update(self, mutate: Callable[[list[Item]], T], *, known: Snapshot | None = None,
               wrote: Callable[[Snapshot], None] | None = None) -> T:
        """Run ``mutate(items)`` under the lock and write the result.

        ``mutate`` changes the validated item list (putting new Items in the
        places of those it changes) and returns whatever the caller wants back;
        it must depend only on the items, because it is rehearsed on an unlocked
        read first — so a refusal (or a no-op) touches nothing at all, not even
        the sidecar lock — and runs again under the lock only if the file changed
        in between. If it raises, or leaves the backlog invalid, nothing is
        written; if it changed nothing, the file is not rewritten.

        ``known``: a snapshot read before (not parsed again if the file still holds
        it); ``wrote`` is handed the snapshot of what was written, if anything.
        """

        def change_items(document: BacklogJSON) -> tuple[T, BacklogJSON]:
            items = _items_of(document)
            outcome = mutate(items)
            # An item left as it was keeps its (read-only) object, so the check of the
            # result skips it (``backlog_problem``'s ``valid``); the bytes are the same.
            originals = document["items"]
            kept = len(originals)
            return outcome, {**document, "items": [
                originals[index] if index < kept and item.raw is originals[index]
                else item.to_json() for index, item in enumerate(items)]}

        return self._update(change_items, known=known, wrote=wrote)

    def describe(self, text: str) -> None:
        """Set the backlog's ``description`` (the prompt's ``## Project`` section)."""
        self._update(lambda document: (None, {**document, "description": text}))

    def _apply(self, document: BacklogJSON,
               rewrite: Callable[[BacklogJSON], tuple[T, BacklogJSON]]
               ) -> tuple[T, BacklogJSON]:
        """``rewrite`` the document: the outcome and the changed document (``document``
        itself is left as it is). A result that is not a valid backlog is refused."""
        outcome, changed = rewrite(document)
        problem = model.backlog_problem(changed, valid=document)
        if problem:
            raise BacklogError(f"refusing to write an invalid backlog ({problem})")
        return outcome, changed

    def _update(self, rewrite: Callable[[BacklogJSON], tuple[T, BacklogJSON]], *,
                known: Snapshot | None = None,
                wrote: Callable[[Snapshot], None] | None = None) -> T:
        """``update``'s rehearsal, lock and write for any ``rewrite`` of the document."""
        raw, before = self.snapshot(known)  # what the lock must find
        outcome, rehearsal = self._apply(before, rewrite)
        if rehearsal == before:
            return outcome
        result: list[T] = [outcome]
        to_write = [rehearsal]

        def change(current: Any) -> BacklogJSON:
            if current is before or current == before:
                return rehearsal  # the same input: the rehearsed result stands
            if current is None:
                raise self.missing()
            document = _refuse_invalid(self.path, current)
            result[0], changed = self._apply(document, rewrite)
            if changed == document:
                raise _Unchanged
            to_write[0] = changed
            return changed

        def written(data: bytes) -> None:  # what change() returned was validated
            remember_valid(self.path, data)
            if wrote is not None:
                wrote(Snapshot(data, to_write[0]))

        try:
            update_json(self.path, change, on_write=written, known=(raw, before))
        except _Unchanged:
            pass
        except StoreError as exc:
            raise BacklogError(exc.message) from exc
        return result[0]

    def answer(self, item_id: str, text: str, *, busy: str | None = None) -> AnsweredJSON:
        """blocked → pending with ``humanAnswer``; returns the runner-contract result.
        ``busy``: see ``_refuse_busy``."""
        if not text.strip():
            raise BacklogError("the answer text may not be empty")
        _refuse_credential(text)

        def answer(items: list[Item]) -> Item:
            _refuse_busy(items, item_id, busy)
            return model.answer_item(items, item_id, text)

        item = self.update(answer)
        return {"answered": item.id, "status": item.status}

    def answer_all(
        self, changes: Sequence[tuple[str, str | None]], *, known: Snapshot | None = None,
        wrote: Callable[[Snapshot], None] | None = None,
    ) -> tuple[list[str], BacklogError | None]:
        """``answer`` (a text) or ``unblock`` (``None``) each item, in order, in ONE
        locked write — ``recover`` applying a hundred answers rewrites the file once,
        not a hundred times. Each change is checked exactly as its single call
        would check it; the first refusal stops there: the changes before it are
        written, it and the rest are not. Returns the ids changed and that refusal
        (``None`` when every change was made). ``known``, ``wrote``: see ``update``."""

        def change_all(items: list[Item]) -> tuple[list[str], BacklogError | None]:
            done: list[str] = []
            index = model.index_items(items)
            for item_id, text in changes:
                try:
                    if text is None:
                        model.unblock_items(items, item_id, index=index)
                    else:
                        if not text.strip():
                            raise BacklogError("the answer text may not be empty")
                        _refuse_credential(text)
                        model.answer_item(items, item_id, text, index=index)
                except BacklogError as refusal:
                    return done, refusal
                done.append(item_id)
            return done, None

        return self.update(change_all, known=known, wrote=wrote)

    def revoke_answer(self, item_id: str, answer: str, *, question: str) -> Item:
        """``model.revoke_answer`` under the lock: the item waits for a decision again."""
        now = wire_now()
        return self.update(lambda items: model.revoke_answer(items, item_id, answer,
                                                             question=question, now=now))

    def unblock(self, item_id: str | None = None, *,
                busy: str | None = None) -> UnblockedJSON:
        """blocked → pending for one item, or every blocked item; the contract result.
        ``busy``: see ``_refuse_busy``."""

        def unblock(items: list[Item]) -> list[str]:
            if item_id is not None:
                _refuse_busy(items, item_id, busy)
            return model.unblock_items(items, item_id)

        ids = self.update(unblock)
        return {"unblockedCount": len(ids), "unblockedIds": ids}

    def done(self, item_ids: Sequence[str], *, busy: str | None = None) -> list[str]:
        """``model.mark_done`` under the lock, all the items or none; the ids done.
        ``busy``: see ``_refuse_busy``."""
        now = wire_now()

        def done(items: list[Item]) -> list[str]:
            for item_id in item_ids:
                _refuse_busy(items, item_id, busy)
            return model.mark_done(items, item_ids, now=now)

        return self.update(done)

    def drop(self, item_ids: Sequence[str], *,
             keep_dependents: bool = False) -> tuple[list[str], list[str]]:
        """``model.drop_items`` under the lock, all the items or none: the ids
        dropped, and those of the items that lost a dependency."""
        return self.update(lambda items: model.drop_items(
            items, item_ids, keep_dependents=keep_dependents))

    def add(self, fields: Mapping[str, Any]) -> Item:
        """A new pending item with the next id (``fields``: attribute names); returns it."""
        return self.update(lambda items: model.new_item(items, fields))

    def edit(self, item_id: str, changes: Mapping[str, Any], *,
             busy: str | None = None) -> Item:
        """Operator edits to one item (attribute names; status through the transition
        rules). ``busy``: see ``_refuse_busy``."""
        now = wire_now()

        def edit(items: list[Item]) -> Item:
            _refuse_busy(items, item_id, busy)
            return model.edit_item(items, item_id, changes, now=now)

        return self.update(edit)

    def transition(self, item_id: str, new_status: str, **fields: Any) -> Item:
        """Move one item to ``new_status`` under the lock (the loop's bookkeeping);
        ``fields`` are attribute names (``blocked_reason=…``)."""
        now = wire_now()
        return self.update(
            lambda items: model.transition_item(items, item_id, new_status, now=now, **fields))

    def replace(self, item: Item) -> None:
        """Put ``item`` back in the place of the item with its id, as it is (undoing a
        change whose commit failed)."""
        self.update(lambda items: model.replace_item(items, item))
