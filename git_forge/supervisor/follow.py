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

from git_forge.supervisor.lifecycle import ProcessError
from git_forge.supervisor.manifest import Manifest
from git_forge.supervisor.render import RenderedOutput
from git_forge.supervisor.view import ProcView

#: How long a follower waits before it reads a live process's spool again.
FOLLOW_POLL_SECONDS = 0.2


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
