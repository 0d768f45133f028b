"""Rendering shared by every command: the terminal boundary, JSON, colour, the one-line error.

**The terminal boundary.** ``main`` wraps stdout and stderr in ``SafeStream``,
so every byte git-forge prints is safe text (``git_forge.safetext``, the one
renderer agent output goes through too): whatever an item title, a blocked
reason, an answer, a stash message, a commit subject or an error quoting them
holds, no escape sequence, BEL, C1 control or DEL from it reaches the terminal —
on a TTY or not, whichever command printed it. git-forge's own control
sequences (its SGR colours, the live progress line's erase) are the only ones
that pass: ``own`` marks them with a token drawn fresh by each process, which
text read from a file, an agent or a user cannot contain, and the boundary turns
exactly those marks back into the sequences.

**JSON.** One helper (``emit_json``) so every ``--json`` output has the same
shape: 2-space indent, UTF-8 not ASCII-escaped — the format feature-forge's
verbs use — except that C1 controls, DEL and lone surrogates are written as
``\\u`` escapes, so ``cat``-ing the JSON to a terminal is harmless (the files
on disk keep their bytes as they are).

**Colour** is decided by git, once per process and only when something is
painted: never with ``--no-color`` or a non-empty ``NO_COLOR``
(https://no-color.org), which win over everything; otherwise what ``git config
--get-colorbool color.forge`` answers for a terminal or a pipe — ``color.forge``,
else ``color.ui``, from every config source git reads (``git -c`` included):
``never``/``false`` off, ``always`` on even when piped, ``auto``/``true``
(the default) on a terminal that is not ``TERM=dumb``.
"""

from __future__ import annotations

import json
import os
import re
import sys

from git_forge.jsonenc import dumps_indented
from git_forge.safetext import bidi_controls, clean

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

_STYLES = {"bold": "1", "red": "31", "green": "32", "yellow": "33", "cyan": "36", "dim": "2"}
_SGR = "\x1b[{}m"
_RESET = _SGR.format(0)

# --- the terminal boundary -------------------------------------------------------------------

#: A process-fresh token: a noncharacter, then 12 random hex digits.
_MARK = "\ufdd0" + os.urandom(6).hex()
_MARK_END = "\ufdd1"
_MARKED = re.compile(re.escape(_MARK) + "([0-9]+)" + _MARK_END)
_OWN: list[str] = []


def own(sequence: str) -> str:
    """A control sequence of git-forge's own, marked so the boundary lets it through."""
    try:
        index = _OWN.index(sequence)
    except ValueError:
        index = len(_OWN)
        _OWN.append(sequence)
    return f"{_MARK}{index}{_MARK_END}"


def terminal_text(text: str) -> str:
    """``text`` as it may reach a terminal: safe text, with git-forge's own marked
    sequences (and only those) turned into the real ones."""
    if _MARK not in text:
        return clean(text)
    pieces = _MARKED.split(text)
    return "".join(clean(piece) if index % 2 == 0 else _OWN[int(piece)]
                   for index, piece in enumerate(pieces))


