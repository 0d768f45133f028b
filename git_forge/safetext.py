"""Safe text: what any text git-forge did not write itself becomes before a terminal sees it.

Agent output, item titles, blocked reasons, answers, stash messages, commit
subjects, config values — anything that came from a file, an agent or a user —
may hold bytes a terminal acts on: an OSC 52 clipboard write, a title change, a
cursor move, a raw C1 CSI — or a bidirectional override that makes a line show
in an order other than its own ("Trojan Source"). **Safe text** can be printed on
any terminal: invalid UTF-8 becomes U+FFFD, control characters other than tab, LF
and CR are removed (C0, DEL and C1), so are the bidirectional embeddings,
overrides and isolates (U+202A–U+202E, U+2066–U+2069; the marks LRM, RLM and
ALM, which reorder nothing around them, stay), and terminal escape sequences
(CSI, OSC ending at BEL or ESC ``\\``, DCS and the other string sequences,
two-byte and nF ESC sequences) are removed as whole units.

``safe_text`` normalizes exactly the bytes read — never cut afterwards —
except that, unless ``final``, an incomplete UTF-8 character or escape sequence
at the end is left unconsumed, so a reader that follows a growing stream never
loses or garbles text. ``clean`` is the same rule for a ``str``.

Neutral on purpose: the supervisor renders agent output with it and the command
line renders everything else with it, and neither imports the other.
"""

# No ``from __future__ import annotations`` here: it would make SafeText's field types
# text that typing compiles as the class is made — on the path of every command that
# prints (through ``cli.output``) the process's first compile (ARCHITECTURE.md, "What
# is measured, and where").
import codecs
import re
from typing import NamedTuple

ESC = 0x1B
BEL = 0x07
_CSI_BODY = re.compile(rb"[\x30-\x3f]*[\x20-\x2f]*")
_STRING_BODY = re.compile(rb"[^\x07\x1b]*")
_INTERMEDIATES = re.compile(rb"[\x20-\x2f]*")
#: ESC ] (OSC), ESC P (DCS), ESC X (SOS), ESC ^ (PM), ESC _ (APC): strings ended by ST or BEL.
_STRING_INTRODUCERS = frozenset(b"]PX^_")
#: What safe text removes: C0 but tab, LF and CR; DEL; C1 ...
_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
#: ... and the bidirectional embeddings, overrides (U+202A–U+202E) and isolates
#: (U+2066–U+2069), matched by ``bidi_controls()``.
BIDI_CONTROLS = "\u202a-\u202e\u2066-\u2069"
_bidi: re.Pattern[str] | None = None


def bidi_controls() -> re.Pattern[str]:
    """The bidirectional controls as a pattern, compiled when first needed: only
    text that is not ASCII can hold them."""
    global _bidi
    if _bidi is None:
        _bidi = re.compile(f"[{BIDI_CONTROLS}]")
    return _bidi


def _without_controls(text: str) -> str:
    text = _CONTROLS.sub("", text)
    return text if text.isascii() else bidi_controls().sub("", text)


class SafeText(NamedTuple):
    """Safe text of a window of bytes."""

    text: str
    #: The raw bytes the text stands for; the rest waits for more.
    consumed: int
    normalized: bool


def _escape_end(data: bytes, start: int) -> tuple[int, bool]:
    """End of the escape sequence at ``data[start]`` (an ESC), and whether it is
    complete; an incomplete one reaches the end of ``data``."""
    size = len(data)
    if start + 1 >= size:
        return size, False
    kind = data[start + 1]
    if kind == 0x5B:  # ESC [ … final byte
        end = _CSI_BODY.match(data, start + 2).end()  # type: ignore[union-attr]
        if end >= size:
            return size, False
        return (end + 1, True) if 0x40 <= data[end] <= 0x7E else (end, True)
    if kind in _STRING_INTRODUCERS:  # ESC ] … BEL | ESC \
        end = _STRING_BODY.match(data, start + 2).end()  # type: ignore[union-attr]
        if end >= size:
            return size, False
        if data[end] == BEL:
            return end + 1, True
        if end + 1 >= size:
            return size, False
        # ESC \ ends the string; any other ESC aborts it and starts anew.
        return (end + 2, True) if data[end + 1] == 0x5C else (end, True)
    end = _INTERMEDIATES.match(data, start + 1).end()  # type: ignore[union-attr]
    if end >= size:
        return size, False
    # ESC [intermediates] final; a lone ESC before anything else is dropped alone.
    return (end + 1, True) if 0x30 <= data[end] <= 0x7E else (end, True)


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def safe_text(data: bytes, *, final: bool) -> SafeText:
    """Normalize ``data``. Unless ``final``, an incomplete trailing UTF-8 character
    or escape sequence is not consumed."""
    pieces: list[str] = []
    position = 0
    hold: int | None = None
    escape = data.find(b"\x1b")
    while escape != -1:
        end, complete = _escape_end(data, escape)
        if not complete and not final:
            hold = escape
            break
        # Text on either side of an escape is decoded separately: a character is
        # never glued together across a removed sequence.
        pieces.append(_decode(data[position:escape]))
        position = end
        escape = data.find(b"\x1b", position)
    limit = len(data) if hold is None else hold
    tail = data[position:limit]
    consumed = limit
    if final or hold is not None:
        pieces.append(_decode(tail))
    else:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        pieces.append(decoder.decode(tail, final=False))
        consumed -= len(decoder.getstate()[0])
    text = _without_controls("".join(pieces))
    raw = data[:consumed]
    return SafeText(text, consumed, text.encode("utf-8") != raw)


def clean(text: str) -> str:
    """``text`` as safe text. A character that stood for an undecodable byte (a
    surrogate escape, as in a command-line argument that is not UTF-8) or any other
    lone surrogate becomes U+FFFD, as invalid UTF-8 does in ``safe_text``."""
    if _CONTROLS.search(text) is None and (text.isascii() or (
            _encodable(text) and bidi_controls().search(text) is None)):
        return text  # the common case: nothing to do
    if not (text.isascii() or _encodable(text)):
        text = re.sub("[\ud800-\udfff]", "\ufffd", text)
    return safe_text(text.encode("utf-8"), final=True).text


def _encodable(text: str) -> bool:
    """No surrogate (which no terminal encoding can carry) in ``text``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
