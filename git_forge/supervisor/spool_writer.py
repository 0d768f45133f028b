"""The writing side of a process's output spool (the format and its reader: ``spool``).

Why the writer is shaped this way. Appending must cost O(chunk) and keep up
with a process writing as fast as a pipe allows, and most of a large output
is dropped by retention anyway. So an append only copies into a rolling
window in memory (``RollingBuffer``, normally ``ceiling + segment`` bytes);
``flush`` — on a timer, when the window would otherwise overwrite unwritten
bytes, and at close — first commits a smaller window without the segments that
retention drops and deletes them (so the disk never holds two windows), then
writes the still-retained, not yet written part to the segment files, fsyncs
them, and atomically replaces ``index.json``. Bytes that were dropped before a
flush reached them are never written at all. A window smaller than the
retained spool (the supervisor's default) is spilled to the segment files,
without fsyncs, by the appending thread itself when the window is full: a
whole window per write, with no hand-off to another thread and back (a spiller
thread overlapping the two cost 10-20 % more CPU per flooded GiB, in thousands
of lock hand-offs, for no measurable gain in wall time on two cores). With a
small window every flooded byte is written once to the page cache, and each
segment dropped behind it costs an index replace (about a millisecond on ext4,
which flushes a file renamed over another) and an unlink: that, not Python,
is what a flood costs beyond reading the pipe.

Segment files are appended to, not atomically replaced: rewriting a segment
per flush would cost O(window), which the contract forbids. They are the
spool's exception to the project's atomic-replace rule, and a safe one:
bytes are only ever added after the end of a segment, a torn append can only
shorten the tail, and nothing before it is touched. ``index.json`` itself is
written through ``git_forge.atomic``.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from git_forge.atomic import write_all, write_failure
from git_forge.errors import StoreError, os_error_text
from git_forge.jsonfile import write_json
from git_forge.supervisor.buffer import (
    Chunk,
    RollingBuffer,
    check_read_arguments,
    resolve_cursor,
)
from git_forge.supervisor.lifecycle import ProcessError
from git_forge.supervisor.paths import DIR_MODE, FILE_MODE
from git_forge.supervisor.spool import (
    DEFAULT_CEILING,
    INDEX_FILE,
    MAX_SEGMENT_BYTES,
    READ_ATTEMPTS,
    SPOOL_VERSION,
    Extent,
    SpoolReader,
    read_range,
    retained_start,
    segment_name,
)

#: Files written at once by the final flush.
_FLUSH_THREADS = 4
#: A flush that took d seconds postpones the next timed one by at least 10·d.
_FLUSH_DUTY_FACTOR = 10


@dataclass(frozen=True)
class Retention:
    """Which bytes a spool keeps and how they fall into segments: pure arithmetic,
    no files and no threads, so every rule of the bounded window is testable alone."""

    ceiling: int
    segment_bytes: int

    def start(self, total: int) -> int:
        """First kept byte once ``total`` bytes were appended (``retained_start``)."""
        return retained_start(total, self.ceiling, self.segment_bytes)

    def segment_of(self, position: int) -> int:
        return position // self.segment_bytes * self.segment_bytes

    def pieces(self, position: int, end: int) -> list[tuple[int, int, int]]:
        """``[position, end)`` cut at segment boundaries: (segment, start, end)."""
        pieces = []
        while position < end:
            segment = self.segment_of(position)
            piece_end = min(end, segment + self.segment_bytes)
            pieces.append((segment, position, piece_end))
            position = piece_end
        return pieces

    def committed(self, written: int, run_start: int) -> Extent:
        """The extent to commit once ``[run_start, written)`` is on disk."""
        retained = max(run_start, self.start(written))
        return Extent(written, min(retained, written))

    def shrink_to(self, committed: Extent, end: int, oldest: int | None) -> int | None:
        """Before bytes up to ``end`` are written: the smaller ``retained_from`` that
        leaves out the whole oldest segments retention at ``end`` drops (so the disk
        never holds the old window and the new one at once), or ``None``."""
        step = self.segment_bytes
        bound = min(self.start(end), committed.total_bytes // step * step)
        if bound <= committed.retained_from or oldest is None or oldest + step > bound:
            return None
        return bound


class SegmentFiles:
    """The files of one spool directory — segments and ``index.json`` — and the only
    code that writes them. Appends through one open segment (kept open between
    writes); deletions oldest first. Nothing here fsyncs a segment as it writes it:
    ``sync`` makes every segment written since the last call durable at once, just
    before the index that names them is committed."""

    def __init__(self, directory: Path, retention: Retention) -> None:
        self.directory = directory
        self.retention = retention
        #: Segments on disk, oldest first.
        self.segments: list[int] = []
        #: Segments written to since the last ``sync``.
        self.unsynced: set[int] = set()
        self._fd: int | None = None
        self._fd_segment = -1

    @property
    def oldest(self) -> int | None:
        return self.segments[0] if self.segments else None

    def note(self, segment: int) -> None:
        """A piece is about to be written into ``segment``."""
        if not self.segments or self.segments[-1] != segment:
            self.segments.append(segment)

    def append(self, segment: int, start: int, data: list[memoryview]) -> None:
        try:
            if self._fd_segment != segment:
                self.close_open()
                self._fd = self._open(segment, start)
                self._fd_segment = segment
            assert self._fd is not None
            self.unsynced.add(segment)
            write_all(self._fd, *data)
        except OSError as exc:
            raise ProcessError("spool_corrupt", write_failure(self.directory, exc)) from exc

    def _open(self, segment: int, start: int) -> int:
        path = self.directory / segment_name(segment)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC,
                     FILE_MODE)
        if os.fstat(fd).st_size != start - segment:
            os.close(fd)
            raise ProcessError("spool_corrupt", f"{path} does not end where the spool does")
        return fd

    def sync(self) -> None:
        """fsync every segment written since the last call (several at once: the
        final one is on the path from a process's exit to its terminal manifest)."""
        pending, self.unsynced = sorted(self.unsynced), set()

        def sync_one(segment: int) -> None:
            if segment == self._fd_segment and self._fd is not None:
                os.fsync(self._fd)
                return
            try:
                fd = os.open(self.directory / segment_name(segment), os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                return  # retention dropped it meanwhile
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

        try:
            if len(pending) <= 1:
                for segment in pending:
                    sync_one(segment)
            else:
                with ThreadPoolExecutor(min(_FLUSH_THREADS, len(pending))) as pool:
                    list(pool.map(sync_one, pending))
        except OSError as exc:
            self.unsynced.update(pending)
            raise ProcessError("spool_corrupt", write_failure(self.directory, exc)) from exc

    def close_open(self) -> None:
        """Close the open segment (what it holds is synced by the next ``sync``)."""
        if self._fd is not None:
            fd, self._fd, self._fd_segment = self._fd, None, -1
            os.close(fd)

    def commit_index(self, extent: Extent, *, durable: bool = True) -> None:
        document = {
            "version": SPOOL_VERSION,
            "segment_bytes": self.retention.segment_bytes,
            "ceiling": self.retention.ceiling,
            "total_bytes": extent.total_bytes,
            "retained_from": extent.retained_from,
        }
        try:
            write_json(self.directory / INDEX_FILE, document, indent=None, mode=FILE_MODE,
                       durable=durable)
        except StoreError as exc:
            raise ProcessError("spool_corrupt", exc.message) from exc

    def drop_before(self, bound: int) -> None:
        """Delete every segment that ends at or before ``bound`` (after an index
        that no longer names them was committed)."""
        step = self.retention.segment_bytes
        while self.segments and self.segments[0] + step <= bound:
            segment = self.segments.pop(0)
            if segment == self._fd_segment:
                self.close_open()
            self.unsynced.discard(segment)
            with contextlib.suppress(FileNotFoundError):
                (self.directory / segment_name(segment)).unlink()


class SpoolWriter:
    """The writing side: O(chunk) appends into a small memory window, bytes spilled
    to the segment files when the window would overwrite unwritten ones, and a
    committed extent that is always durable.

    Thread-safe: drains append concurrently with a flusher and with readers. One
    append is one run of bytes in the record: two appenders never interleave
    inside one (the drains append whole lines).
    """

    def __init__(
        self,
        directory: Path | str,
        *,
        ceiling: int = DEFAULT_CEILING,
        segment_bytes: int = MAX_SEGMENT_BYTES,
        window_bytes: int | None = None,
        flush_interval: float = 1.0,
    ) -> None:
        if not 0 < segment_bytes <= MAX_SEGMENT_BYTES:
            raise ProcessError("invalid_settings", f"segments are 1..{MAX_SEGMENT_BYTES} bytes")
        if ceiling <= 0:
            raise ProcessError("invalid_settings", "the spool ceiling must be positive")
        self.directory = Path(directory)
        self.ceiling = ceiling
        self.segment_bytes = segment_bytes
        self.flush_interval = flush_interval
        self._retention = Retention(ceiling, segment_bytes)
        try:
            self.directory.mkdir(mode=DIR_MODE)
        except OSError as exc:
            raise ProcessError("process_setup_failed",
                               f"cannot create the spool: {os_error_text(exc)}") from exc
        self._buffer = RollingBuffer(window_bytes or ceiling + 2 * segment_bytes)
        self._lock = threading.Lock()
        #: First byte a write in progress reads from the window: appends keep off it.
        self._pinned: int | None = None
        self._append_lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._sealed = False
        self._written = 0      # end of the bytes on disk in the current run
        self._run_start = 0    # first byte of the current contiguous run on disk
        self._files = SegmentFiles(self.directory, self._retention)
        self._committed = Extent()  # the last durable index
        self._indexed = Extent()    # the last index written, durable or not
        self._next_flush = time.monotonic() + flush_interval
        # The empty index claims no byte, so it need not be durable: a spool whose
        # index a power cut lost reads as empty, which is what it held (a reader
        # extends any index over the bytes its segments hold).
        self._files.commit_index(Extent(), durable=False)

    # -- state -------------------------------------------------------------------
    @property
    def total_bytes(self) -> int:
        with self._lock:
            if self._buffer.closed:
                return self._committed.total_bytes
            return self._buffer.total_bytes

    @property
    def retained_from(self) -> int:
        return self._retained(self.total_bytes)

    @property
    def committed(self) -> Extent:
        """The extent of the last flush: every byte in it is durable."""
        return self._committed

    def _retained(self, total: int) -> int:
        return self._retention.start(total)

    # -- writing -----------------------------------------------------------------
    def append(self, data: bytes | bytearray | memoryview) -> bool:
        """Add ``data`` at the end, as one run no other append interleaves with.
        False (and nothing more stored) once the spool is closed.

        When the window is full of bytes not on disk yet, the appending thread
        writes them out itself (``_spill``) and goes on: one copy into the page
        cache per window, no hand-off to another thread and back. A spill that
        fails raises here (the drain stops the process)."""
        view = memoryview(data)
        with self._append_lock:
            half = max(1, self._buffer.capacity // 2)
            while len(view):
                piece = view[:half]
                while True:
                    with self._lock:
                        if self._sealed:
                            return False
                        if not self._would_lose_unwritten(len(piece)):
                            self._buffer.append(piece)
                            break
                    self._spill()
                view = view[len(piece):]
        return True

    def _would_lose_unwritten(self, size: int) -> bool:
        """True when appending ``size`` bytes would push retained bytes out of the
        memory window before they reached the disk, or overwrite bytes a write in
        progress is reading from the window."""
        new_total = self._buffer.total_bytes + size
        overwritten_to = new_total - self._buffer.capacity
        if overwritten_to <= 0:
            return False
        kept = max(self._written, self._retained(new_total))
        if self._pinned is not None:
            kept = min(kept, self._pinned)
        return kept < overwritten_to

    def _spill(self) -> None:
        """In the appending thread, its window full: write the retained, unwritten
        bytes to the segment files — the page cache, no fsync and no durable index —
        so the window can take more; drop the segments retention no longer keeps.

        Under a flood the window fills every few MiB; an fsync and a durable index
        each time would cost more than the output. Durability stays with ``flush``
        (on the timer and at close). The index that lets the dropped segments go is
        written without fsyncs too: it claims no byte that is not durable or
        dropped (see ``_retire``), and a reader that finds an older index after a
        power cut, naming segments already deleted, starts at the first one left.
        """
        with self._flush_lock:
            with self._lock:
                if self._buffer.closed:
                    return
                end = self._buffer.total_bytes
                position = max(self._written, self._retained(end))
            self._write_retiring(position, end)

    def _write_retiring(self, position: int, end: int) -> None:
        """Write live bytes segment by segment, each followed by the drops it allows,
        so the disk holds no more than if the bytes had been written as they came."""
        for _, start, piece_end in self._retention.pieces(position, end):
            self._write_live(start, piece_end)
            self._retire(durable=False)

    def flush_if_due(self, now: float | None = None) -> None:
        """Flush when the interval has passed since the last flush — or longer, after
        an expensive one: flushing stays under a tenth of the time, so a process
        writing as fast as it can is not slowed down by writes retention will drop."""
        now = time.monotonic() if now is None else now
        if now >= self._next_flush:
            self.flush()

    def flush(self) -> Extent:
        """Write the retained, unwritten bytes; fsync; commit the index; drop old segments."""
        with self._flush_lock:
            began = time.monotonic()
            try:
                return self._flush()
            finally:
                finished = time.monotonic()
                self._next_flush = finished + max(
                    self.flush_interval, _FLUSH_DUTY_FACTOR * (finished - began)
                )

    def _flush(self) -> Extent:
        with self._lock:
            if self._buffer.closed:
                return self._committed
            end = self._buffer.total_bytes
            position = max(self._written, self._retained(end))
            sealed = self._sealed
        self._give_up_dropped_segments(end)
        if sealed:
            self._write_sealed(position, end)
        else:
            self._write_retiring(position, end)
        return self._commit()

    def _write_live(self, position: int, end: int) -> None:
        """While appends go on: write one segment's piece at a time straight from the
        window, skipping what retention drops meanwhile. The piece is pinned while it
        is written, so no append overwrites it (``_would_lose_unwritten``)."""
        while position < end:
            segment, start, piece_end = self._retention.pieces(position, end)[0]
            with self._lock:
                dropped_to = self._retained(self._buffer.total_bytes)
                if dropped_to > start:
                    # Retention moved past these bytes while we were writing.
                    if dropped_to >= end:
                        return
                    position = dropped_to
                    continue
                data = self._buffer.views(start, piece_end)
                self._pinned = start
            try:
                if start != self._written:
                    self._run_start = start  # a new run: everything before it was dropped
                self._files.note(segment)
                self._append_to_segment(segment, start, data)
            finally:
                with self._lock:
                    self._pinned = None
            with self._lock:
                self._written = piece_end
            position = piece_end

    def _write_sealed(self, position: int, end: int) -> None:
        """After ``close`` nothing overwrites the window: write every segment's piece
        straight from it (``_commit`` then syncs them all at once)."""
        pieces = self._retention.pieces(position, end)
        if not pieces:
            return
        if position != self._written:
            self._run_start = position  # a new run: everything before it was dropped
        for segment, start, piece_end in pieces:
            self._files.note(segment)
            self._append_to_segment(segment, start, self._buffer.views(start, piece_end))
        with self._lock:
            self._written = end

    def _append_to_segment(self, segment: int, start: int, data: list[memoryview]) -> None:
        """One write into a segment (a seam tests measure the disk through)."""
        self._files.append(segment, start, data)

    def _commit(self) -> Extent:
        extent = self._retention.committed(self._written, self._run_start)
        if extent == self._committed:
            return extent
        self._files.sync()
        # The index's atomic replace fsyncs this directory after the rename: that one
        # fsync also makes the entries of new segment files durable, before or with
        # the index that names them.
        self._files.commit_index(extent)
        self._committed = self._indexed = extent
        self._files.drop_before(extent.retained_from)
        return extent

    def _retire(self, *, durable: bool) -> None:
        """After a spill: let go of the segments retention at ``_written`` drops, behind
        an index that no longer names them. That index claims only what is durable
        or dropped: the last durable total, or — when retention moved past it — no
        byte at all from the new first one on (readers extend any index over the
        bytes its segments hold)."""
        bound = self._retention.committed(self._written, self._run_start).retained_from
        oldest = self._files.oldest
        if bound <= self._indexed.retained_from or oldest is None:
            return
        if oldest + self._retention.segment_bytes > bound:
            return
        extent = Extent(max(self._committed.total_bytes, bound), bound)
        self._files.commit_index(extent, durable=durable)
        self._indexed = extent
        self._files.drop_before(bound)

    def _give_up_dropped_segments(self, end: int) -> None:
        """Before new bytes are written, commit a smaller window that leaves out the
        segments retention at ``end`` drops, and delete them."""
        bound = self._retention.shrink_to(self._indexed, end, self._files.oldest)
        if bound is None:
            return
        extent = Extent(self._indexed.total_bytes, bound)
        self._files.commit_index(extent)
        self._committed = self._indexed = extent
        self._files.drop_before(bound)

    def close(self) -> Extent:
        """Refuse further appends, write everything retained, release the memory.
        Returns the final, durable extent."""
        with self._lock:
            self._sealed = True
        try:
            extent = self.flush()
        finally:
            with self._flush_lock, self._lock:
                self._buffer.close()
                with contextlib.suppress(OSError):
                    self._files.close_open()
        return extent

    # -- reading -----------------------------------------------------------------
    def read(self, cursor: int, max_bytes: int) -> Chunk:
        """Read with the spool's cursor rules; recent bytes come from memory."""
        check_read_arguments(cursor, max_bytes)
        reader = SpoolReader(self.directory)
        for _ in range(READ_ATTEMPTS):
            with self._lock:
                if self._buffer.closed:
                    break
                total = self._buffer.total_bytes
                start, gap = resolve_cursor(cursor, self._retained(total), total)
                end = min(total, start + max_bytes)
                window_from = self._buffer.retained_from
                if start >= window_from:
                    return Chunk(self._buffer.copy(start, end), end, gap)
            end = min(end, window_from)
            try:
                return Chunk(read_range(self.directory, self.segment_bytes, start, end), end, gap)
            except FileNotFoundError:
                continue
        return reader.read(cursor, max_bytes)
