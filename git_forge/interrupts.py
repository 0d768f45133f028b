"""Signals that stop a run, turned into a ``threading.Event`` without a lock in the handler.

A Python signal handler runs in the main thread between two bytecodes: also in
the middle of ``Event.set`` or ``Event.wait``, which hold the event's lock, and in
the middle of the previous handler. A handler that called ``set`` there would
wait for a lock its own thread holds, and so would every later signal (Ctrl-C
with git's forwarded copy of it hung the loop so). Here the handler only notes the
signal; the interpreter's own low-level handler writes the signal's number to a
wakeup pipe (``signal.set_wakeup_fd``), and a thread reading that pipe sets the event.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

#: How long the end of a block waits for the relay thread to see its pipe close.
RELAY_JOIN_SECONDS = 5.0


class Caught:
    """The last signal a block caught, ``None`` until one arrives."""

    def __init__(self) -> None:
        self.signum: int | None = None

    def note(self, signum: int, _frame: object) -> None:
        """The handler: a plain store, safe wherever the main thread was."""
        self.signum = signum


@contextlib.contextmanager
def stop_on_signals(event: threading.Event, *signums: int) -> Iterator[Caught]:
    """Set ``event`` when one of ``signums`` arrives during the block; the previous
    handlers and wakeup descriptor are back after it. Outside the main thread, where
    no handler can be installed, nothing is caught."""
    caught = Caught()
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)  # the interpreter's handler must never block
    relay = threading.Thread(target=_relay, args=(read_fd, frozenset(signums), event),
                             name="signal relay", daemon=True)
    relay.start()
    previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    previous: dict[int, Any] = {}  # a handler, SIG_DFL or SIG_IGN
    try:
        for signum in signums:
            previous[signum] = signal.signal(signum, caught.note)
        yield caught
    finally:
        signal.set_wakeup_fd(previous_fd)
        os.close(write_fd)  # the relay reads the end of its pipe and ends
        relay.join(RELAY_JOIN_SECONDS)
        # Last: a signal the previous handler raises on (Ctrl-C's KeyboardInterrupt)
        # cannot cut the clean-up short.
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _relay(read_fd: int, signums: frozenset[int], event: threading.Event) -> None:
    """Set ``event`` whenever the wakeup pipe brings one of ``signums`` (other
    handlers' signals pass through it too), until the pipe closes."""
    try:
        while chunk := os.read(read_fd, 512):
            if signums.intersection(chunk):
                event.set()
    finally:
        os.close(read_fd)
