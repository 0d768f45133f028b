"""The events journal: ``{stateDir}/events.ndjson``, one JSON object per line.

Each line is ``{seq, schemaVersion: "1", eventId, type, timestamp, projectPath,
…fields}``. ``seq`` is dense from 0 per file (the next one is the number of
complete lines), and appending an ``eventId`` already in the file is a no-op —
that is what makes publication with persisted ids idempotent, so a retry after a
crash never doubles an event.

This file is appended to, not atomically replaced: it is the one place in the
project where a file is appended instead of rewritten through
``git_forge.atomic`` (a journal rewritten per event would cost O(file) and could
lose the whole history to a crash mid-rewrite). Appends hold the sidecar lock
(``events.ndjson.lock``), write one whole line with ``O_APPEND`` and fsync. A
crash can leave a torn final line without its newline: readers ignore it, and
the next append first truncates it away so the file stays one object per line.

A running loop *owns* its journal (``own``): it holds the loop lock, so it is the
journal's one writer, and it reads the file once instead of once per event. Its
appends go straight to an open ``O_APPEND`` descriptor without the sidecar lock
and without an fsync; ``sync`` makes them durable at the points that need it —
before an agent starts, before the git work of an outcome (a commit, a parallel
run's merge thread before its jobs), at the end of the run (``close``). A
killed loop loses nothing (the kernel holds what was written); a power loss may
lose the lines since the last sync, which restore and the manifests cover. A
foreign append meanwhile (the file grew behind the owner's back) sends the next
append through the locked path again.
"""

import json
import os
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict, cast

from git_forge.atomic import fsync_directory, write_all, write_failure
from git_forge.clock import compact_precise_stamp, precise_now
from git_forge.errors import StoreError, os_error_text
from git_forge.exit_codes import EXIT_ERROR
from git_forge.locks import locked
from git_forge.owned import make_dir, open_own
from git_forge.parsing import DocumentTooComplex, load_json

SCHEMA_VERSION = "1"
_RESERVED = ("seq", "schemaVersion", "eventId", "type", "timestamp", "projectPath")


class EventJSON(TypedDict):
    """One line of events.ndjson as ``append`` writes it: the envelope (``_RESERVED``),
    then the fields of its type, which the envelope does not name (formats.md)."""

    seq: int
    schemaVersion: str
    eventId: str
    type: str
    timestamp: str
    projectPath: str


