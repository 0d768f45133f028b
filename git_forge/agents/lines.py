"""Splitting an agent's output stream into whole lines, incrementally, in bounded
memory: a line longer than ``limit`` keeps only its first ``limit`` bytes (and
says so), so a parser's memory is flat in the transcript's size."""

from __future__ import annotations

from collections.abc import Iterator


class LineBuffer:
    def __init__(self, limit: int = 8 * 1024 * 1024) -> None:
        self.limit = limit
        self._partial = bytearray()
        self._overlong = False

    def feed(self, data: bytes) -> Iterator[tuple[bytes, bool]]:
        """Each line completed by ``data``: ``(line without its newline, cut)``."""
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                self._keep(data[start:])
                return
            self._keep(data[start:end])
            yield bytes(self._partial), self._overlong
            self._partial.clear()
            self._overlong = False
            start = end + 1

    def finish(self) -> Iterator[tuple[bytes, bool]]:
        """The last line when the stream did not end with a newline."""
        if self._partial:
            yield bytes(self._partial), self._overlong
            self._partial.clear()
            self._overlong = False

    def _keep(self, piece: bytes) -> None:
        room = self.limit - len(self._partial)
        if len(piece) > room:
            self._overlong = True
            piece = piece[:max(0, room)]
        self._partial += piece
