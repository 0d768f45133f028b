"""Asking the operator on a terminal: one question at a time, safe defaults.

Used by ``reconcile`` and ``recover`` when stdin and stdout are a TTY. An empty
reply takes the default. Ctrl-C is left to the caller, which treats it as
cancel-early and still records what it must — and end of input (Ctrl-D) is the
same: ``InputClosed`` is a ``KeyboardInterrupt``. An operator who closed the
input can answer nothing more, so taking each prompt's default instead
(recover's is to commit its backlog change) would act for them.

A reply is a *block*, never a line: what the operator pasted is one reply, so a
pasted paragraph never spills into the prompts after it (each line answering
another question). While a prompt waits, the terminal's bracketed paste is on
(``ESC[?2004h``): the terminal wraps a paste in ``ESC[200~`` … ``ESC[201~``, and
everything between is the reply, with what is typed after it up to Enter. A
terminal without it sends a paste as lines in one burst: lines that reach us
within ``TOGETHER`` seconds of each other are one reply (nobody types a line and
Enter that fast). A burst's last line may come without its newline: the terminal
holds it back until Enter, so the line that Enter ends belongs to the burst, not
to the next prompt — when a burst goes quiet, what the terminal holds unfinished
is taken (read once in non-canonical mode, ``_unfinished``) and the reply goes on
to Enter, as after a bracketed paste. A line the terminal cut (it holds at most
``LINE_MAX`` characters a line; the rest, a paste's end marker included, is
dropped) is never taken as it was cut: the whole reply is refused with a word,
read to its end, and the prompt asked again. The mode is switched on for each
read and off again as the read ends — by a reply, Ctrl-C, end of input or an
error — so the shell never inherits it. A prompt that takes one word (a choice,
yes or no, ids) refuses a block of several lines and asks again.

While a prompt reads, Ctrl-C is a key rather than a signal (the terminal's
interrupt character is switched off and made an end of line instead), read as
``KeyboardInterrupt``: a signal would reach git too when run as ``git forge``,
and git dies of it once its child has exited, so the shell would see 130
whatever the command answered to the cancel. SIGHUP (the terminal closed) and
SIGTERM at a prompt end the input as Ctrl-D does, so what was confirmed is
recorded rather than lost with the process.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import sys
import termios
import threading
from collections.abc import Iterator, Sequence

from git_forge.cli.output import paint

PASTE_ON, PASTE_OFF = b"\x1b[?2004h", b"\x1b[?2004l"
PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"
#: Lines that arrive within this many seconds of each other are one paste.
TOGETHER = 0.05
#: The characters of one line a terminal keeps (Linux: its 4096-byte buffer less the
#: newline); a line read this long may have lost its end.
LINE_MAX = 4095
#: What a cursor or function key sends (CSI ``ESC [ … final``, SS3 ``ESC O x``): no
#: part of an answer, whose letters would otherwise stay in it once the escape is
#: made safe (the Up arrow left an ``A``).
_KEYS = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1bO.")
#: A control character's slot switched off (``_POSIX_VDISABLE`` on Linux).
_DISABLED = b"\x00"


def interactive() -> bool:
    """Questions are asked only when both ends are a terminal."""
    return sys.stdin.isatty() and sys.stdout.isatty()


class InputClosed(KeyboardInterrupt):
    """End of input at a prompt: the dialogue is cancelled, as by Ctrl-C."""


@contextlib.contextmanager
def _hang_up_closes() -> Iterator[None]:
    """While a prompt waits, SIGHUP (the terminal closed) and SIGTERM end the input
    as Ctrl-D does (``InputClosed``), so the dialogue's cancel-early records what was
    confirmed instead of the process dying with it. After a hang-up nothing can
    be written to the terminal: standard output and error go to the null device.
    Only the main thread can set a handler; elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def closed(number: int, _frame: object) -> None:
        if number == signal.SIGHUP:
            null = os.open(os.devnull, os.O_WRONLY)
            for fd in (1, 2):
                os.dup2(null, fd)
            os.close(null)
        raise InputClosed

    previous = {number: signal.signal(number, closed)
                for number in (signal.SIGHUP, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


@contextlib.contextmanager
def _paste_mode(fd: int) -> Iterator[bytes | None]:
    """Bracketed paste on while the terminal at ``fd`` is read, off again however
    the read ends. The terminal's echo of control characters (``ECHOCTL``) is off
    meanwhile too, so the markers are not shown as ``^[[200~`` as a paste is echoed.
    Gives the interrupt key when the terminal now sends it as a byte (see below)."""
    out = sys.stdout.fileno()
    try:
        saved = termios.tcgetattr(fd) if os.isatty(out) else None
    except termios.error:
        saved = None
    if saved is None:  # not a terminal at both ends: nothing to switch
        yield None
        return
    quiet = list(saved)
    quiet[3] &= ~termios.ECHOCTL
    quiet[6] = list(saved[6])
    if quiet[3] & termios.ISIG and quiet[6][termios.VINTR] != _DISABLED:
        # Ctrl-C is a key here, not a signal: it ends the line (VEOL) and the read
        # raises KeyboardInterrupt. As a signal it would reach the whole process group,
        # git too when run as ``git forge``, and git, once its child exits, dies of it:
        # the shell would see 130 where recover's cancel-early exits with its outcome.
        quiet[6][termios.VEOL] = quiet[6][termios.VINTR]
        quiet[6][termios.VINTR] = _DISABLED
    try:
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
        os.write(out, PASTE_ON)
        yield quiet[6][termios.VEOL] if quiet[6][termios.VINTR] == _DISABLED else None
    finally:
        with contextlib.suppress(OSError, termios.error):  # a terminal hung up
            os.write(out, PASTE_OFF)
            termios.tcsetattr(fd, termios.TCSANOW, saved)


def _arrives(fd: int, seconds: float) -> bool:
    return bool(select.select([fd], [], [], seconds)[0])


def _unfinished(fd: int) -> bytes:
    """What the terminal at ``fd`` holds of a line not yet ended (canonical mode
    shows a reader only whole lines): switched to non-canonical mode for one read
    that does not wait, then back. Nothing when ``fd`` is not a terminal."""
    try:
        saved = termios.tcgetattr(fd)
    except termios.error:
        return b""
    raw = list(saved)
    raw[3] &= ~termios.ICANON
    raw[6] = list(saved[6])
    raw[6][termios.VMIN], raw[6][termios.VTIME] = 0, 0
    termios.tcsetattr(fd, termios.TCSANOW, raw)
    try:
        return os.read(fd, 65536)
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)


class _LineCut(Exception):
    """A reply with a line the terminal cut at ``LINE_MAX`` characters."""


def _read_block(fd: int, interrupt: bytes | None = None) -> bytes:
    """One reply from the terminal at ``fd`` (canonical mode: a read returns at most
    one line): a line, a bracketed paste and the rest of its line, or lines that
    arrived together with the rest of their last line. End of input with nothing
    read (or inside a paste) is ``InputClosed``; the ``interrupt`` key read as a
    byte is ``KeyboardInterrupt``; a line the terminal cut is ``_LineCut``, once
    the whole reply is read."""
    block = b""
    cut = False
    while True:
        chunk = os.read(fd, 65536)
        if interrupt is not None and interrupt in chunk:
            raise KeyboardInterrupt
        if not chunk:
            if not block or block.count(PASTE_START) > block.count(PASTE_END):
                raise InputClosed
            return block
        block += chunk
        # A cut line's paste end may be lost with its tail: the reply then ends at a
        # quiet Enter, as a reply without a paste does.
        cut = cut or (chunk.endswith(b"\n") and len(chunk) > LINE_MAX)
        inside = block.count(PASTE_START) > block.count(PASTE_END) and not cut
        if inside or not block.endswith(b"\n"):
            continue  # inside a paste, or a line not ended yet (Ctrl-D mid-line)
        if _arrives(fd, TOGETHER):
            continue
        rest = _unfinished(fd)  # the burst's last line, held until Enter
        if interrupt is not None and interrupt in rest:
            raise KeyboardInterrupt
        if rest:
            block += rest
            cut = cut or len(rest) >= LINE_MAX
            continue
        if cut:
            raise _LineCut
        return block


def _read(prompt: str) -> str:
    """The reply to ``prompt``: its lines joined by newlines, without the markers
    and the final line break. A reply with a line the terminal cut is refused and
    ``prompt`` asked again."""
    fd = sys.stdin.fileno()
    while True:
        sys.stdout.write(prompt)  # through the terminal boundary (``output.SafeStream``)
        sys.stdout.flush()
        try:
            with _hang_up_closes(), _paste_mode(fd) as interrupt:
                block = _read_block(fd, interrupt)
            break
        except _LineCut:
            print(paint(f"That answer has a line longer than the terminal keeps ({LINE_MAX} "
                        "characters): it was cut, so it is not taken. Give it in shorter "
                        "lines, or in a file with --answers.", "yellow"))
    text = block.replace(PASTE_START, b"").replace(PASTE_END, b"").decode("utf-8", "replace")
    text = _KEYS.sub("", text)  # an arrow or function key the line reader took in
    return text.replace("\r\n", "\n").replace("\r", "\n").removesuffix("\n")


def _one_line(reply: str, what: str) -> bool:
    """Whether ``reply`` is one line; if not, says so (a pasted block answers no
    prompt that takes ``what``)."""
    lines = [line for line in reply.split("\n") if line.strip()]
    if len(lines) <= 1:
        return True
    print(paint(f"That was {len(lines)} lines at once (a paste?): type {what} on one line.",
                "yellow"))
    return False


def choose(prompt: str, options: Sequence[tuple[str, str]], default: str) -> str:
    """Pick one of ``options`` ((key, label) pairs) by its key or label."""
    labels = " / ".join(
        f"[{key}]{label[len(key):]}" if label.startswith(key) else f"[{key}] {label}"
        for key, label in options
    )
    while True:
        answer = _read(f"{prompt} {labels} (default: {default}) ").strip().lower()
        if not _one_line(answer, "one of the choices"):
            continue
        if not answer:
            return default
        for key, label in options:
            if answer in (key, label):
                return label
        print(paint(f"Please answer one of: {labels}", "yellow"))


def confirm(prompt: str, explained: str = "y: yes; n or Enter: no") -> bool:
    """A yes/no question whose default is no. ``?`` or ``help`` shows ``explained``
    and any other word is refused, each asked again: only y says yes, and a reply
    meant for another prompt (a question's answer, a paste) is never read as no
    without a word."""
    while True:
        answer = _read(f"{prompt} [y/N] ").strip().lower()
        if not _one_line(answer, "y or n"):
            continue
        if answer in ("y", "yes"):
            return True
        if answer in ("", "n", "no"):
            return False
        print(paint(explained if answer in ("?", "help") else
                    "Please answer y or n (?: what each does).", "yellow"))


def text(prompt: str) -> str:
    """Free text, stripped: one line, or a pasted block of several."""
    return _read(prompt).strip()


def line(prompt: str, what: str) -> str:
    """One line of text, stripped (``what`` it takes, for a refused block)."""
    while True:
        reply = text(prompt)
        if _one_line(reply, what):
            return reply.strip()
