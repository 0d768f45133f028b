"""The in-memory rolling window of a process's output, and the cursor rules every
output reader shares.

A cursor is a raw byte offset in one combined append order of stdout and stderr.
A read never fails because old bytes were dropped: it starts at the oldest kept
byte and says ``gap``. The window is a ring in an anonymous memory map, so its
pages are only allocated once output reaches them and its size never grows with
the amount of output.
"""

import mmap
import threading
from typing import NamedTuple

from git_forge.supervisor.lifecycle import ProcessError


class Chunk(NamedTuple):
    """One read: the bytes, where the next read starts, and whether bytes before
    ``next_cursor - len(data)`` were skipped because they are no longer kept."""

    data: bytes
    next_cursor: int
    gap: bool

    @property
    def start_cursor(self) -> int:
        return self.next_cursor - len(self.data)


def check_read_arguments(cursor: object, max_bytes: object) -> None:
    if not isinstance(cursor, int) or isinstance(cursor, bool) or cursor < 0:
        raise ProcessError("invalid_arguments", "a cursor is a non-negative byte offset")
    if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 0:
        raise ProcessError("invalid_arguments", "a read limit is a non-negative byte count")


def resolve_cursor(cursor: int, retained_from: int, total_bytes: int) -> tuple[int, bool]:
    """Where a read at ``cursor`` starts, and whether that is a gap.

    ``cursor > total_bytes`` is ``cursor_ahead`` (its ``next_cursor`` is
    ``total_bytes``); ``cursor < retained_from`` starts at ``retained_from`` with
    ``gap``; ``cursor == retained_from`` is not a gap.
    """
    if cursor > total_bytes:
        raise ProcessError(
            "cursor_ahead", f"cursor {cursor} is beyond {total_bytes} bytes",
            next_cursor=total_bytes,
        )
    if cursor < retained_from:
        return retained_from, True
    return cursor, False


class RollingBuffer:
    """The last ``capacity`` bytes appended, addressed by absolute cursors.

    Not thread-safe on its own: the owner serializes appends and reads.
    """

    def __init__(self, capacity: int) -> None:
        if capacity <= 0:
            raise ProcessError("invalid_settings", "a rolling buffer needs a positive capacity")
        self.capacity = capacity
        self.total_bytes = 0
        self._ring: mmap.mmap | None = mmap.mmap(-1, capacity)
        self._view: memoryview | None = memoryview(self._ring)

    @property
    def retained_from(self) -> int:
        """The oldest byte still readable."""
        return max(0, self.total_bytes - self.capacity)

    @property
    def closed(self) -> bool:
        return self._ring is None

    def append(self, data: bytes | bytearray | memoryview) -> None:
        """Copy ``data`` in, dropping the oldest bytes beyond the capacity. O(len(data))."""
        view = self._require_view()
        size = len(data)
        if size == 0:
            return
        if size > self.capacity:
            data = memoryview(data)[size - self.capacity:]
        count = len(data)
        start = (self.total_bytes + size - count) % self.capacity
        first = min(count, self.capacity - start)
        view[start:start + first] = data[:first]
        if first < count:
            view[0:count - first] = data[first:]
        self.total_bytes += size

    def views(self, start: int, end: int) -> list[memoryview]:
        """Zero-copy views of ``[start, end)`` (one, or two across the ring's end).
        Valid only until the next append: the owner keeps appends out meanwhile."""
        view = self._require_view()
        if not (self.retained_from <= start <= end <= self.total_bytes):
            raise ProcessError("invalid_arguments", f"bytes {start}..{end} are not in the window")
        begin = start % self.capacity
        count = end - start
        first = min(count, self.capacity - begin)
        if first == count:
            return [view[begin:begin + count]]
        return [view[begin:], view[:count - first]]

    def copy(self, start: int, end: int) -> bytes:
        """The bytes ``[start, end)``, which must still be in the window."""
        return b"".join(bytes(part) for part in self.views(start, end))

    def read(self, cursor: int, max_bytes: int) -> Chunk:
        check_read_arguments(cursor, max_bytes)
        start, gap = resolve_cursor(cursor, self.retained_from, self.total_bytes)
        end = min(self.total_bytes, start + max_bytes)
        return Chunk(self.copy(start, end), end, gap)

    def close(self) -> None:
        """Give the memory back; the buffer holds nothing afterwards."""
        if self._view is not None:
            self._view.release()
            self._view = None
        if self._ring is not None:
            ring, self._ring = self._ring, None
            try:
                ring.close()
            except BufferError:
                # A view of it is still referenced (by a failed write's traceback):
                # the map goes when that does. The buffer is closed either way.
                pass

    def _require_view(self) -> memoryview:
        if self._view is None:
            raise ProcessError("invalid_arguments", "the rolling buffer is closed")
        return self._view


class StreamTail:
    """The last ``size`` bytes of one stream (stdout or stderr) on its own, apart
    from the combined record: where a caller looks for a stream's final lines
    (the agent's signal on stdout, its last error on stderr) however much of the
    other stream came after."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._data = bytearray()
        self._lock = threading.Lock()

    def add(self, data: bytes | bytearray | memoryview) -> None:
        with self._lock:
            if len(data) >= self.size:  # only its end can matter: copy no more than that
                self._data[:] = data[len(data) - self.size:]
                return
            self._data += data
            if len(self._data) > 2 * self.size:
                del self._data[:len(self._data) - self.size]

    @property
    def data(self) -> bytes:
        with self._lock:
            return bytes(self._data[-self.size:])
