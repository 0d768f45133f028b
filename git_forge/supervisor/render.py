"""Rendering raw output bytes for people and for machines.

**Safe text** can be printed on any terminal: invalid UTF-8 becomes U+FFFD,
control characters other than tab, LF and CR are removed, and terminal escape
sequences (CSI, OSC ending at BEL or ESC ``\\``, DCS and the other string
sequences, two-byte and nF ESC sequences) are removed as whole units. It is the
normalization of exactly the bytes read — never cut afterwards — except that an
incomplete UTF-8 character or escape sequence at the end of the window is left
unconsumed, so ``next_cursor`` stops before it and a reader that follows
``next_cursor`` never loses or garbles text.

**base64** is the same raw bytes, unnormalized.

Neither result holds a path, a directory or a PID: only the handle, cursors and
the rendered bytes.
"""

from __future__ import annotations

import base64
import codecs
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from git_forge.supervisor.buffer import Chunk

ESC = 0x1B
BEL = 0x07
_CSI_BODY = re.compile(rb"[\x30-\x3f]*[\x20-\x2f]*")
_STRING_BODY = re.compile(rb"[^\x07\x1b]*")
_INTERMEDIATES = re.compile(rb"[\x20-\x2f]*")
#: ESC ] (OSC), ESC P (DCS), ESC X (SOS), ESC ^ (PM), ESC _ (APC): strings ended by ST or BEL.
_STRING_INTRODUCERS = frozenset(b"]PX^_")
_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
BINARY_NUL_RATIO = 0.01
BINARY_ENTROPY_BITS = 7.5
BINARY_ENTROPY_MIN_BYTES = 256


@dataclass(frozen=True)
class RenderedOutput:
    """A rendered window of one process's output."""

    handle: str
    encoding: str  # "text" or "base64"
    output: str
    start_cursor: int
    next_cursor: int
    total_bytes: int
    gap: bool
    normalized: bool
    binary: bool

    @property
    def artifact(self) -> dict[str, Any]:
        """Where the raw bytes of this window can be fetched from (as base64)."""
        return {
            "id": self.handle,
            "start_cursor": self.start_cursor,
            "end_cursor": self.next_cursor,
            "encoding": "base64",
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "handle": self.handle,
            "encoding": self.encoding,
            "output": self.output,
            "start_cursor": self.start_cursor,
            "next_cursor": self.next_cursor,
            "total_bytes": self.total_bytes,
            "gap": self.gap,
            "normalized": self.normalized,
            "binary": self.binary,
            "artifact": self.artifact,
        }


@dataclass(frozen=True)
class SafeText:
    text: str
    consumed: int  # raw bytes the text stands for; the rest waits for more bytes
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
    text = _CONTROLS.sub("", "".join(pieces))
    raw = data[:consumed]
    return SafeText(text, consumed, text.encode("utf-8") != raw)


def looks_binary(data: bytes) -> bool:
    """More than 1% NUL bytes, or (for 256+ bytes) at least 7.5 bits of entropy per byte."""
    if not data:
        return False
    if data.count(0) > BINARY_NUL_RATIO * len(data):
        return True
    if len(data) < BINARY_ENTROPY_MIN_BYTES:
        return False
    size = len(data)
    entropy = -sum(
        (count / size) * math.log2(count / size) for count in Counter(data).values()
    )
    return entropy >= BINARY_ENTROPY_BITS


def render_text(
    handle: str, chunk: Chunk, *, total_bytes: int, end_of_stream: bool, window_full: bool
) -> RenderedOutput:
    """Safe text of ``chunk``. ``end_of_stream``: no byte will ever follow this
    window, so nothing is held back. ``window_full``: the read was cut by its
    limit; if nothing at all could be consumed the window is consumed anyway, so
    a reader always makes progress."""
    data = chunk.data
    final = end_of_stream and chunk.next_cursor == total_bytes
    rendered = safe_text(data, final=final)
    if rendered.consumed == 0 and data and window_full:
        rendered = safe_text(data, final=True)
    start = chunk.start_cursor
    return RenderedOutput(
        handle=handle, encoding="text", output=rendered.text, start_cursor=start,
        next_cursor=start + rendered.consumed, total_bytes=total_bytes, gap=chunk.gap,
        normalized=rendered.normalized, binary=looks_binary(data[: rendered.consumed]),
    )


def render_base64(handle: str, chunk: Chunk, *, total_bytes: int) -> RenderedOutput:
    """The raw bytes of ``chunk``, base64-encoded, nothing held back or changed."""
    return RenderedOutput(
        handle=handle, encoding="base64",
        output=base64.b64encode(chunk.data).decode("ascii"),
        start_cursor=chunk.start_cursor, next_cursor=chunk.next_cursor,
        total_bytes=total_bytes, gap=chunk.gap, normalized=False,
        binary=looks_binary(chunk.data),
    )