class SafeStream:
    """A text stream whose every write goes through ``terminal_text``; everything
    else (``fileno``, ``isatty``, ``flush``, ``encoding``, ``buffer``) is the
    wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(terminal_text(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def guarded(stream: TextIO | None) -> TextIO | None:
    """``stream`` behind the boundary (one already behind it, or none at all — a
    closed standard stream — is returned as is)."""
    if stream is None or isinstance(stream, SafeStream):
        return stream
    return SafeStream(stream)  # type: ignore[return-value]  # a TextIO by delegation


# --- JSON ------------------------------------------------------------------------------------

#: Characters json.dumps(ensure_ascii=False) leaves raw that a terminal acts on (C1,
#: DEL, the bidirectional overrides safe text removes) or no encoder can write (lone
#: surrogates). JSON's syntax outside strings is ASCII, so every match is inside a
#: string, where a ``\\u`` escape means the same.
_JSON_C1 = re.compile("[\x7f-\x9f]")  # the overrides: ``safetext.bidi_controls``
_SURROGATE = "[\ud800-\udfff]"


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def json_text(document: Any, *, indent: int | None = 2) -> str:
    """A JSON document as every output prints it (``indent=None``: one line, for NDJSON)."""
    if indent is None:
        text = json.dumps(document, ensure_ascii=False, allow_nan=False)
    else:
        text = dumps_indented(document, indent)
    if text.isascii():  # DEL is the one such character in ASCII: no scan of the rest
        if "\x7f" in text:
            text = text.replace("\x7f", "\\u007f")
    else:
        text = _JSON_C1.sub(_escape, text)
        text = bidi_controls().sub(_escape, text)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = re.sub(_SURROGATE, _escape, text)
    return text


def emit_json(document: Any, stream: TextIO | None = None) -> None:
    """Print a JSON document the way every ``--json`` output is printed."""
    print_json_text(json_text(document), stream)


def print_json_text(text: str, stream: TextIO | None = None) -> None:
    """Print ``text``, which ``json_text`` returned. It is safe text by construction
    — JSON escapes every C0 control but the newlines between its lines, and
    ``json_text`` escapes DEL, C1, the bidirectional overrides and lone surrogates —
    so the terminal boundary would leave it as it is: it is written past the
    boundary's scan, which costs more than the rest of a large listing's output."""
    target = stream or sys.stdout
    if isinstance(target, SafeStream):
        target = target.stream
    target.write(text + "\n")


# --- colour ----------------------------------------------------------------------------------

_no_color_flag = False
#: git's answer, for a terminal (``True``) and for anything else.
_git_colour: dict[bool, bool] = {}


def configure_color(*, no_color: bool) -> None:
    """Start a command: ``no_color`` is its ``--no-color``; git's setting is asked
    again the first time something is painted."""
    global _no_color_flag
    _no_color_flag = no_color
    _git_colour.clear()


def _git_wants_colour(terminal: bool) -> bool:
    """git's colour decision for ``color.forge`` on a terminal or not; where git
    cannot be asked, its default (``auto``: a terminal only)."""
    # common-case boundary: git is asked only when something is painted on a terminal
    from git_forge.tree.errors import GitError
    from git_forge.tree.gitconfig import wants_color

    try:
        return wants_color("color.forge", terminal)
    except GitError:
        return terminal


def is_terminal(stream: TextIO | None = None) -> bool:
    """A terminal that can show more than plain lines (not ``TERM=dumb``)."""
    stream = stream or sys.stdout
    if os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def color_enabled(stream: TextIO | None = None) -> bool:
    """Whether to colour ``stream`` (see the module docstring for the rules)."""
    if _no_color_flag or os.environ.get("NO_COLOR"):
        return False
    terminal = is_terminal(stream)
    if terminal not in _git_colour:
        _git_colour[terminal] = _git_wants_colour(terminal)
    return _git_colour[terminal]


def paint(text: str, style: str, stream: TextIO | None = None) -> str:
    """``text`` in ``style`` when colour is enabled for ``stream``, else unchanged."""
    if not color_enabled(stream):
        return text
    return own(_SGR.format(_STYLES[style])) + text + own(_RESET)


# --- messages --------------------------------------------------------------------------------


def error(message: str) -> None:
    """The one-line error every refusal prints on stderr. One line whatever it
    quotes: a line break in an id, a path or a parser's message is shown as ``\\n``
    (or ``\\r``), so no text can end the error early or forge a second one."""
    print(f"Error: {one_line(message)}", file=sys.stderr)


def one_line(text: str) -> str:
    """``text`` with each line break (CR, LF) written as its escape, ``\\r``/``\\n``."""
    if "\n" not in text and "\r" not in text:
        return text
    return text.replace("\r", "\\r").replace("\n", "\\n")


def note(message: str) -> None:
    """A remark beside a command's output, on stderr so that stdout stays its data."""
    print(f"note: {message}", file=sys.stderr)


def warn(message: str) -> None:
    print(f"{paint('warning', 'yellow', sys.stderr)}: {message}", file=sys.stderr)