def _line(event: EventJSON) -> bytes:
    """One event's line: compact JSON, and never ``NaN`` or ``Infinity`` (not JSON)."""
    return (json.dumps(event, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            + "\n").encode("utf-8")


def _complete_lines(raw: bytes) -> list[bytes]:
    """The newline-terminated lines of ``raw`` (a torn last line is left out)."""
    end = raw.rfind(b"\n")
    return raw[: end + 1].splitlines() if end >= 0 else []


def _complete_line_count(raw: bytes) -> int:
    """``len(_complete_lines(raw))`` without building the list: the next ``seq``."""
    if b"\r" in raw:  # json.dumps escapes it: only a foreign writer puts one here
        return len(_complete_lines(raw))
    return raw.count(b"\n")


def _journaled(raw: bytes, event_id: str) -> bool:
    """Whether a complete line of ``raw`` carries ``event_id``.

    Run before every append, so it must not parse the whole journal each time
    (that made a run quadratic). A line can only carry the id if the id's JSON
    text is in it — as we write it (UTF-8), or with non-ASCII escaped (as an
    ASCII-only writer would) — so the file is searched for those bytes first,
    and only the lines that contain them are parsed and compared exactly.
    """
    end = raw.rfind(b"\n") + 1
    needles = {json.dumps(event_id, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass"),
               json.dumps(event_id)[1:-1].encode("ascii")}
    if not any(raw.find(needle, 0, end) >= 0 for needle in needles):
        return False
    return any(
        (_parse(line) or {}).get("eventId") == event_id
        for line in _complete_lines(raw) if any(needle in line for needle in needles)
    )


def _parse(line: bytes) -> dict[str, object] | None:
    """One event, or ``None`` for a line that is not one (skipped, never fatal)."""
    try:
        event = load_json(line.decode("utf-8"), "events.ndjson")
    except (ValueError, DocumentTooComplex):
        return None
    return event if isinstance(event, dict) else None


def tail_events(path: Path | str, max_bytes: int) -> list[dict[str, object]]:
    """The complete, parseable events among the journal's last ``max_bytes`` bytes, in
    order, read without a lock (a line cut by where the read starts, or torn at the
    end, is left out); none when there is no journal."""
    try:
        with open(path, "rb") as journal:
            size = os.fstat(journal.fileno()).st_size
            journal.seek(max(0, size - max_bytes))
            raw = journal.read(max_bytes)
    except OSError:
        return []
    if size > max_bytes:  # the first line may be the end of one begun before the read
        raw = raw[raw.find(b"\n") + 1:]
    return [event for event in map(_parse, _complete_lines(raw)) if event is not None]


class _Owned:
    """What an owning loop keeps of its journal: the open descriptor, the next
    ``seq``, the ids already written, the size it expects, and unsynced lines."""

    def __init__(self, fd: int, seq: int, ids: set[str], size: int, created: bool) -> None:
        self.fd, self.seq, self.ids, self.size = fd, seq, ids, size
        self.unsynced = False
        self.created = created


class Journal:
    def __init__(self, path: Path | str, project_path: Path | str) -> None:
        self.path = Path(path)
        self.project_path = str(project_path)
        self._owned: _Owned | None = None
        self._mutex = threading.Lock()
        self._syncing = threading.Lock()

    # -- the owning loop ---------------------------------------------------------
    def own(self) -> None:
        """Become the journal's one writer (the caller holds the loop lock): read
        the file once, keep it open for appends."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with locked(self.path):
            raw = self._read_raw()
            if len(raw) and not raw.endswith(b"\n"):
                raw = raw[: raw.rfind(b"\n") + 1]
                self._truncate(len(raw))
            ids = {str(event.get("eventId")) for line in _complete_lines(raw)
                   if (event := _parse(line)) is not None}
            try:
                fd = open_own(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            except OSError as exc:
                raise StoreError(write_failure(self.path, exc), exit_code=EXIT_ERROR) from exc
            self._owned = _Owned(fd, _complete_line_count(raw), ids, len(raw), created=not raw)

    def sync(self) -> None:
        """Make the owner's appends durable (a no-op when nothing is pending): every
        line appended before the call. Any thread may sync (the merge thread does,
        before its git work) while the loop appends: the fsync is made on a copy of
        the descriptor, outside the appenders' mutex, so an append never waits for
        a disk flush; one sync runs at a time."""
        with self._syncing:
            with self._mutex:
                owned = self._owned
                if owned is None or not owned.unsynced:
                    return
                fd, created = os.dup(owned.fd), owned.created  # the owner may let go meanwhile
                owned.unsynced = owned.created = False
            try:
                os.fsync(fd)
                if created:
                    fsync_directory(self.path.parent)
            except OSError as exc:
                with self._mutex:  # still pending: the next sync tries again
                    owned.unsynced, owned.created = True, owned.created or created
                raise StoreError(write_failure(self.path, exc), exit_code=EXIT_ERROR) from exc
            finally:
                os.close(fd)

    def close(self) -> None:
        """Sync and stop owning; later appends take the locked path."""
        try:
            self.sync()
        finally:
            with self._mutex:
                owned, self._owned = self._owned, None
                if owned is not None:
                    os.close(owned.fd)

    def _append_owned(self, owned: _Owned, event_id: str | None,
                      build: Callable[[int, str], EventJSON]) -> EventJSON | None:
        if event_id is not None and event_id in owned.ids:
            return None
        event = build(owned.seq, event_id or str(uuid.uuid4()))
        data = _line(event)
        try:
            write_all(owned.fd, data)
        except OSError as exc:
            raise StoreError(write_failure(self.path, exc), exit_code=EXIT_ERROR) from exc
        owned.seq += 1
        owned.size += len(data)
        owned.ids.add(event["eventId"])
        owned.unsynced = True
        return event

    def _still_owned(self) -> _Owned | None:
        """The owner's state, unless the file changed behind it (then: not owned)."""
        owned = self._owned
        if owned is None:
            return None
        try:
            same = os.fstat(owned.fd).st_size == owned.size and \
                os.stat(self.path).st_ino == os.fstat(owned.fd).st_ino
        except OSError:
            same = False
        if not same:
            self._owned = None
            os.close(owned.fd)
            return None
        return owned

    def append(
        self, type: str, event_id: str | None = None, **fields: Any
    ) -> EventJSON | None:
        """Append one event; return it, or ``None`` when ``event_id`` is already journaled."""
        if not type:
            raise StoreError("an event needs a type")
        clash = sorted(set(fields) & set(_RESERVED))
        if clash:
            raise StoreError(f"event field {clash[0]!r} is reserved")

        def build(seq: int, identity: str) -> EventJSON:
            envelope: EventJSON = {
                "seq": seq, "schemaVersion": SCHEMA_VERSION, "eventId": identity, "type": type,
                "timestamp": precise_now(), "projectPath": self.project_path}
            return cast(EventJSON, {**envelope, **fields})  # fields: no reserved name

        with self._mutex:  # the supervisor's threads publish through the same journal
            owned = self._still_owned()
            if owned is not None:
                return self._append_owned(owned, event_id, build)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with locked(self.path):
            raw = self._read_raw()
            if len(raw) and not raw.endswith(b"\n"):
                self._truncate(raw.rfind(b"\n") + 1)  # drop the torn line of a crash
            if event_id is not None and _journaled(raw, event_id):
                return None
            event = build(_complete_line_count(raw), event_id or str(uuid.uuid4()))
            self._write_line(_line(event), created=not raw)
            return event

    def read(self) -> list[dict[str, object]]:
        """Every complete, parseable event in order (a torn last line is ignored): read
        as another writer may have written it, each field checked where it is used."""
        events = []
        for line in _complete_lines(self._read_raw()):
            event = _parse(line)
            if event is not None:
                events.append(event)
        return events

    def rotate(self, archive_dir: Path | str) -> Path | None:
        """Move the journal into ``archive_dir`` under a timestamped name; the next
        append starts a new file at ``seq`` 0. ``None`` when there is nothing to move."""
        archive = Path(archive_dir)
        if not self.path.exists():
            return None
        with locked(self.path):
            if not self.path.exists():
                return None
            make_dir(archive)
            stamp = compact_precise_stamp()
            target = archive / f"{self.path.stem}-{stamp}{self.path.suffix}"
            counter = 1
            while target.exists():
                target = archive / f"{self.path.stem}-{stamp}-{counter}{self.path.suffix}"
                counter += 1
            try:
                os.replace(self.path, target)
                fsync_directory(archive)
                fsync_directory(self.path.parent)
            except OSError as exc:
                raise StoreError(f"cannot archive {self.path}: {os_error_text(exc)}") from exc
            return target

    def _read_raw(self) -> bytes:
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return b""
        except OSError as exc:
            raise StoreError(f"cannot read {self.path}: {os_error_text(exc)}") from exc

    def _truncate(self, size: int) -> None:
        try:
            fd = open_own(self.path, os.O_WRONLY)
            try:
                os.ftruncate(fd, size)
            finally:
                os.close(fd)
        except OSError as exc:
            raise StoreError(f"cannot repair {self.path}: {os_error_text(exc)}") from exc

    def _write_line(self, data: bytes, *, created: bool) -> None:
        try:
            fd = open_own(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            try:
                write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            if created:
                fsync_directory(self.path.parent)
        except OSError as exc:
            raise StoreError(write_failure(self.path, exc), exit_code=EXIT_ERROR) from exc
