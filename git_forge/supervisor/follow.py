"""Reading one process's output window by window, from any process.

A reader of the spool decides three things the view alone does not: where the
next read starts, when a bounded pass over what is retained has reached its end,
and — following a live process — when to read again and when nothing more will
come. They live here so that every reader (``git forge proc output``, a test, a
future consumer) stops at the same byte and never spins or waits forever.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from git_forge.safetext import safe_text
from git_forge.supervisor.buffer import Chunk
from git_forge.supervisor.lifecycle import ProcessError
from git_forge.supervisor.manifest import Manifest
from git_forge.supervisor.render import RenderedOutput
from git_forge.supervisor.view import ProcView
from git_forge.words import size

#: How long a follower waits before it reads a live process's spool again.
FOLLOW_POLL_SECONDS = 0.2
#: How far behind a line follower may fall before it skips ahead (it cannot keep up).
BEHIND_BYTES = 1024 * 1024
#: What a line follower reads in one look, and what of the end it resumes at after a skip.
LOOK_BYTES = 256 * 1024
#: The longest line a line follower shows whole; the rest of a longer one is cut, and says so.
LINE_BYTES = 16 * 1024


@dataclass(frozen=True)
class Read:
    """One window: the manifest as it was *before* the read (so "terminal and at
    the end" means no byte follows) and the rendered bytes."""

    manifest: Manifest
    rendered: RenderedOutput


class OutputReader:
    """The output of ``handle`` read from ``cursor`` in windows of ``window`` raw bytes.

    ``cursor`` is always where the next read starts; when a read fails it stays
    where that read began, and ``failure`` is the error, so a caller can say
    which cursor was refused (any other error came from elsewhere).
    """

    def __init__(self, view: ProcView, handle: str, cursor: int, *, window: int,
                 encoding: str = "text") -> None:
        self.view = view
        self.handle = handle
        self.cursor = cursor
        self.window = window
        self.encoding = encoding
        self.failure: ProcessError | None = None

    def read(self) -> Read:
        """One window from ``cursor``; ``cursor`` moves to where it stopped."""
        try:
            manifest, rendered = self.view.render(self.handle, self.cursor, self.window,
                                                  self.encoding)
        except ProcessError as exc:
            self.failure = exc
            raise
        self.cursor = rendered.next_cursor
        return Read(manifest, rendered)

    def retained(self) -> Iterator[Read]:
        """Every window up to what was retained at the first read — bounded, however
        much a live writer adds meanwhile. Stops early at a sequence the writer has
        not finished (a read that moves no cursor)."""
        end: int | None = None
        while True:
            read = self.read()
            yield read
            rendered = read.rendered
            end = rendered.total_bytes if end is None else end
            if rendered.next_cursor >= end or rendered.next_cursor == rendered.start_cursor:
                return

    def follow(self, *, poll: float = FOLLOW_POLL_SECONDS,
               timeout: float | None = None) -> Iterator[Read]:
        """The windows that carry output (or report a gap) until the process is
        terminal and every byte is read.

        ``owner_gone`` when the process is not terminal and no live supervisor will
        ever make it so; ``wait_timeout`` when ``timeout`` seconds pass first.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            read = self.read()
            manifest, rendered = read.manifest, read.rendered
            if rendered.output or rendered.gap:
                yield read
            if manifest.terminal and self.cursor >= rendered.total_bytes:
                return
            if rendered.next_cursor != rendered.start_cursor:
                continue
            if not manifest.terminal and not self.view.owner_alive():
                if not self.view.manifest(self.handle).terminal:
                    raise ProcessError(
                        "owner_gone", "no running loop owns it; the next loop run reconciles it"
                    )
            if deadline is not None and time.monotonic() >= deadline:
                raise ProcessError("wait_timeout", f"{self.handle} is still {manifest.state}",
                                   handle=self.handle)
            time.sleep(poll)


class OutputSource(Protocol):
    """Where a line follower reads: the supervisor that runs the process."""

    def output_bytes(self, handle: str) -> int: ...
    def read(self, handle: str, cursor: int, max_bytes: int) -> Chunk: ...


class LineFollower:
    """Whole lines of a live process's output, in order, for a person watching it.

    A person's terminal may be slower than the process: a follower more than
    ``BEHIND_BYTES`` behind skips to near the end and resumes at a line boundary.
    What it did not show is said in the stream where it was left out — how many
    lines, and ``where`` to read them (``git forge proc output 001``) — and so is
    a line cut at ``LINE_BYTES`` or bytes the spool no longer keeps. Nothing is
    dropped silently; memory stays bounded whatever the process prints.
    """

    def __init__(self, source: OutputSource, handle: str, where: str) -> None:
        self.source = source
        self.handle = handle
        self.where = where
        self.cursor = 0
        #: The bytes of the line being printed, not yet ended.
        self._line = b""
        #: Reading on to the end of a line not shown: ``"skip"`` (counted as
        #: skipped when it ends) or ``"cut"`` (its start was shown), else None.
        self._discard: str | None = None
        #: What was left out since the last line shown (said before the next one).
        self._skipped_lines = 0
        self._lost_bytes = 0

    def take(self, *, final: bool = False) -> list[str]:
        """The lines printed since the last call, and a note for each stretch left
        out. ``final``: the process has ended; everything up to its end is taken
        (still skipping what is too far behind) and an unended last line with it."""
        out: list[str] = []
        total = self.source.output_bytes(self.handle)
        if total - self.cursor > BEHIND_BYTES:
            self._skip_to(total - LOOK_BYTES)
        budget = LOOK_BYTES
        while self.cursor < total and (final or budget > 0):
            chunk = self.source.read(self.handle, self.cursor,
                                     min(LOOK_BYTES, total - self.cursor))
            if chunk.gap:  # the spool let bytes go: what was begun is not whole
                self._lost(chunk.start_cursor - self.cursor)
            if not chunk.data:
                self.cursor = max(self.cursor, chunk.next_cursor)
                break
            self.cursor = chunk.next_cursor
            budget -= len(chunk.data)
            self._lines(chunk.data, out)
        if final:
            if self._line:
                self._show(out, self._line)
                self._line = b""
            if self._discard == "skip":
                self._skipped_lines += 1
            self._discard = None
            self._say_skipped(out)
        return out

    def _skip_to(self, target: int) -> None:
        """Leave out everything before ``target`` (counting its lines) and the rest
        of the line ``target`` falls in."""
        while self.cursor < target:
            chunk = self.source.read(self.handle, self.cursor,
                                     min(BEHIND_BYTES, target - self.cursor))
            if chunk.gap:
                self._lost(chunk.start_cursor - self.cursor)
            if not chunk.data:
                break
            ended = chunk.data.count(b"\n")
            if ended:
                # the first ends the line being read: a cut one's start was shown
                self._skipped_lines += ended - (self._discard == "cut")
                self._discard = None
            self.cursor = chunk.next_cursor
        if self._discard is None:  # the line ``target`` falls in is not whole either
            self._discard = "skip"
        self._line = b""

    def _lost(self, count: int) -> None:
        self._lost_bytes += count
        if self._discard is None:
            self._discard = "skip"
        self._line = b""

    def _lines(self, data: bytes, out: list[str]) -> None:
        *ended, rest = data.split(b"\n")
        for piece in ended:
            if self._discard is not None:
                if self._discard == "skip":
                    self._skipped_lines += 1
                self._discard = None
                continue
            self._show(out, self._line + piece)
            self._line = b""
        if self._discard is not None:
            return
        self._line += rest
        if len(self._line) > LINE_BYTES:  # a progress bar redrawn: what it shows now
            self._line = _redrawn(self._line)
        if len(self._line) > LINE_BYTES:  # shown now, its rest left out
            self._show(out, self._line)
            self._line = b""
            self._discard = "cut"

    def _show(self, out: list[str], line: bytes) -> None:
        self._say_skipped(out)
        out.append(shown_line(line, self.where))

    def _say_skipped(self, out: list[str]) -> None:
        if self._skipped_lines or self._lost_bytes:
            out.append(skipped_note(self._skipped_lines, self.where, self._lost_bytes))
            self._skipped_lines = self._lost_bytes = 0


def _redrawn(line: bytes) -> bytes:
    """A line redrawn with carriage returns, from its last redraw that holds anything:
    what a terminal shows of it (``last_segment`` of its text), kept short before any
    cut at ``LINE_BYTES``."""
    start = line.rstrip(b"\r").rfind(b"\r")
    return line[start + 1:] if start >= 0 else line


def shown_line(line: bytes, where: str) -> str:
    """One line of output as a follower shows it: safe text, what its redraws left
    (``last_segment``), cut at ``LINE_BYTES`` with a note saying so (``where``: the
    command that shows all of it)."""
    if len(line) > LINE_BYTES:
        line = _redrawn(line)
    if len(line) <= LINE_BYTES:
        return last_segment(safe_text(line, final=True).text)
    return last_segment(safe_text(line[:LINE_BYTES], final=True).text) + cut_note(where)


def last_segment(line: str) -> str:
    """What a line of progress (``10%`` CR ``55%`` CR ``100%``) says last, as a terminal
    shows it: the text after its last carriage return that holds anything. Shown behind
    a gutter as it is, a carriage return would take the cursor back over the gutter."""
    return next((segment for segment in reversed(line.split("\r")) if segment), "")


def cut_note(where: str) -> str:
    """What ends a line shown cut at ``LINE_BYTES``."""
    return f" … (line cut at {size(LINE_BYTES)} — {where})"


def skipped_note(lines: int, where: str, lost_bytes: int = 0) -> str:
    """The line a follower shows where it left lines out: how many, and where they are."""
    said = f"{lines:,} line{'' if lines == 1 else 's'} skipped"
    if lost_bytes:  # their lines cannot be counted
        said += f", and {size(lost_bytes)} no longer kept"
    return f"… {said} — {where}"
