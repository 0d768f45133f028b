"""The durable output spool of one process (``{stateDir}/proc/<handle>.spool/``).

Layout: segment files of at most ``segment_bytes`` (≤ 4 MiB) named by their
start offset (``00000000000000000000.seg``), plus ``index.json``, the commit
point: ``{total_bytes, retained_from, segment_bytes, ceiling}`` of the last
flush. Retention keeps ``[retained_from, total)`` with ``retained_from`` on a
segment boundary and ``ceiling <= total - retained_from < ceiling + segment``:
whole oldest segments are dropped, never a rewrite of the window. This module is
the format and its reader, which ``git forge proc`` uses from any process; the
writer, in the supervisor's process alone, is ``spool_writer``.

Reading needs no lock and works from another process while the writer runs:
read ``index.json``, extend its total over bytes already appended to the
segment at its end, read ``index.json`` again — the writer commits a newer
index before it deletes a segment, so an unchanged index proves the extension
saw no deletion — and read the segments. A segment deleted under a reader's
feet means a newer index exists: the read starts over (and reports a gap).
After a crash the spool reopens with every byte that reached the segment
files.
"""

import os
from pathlib import Path
from typing import NamedTuple

from git_forge.errors import os_error_text
from git_forge.parsing import DocumentTooComplex, load_json
from git_forge.supervisor.buffer import Chunk, check_read_arguments, resolve_cursor
from git_forge.supervisor.lifecycle import ProcessError

MAX_SEGMENT_BYTES = 4 * 1024 * 1024
DEFAULT_CEILING = 64 * 1024 * 1024
INDEX_FILE = "index.json"
SEGMENT_SUFFIX = ".seg"
SPOOL_VERSION = 1
#: A reader retries when segments vanish under it (a newer flush deleted them).
READ_ATTEMPTS = 20


def retained_start(total: int, ceiling: int, segment_bytes: int) -> int:
    """First kept byte when ``total`` bytes were appended: a segment boundary,
    with at least ``ceiling`` and less than ``ceiling + segment_bytes`` kept."""
    if total <= ceiling:
        return 0
    return (total - ceiling) // segment_bytes * segment_bytes


def segment_name(start: int) -> str:
    return f"{start:020d}{SEGMENT_SUFFIX}"


class Extent(NamedTuple):
    """The bytes a spool holds: ``[retained_from, total_bytes)``."""

    total_bytes: int = 0
    retained_from: int = 0


class _Index(NamedTuple):
    total_bytes: int
    retained_from: int
    segment_bytes: int


def _read_index(directory: Path) -> _Index | None:
    """The committed index, ``None`` when the spool (or its index) does not exist.
    An empty index file is none either: the first, non-durable index of a spool
    that a power cut caught before its first durable commit (it claimed nothing)."""
    path = directory / INDEX_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ProcessError("spool_corrupt", f"cannot read {path}: {os_error_text(exc)}") from exc
    if not raw:
        return None
    try:
        document = load_json(raw.decode("utf-8"), path)
        index = _Index(
            int(document["total_bytes"]), int(document["retained_from"]),
            int(document["segment_bytes"]),
        )
    except DocumentTooComplex as exc:
        raise ProcessError("spool_corrupt", exc.message) from exc
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise ProcessError("spool_corrupt", f"{path} is corrupt ({exc})") from exc
    if not (
        0 < index.segment_bytes <= MAX_SEGMENT_BYTES
        and 0 <= index.retained_from <= index.total_bytes
        and index.retained_from % index.segment_bytes == 0
    ):
        raise ProcessError("spool_corrupt", f"{path} holds inconsistent bounds")
    return index


def read_range(directory: Path, segment_bytes: int, start: int, end: int) -> bytes:
    """Bytes ``[start, end)`` from the segment files. ``FileNotFoundError`` when a
    segment is gone (the caller retries); a short segment is ``spool_corrupt``."""
    parts: list[bytes] = []
    position = start
    while position < end:
        segment = position // segment_bytes * segment_bytes
        count = min(end, segment + segment_bytes) - position
        path = directory / segment_name(segment)
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            data = os.pread(fd, count, position - segment)
        finally:
            os.close(fd)
        if len(data) != count:
            raise ProcessError("spool_corrupt", f"{path} is shorter than its index says")
        parts.append(data)
        position += count
    return b"".join(parts)


class SpoolReader:
    """Read-only access to a spool, from any process, while or after it is written."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)

    def extent(self) -> Extent:
        """The readable bytes: the committed index, extended over bytes already
        appended to the segment at its end (a live writer's unflushed tail or the
        last appends before a crash)."""
        return self._extent()[0]

    def _extent(self) -> tuple[Extent, int]:
        """The extent from an index that stayed current while its segments were
        looked at. The writer commits a newer index before it deletes a segment, so
        an index read again unchanged after the ``stat`` calls proves that no segment
        they saw missing was deleted meanwhile. Without that check a reader that lost
        the processor between reading the index and looking at its last segment took
        a segment deleted since for the end of the output, and its total went
        backwards (behind a cursor it had already been given)."""
        index = _read_index(self.directory)
        for _ in range(READ_ATTEMPTS):
            if index is None:
                return Extent(), MAX_SEGMENT_BYTES
            extent = self._extended(index)
            again = _read_index(self.directory)
            if again == index:
                return extent, index.segment_bytes
            index = again
        raise ProcessError("spool_corrupt", f"the index of {self.directory} keeps changing")

    def _extended(self, index: _Index) -> Extent:
        """``index``'s extent, extended over bytes already appended to its last segment
        (and to the full segments after it).

        Its first segment missing under an index read again unchanged (the writer
        commits a newer index before it deletes one, so a live writer cannot cause
        it) means a power cut brought back an older index than the non-durable one
        that let the segment go (``SpoolWriter.spill``): those bytes were dropped,
        and the extent starts at the first segment left."""
        size_of = self._segment_size
        total, step = index.total_bytes, index.segment_bytes
        segment = total // step * step
        while True:
            size = size_of(segment)
            if size is None or segment + size < total:
                break
            total = max(total, segment + min(size, step))
            if size < step:
                break
            segment += step
        retained = index.retained_from
        if retained < total and size_of(retained) is None:
            retained = self._first_segment_from(retained, total)
        return Extent(total, retained)

    def _first_segment_from(self, start: int, total: int) -> int:
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return total
        starts = [int(name[:-len(SEGMENT_SUFFIX)]) for name in names
                  if name.endswith(SEGMENT_SUFFIX) and name[:-len(SEGMENT_SUFFIX)].isdigit()]
        return min([s for s in starts if start <= s < total], default=total)

    def _segment_size(self, start: int) -> int | None:
        try:
            return (self.directory / segment_name(start)).stat().st_size
        except FileNotFoundError:
            return None

    def read(self, cursor: int, max_bytes: int) -> Chunk:
        check_read_arguments(cursor, max_bytes)
        for _ in range(READ_ATTEMPTS):
            extent, step = self._extent()
            start, gap = resolve_cursor(cursor, extent.retained_from, extent.total_bytes)
            end = min(extent.total_bytes, start + max_bytes)
            try:
                return Chunk(read_range(self.directory, step, start, end), end, gap)
            except FileNotFoundError:
                continue
        raise ProcessError("spool_corrupt", f"segments of {self.directory} are missing")
