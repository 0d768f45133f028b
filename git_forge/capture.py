"""Running a helper process and reading its output, with what becomes a message bounded.

git-forge runs helpers — git, the ``--notify`` command, an external runner, an
agent's ``--version`` — and reads what they print. What is data (git's stdout,
a runner's JSON) is kept whole. What only ever becomes a message (every stderr,
an output quoted in an error) keeps its last ``TAIL_BYTES``: the end is where a
failure says why, and a helper that prints 200 MiB to stderr then costs 64 KiB,
not the 200 MiB (and more, decoded) ``communicate`` would hold. Every pipe is
read to its end all the same, together, and the input written in between: a pipe
left unread stalls the helper once it holds 64 KiB.

``read_output`` works on raw pipe descriptors, so the pre-launch hot path, which
spawns git without importing ``subprocess``, reads through it as well.
"""

import math
import os
import select
import signal
import time
from collections.abc import Mapping, Sequence
from typing import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess

#: How much of an output used as a message is kept: its last 64 KiB.
TAIL_BYTES = 64 * 1024
#: The most one read takes from a pipe.
_CHUNK = 1 << 20


class HelperTimeout(Exception):
    """The helper outlived its deadline (``Helper.finish`` has killed it)."""


class Finished(NamedTuple):
    """A helper that ended: its exit status, its stdout (whole or its tail) and
    the tail of its stderr."""

    returncode: int
    stdout: bytes
    stderr: bytes


def read_output(stdout: int, stderr: int, *, keep_stdout: bool, stdin: int | None = None,
                input: bytes = b"", deadline: float | None = None) -> tuple[bytes, bytes]:
    """Read the pipes ``stdout`` and ``stderr`` to their end, together, writing
    ``input`` to ``stdin`` meanwhile (closed once written, or dropped when the
    helper stops reading); every descriptor given is closed here. ``stdout`` is
    kept whole when ``keep_stdout``, else its last ``TAIL_BYTES`` like
    ``stderr``'s. Past ``deadline`` (``time.monotonic()``) ``HelperTimeout``."""
    kept = {stdout: bytearray(), stderr: bytearray()}
    limits = {stdout: None if keep_stdout else TAIL_BYTES, stderr: TAIL_BYTES}
    cut: set[int] = set()
    poller = select.poll()
    for fd in kept:
        poller.register(fd, select.POLLIN)
    pending = memoryview(input)
    if stdin is not None:
        os.set_blocking(stdin, False)
        poller.register(stdin, select.POLLOUT)
    reading = set(kept)
    try:
        while reading:
            if stdin is not None and not pending:
                poller.unregister(stdin)
                os.close(stdin)
                stdin = None
            events = poller.poll(_milliseconds_left(deadline))
            if not events:
                raise HelperTimeout
            for fd, _event in events:
                if fd == stdin:
                    try:
                        pending = pending[os.write(fd, pending):]
                    except BlockingIOError:
                        pass
                    except BrokenPipeError:  # it stopped reading: the rest is not wanted
                        pending = pending[:0]
                    continue
                data = os.read(fd, _CHUNK)
                if not data:
                    poller.unregister(fd)
                    reading.discard(fd)
                    continue
                buffer, limit = kept[fd], limits[fd]
                buffer += data
                if limit is not None and len(buffer) > limit:
                    del buffer[:len(buffer) - limit]
                    cut.add(fd)
    finally:
        for open_fd in (stdout, stderr, stdin):
            if open_fd is not None:
                os.close(open_fd)
    return _from_line_start(kept[stdout], stdout in cut), _from_line_start(kept[stderr],
                                                                           stderr in cut)


def _milliseconds_left(deadline: float | None) -> int | None:
    """``poll``'s timeout for ``deadline``: ``None`` waits for ever."""
    if deadline is None:
        return None
    return max(0, math.ceil((deadline - time.monotonic()) * 1000))


def _from_line_start(kept: bytearray, cut: bool) -> bytes:
    """The bytes kept; a tail that was cut starts after its first newline when it
    holds another line (not halfway through a line, or a character)."""
    if cut:
        newline = kept.find(b"\n")
        if 0 <= newline < len(kept) - 1:
            del kept[:newline + 1]
    return bytes(kept)


class Helper:
    """A helper process started by ``start``; ``finish`` reads its output and
    waits for it."""

    def __init__(self, process: "subprocess.Popen[bytes]", stdout: int, stderr: int,
                 stdin: int | None, input: bytes, *, keep_stdout: bool,
                 new_session: bool) -> None:
        self.process = process
        self._pipes = (stdout, stderr, stdin)
        self._input = input
        self._keep_stdout = keep_stdout
        self._new_session = new_session

    def finish(self, timeout: float | None = None) -> Finished:
        """Read the output to its end and wait for the helper to exit. Past
        ``timeout`` seconds — or on any exception, an interrupt included — it is
        killed (with its process group when it has one of its own) and waited
        for; the deadline is ``HelperTimeout``."""
        import subprocess  # common-case boundary: the pre-launch check spawns git alone

        deadline = None if timeout is None else time.monotonic() + timeout
        stdout, stderr, stdin = self._pipes
        try:
            out, err = read_output(stdout, stderr, keep_stdout=self._keep_stdout, stdin=stdin,
                                   input=self._input, deadline=deadline)
            try:
                returncode = self.process.wait(
                    None if deadline is None else max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise HelperTimeout from None
        except BaseException:
            self._kill()
            raise
        return Finished(returncode, out, err)

    def _kill(self) -> None:
        try:
            if self._new_session:
                os.killpg(self.process.pid, signal.SIGKILL)
            else:
                self.process.kill()
        except OSError:
            pass
        self.process.wait()  # a direct child killed by SIGKILL ends at once


def start(argv: Sequence[str], *, cwd: str | os.PathLike[str] | None = None,
          env: Mapping[str, str] | None = None, input: bytes | None = None,
          keep_stdout: bool = False, new_session: bool = False) -> Helper:
    """Start ``argv`` (never a shell) with ``input`` on its stdin (``None``: an
    empty stdin, ``/dev/null``); ``new_session`` gives it a process group of its
    own, killed whole past a deadline. ``OSError`` when it cannot start."""
    import subprocess  # common-case boundary: the pre-launch check spawns git alone

    stdin_read, stdin_write = os.pipe() if input is not None else (subprocess.DEVNULL, None)
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    ours = [fd for fd in (out_read, err_read, stdin_write) if fd is not None]
    theirs = [out_write, err_write] + ([stdin_read] if stdin_write is not None else [])
    try:
        process = subprocess.Popen(list(argv), cwd=cwd, env=env, stdin=stdin_read,
                                   stdout=out_write, stderr=err_write,
                                   start_new_session=new_session)
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for fd in theirs:
            os.close(fd)
    return Helper(process, out_read, err_read, stdin_write, input or b"",
                  keep_stdout=keep_stdout, new_session=new_session)


def run(argv: Sequence[str], *, cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None, input: bytes | None = None,
        timeout: float | None = None, keep_stdout: bool = False,
        new_session: bool = False) -> Finished:
    """``start`` then ``finish``: the helper run to its end (or killed past
    ``timeout``, ``HelperTimeout``)."""
    return start(argv, cwd=cwd, env=env, input=input, keep_stdout=keep_stdout,
                 new_session=new_session).finish(timeout)
