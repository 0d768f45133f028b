"""Rendering raw output bytes for people and for machines.

**Safe text** (``git_forge.safetext``, the one renderer every piece of foreign
text goes through) can be printed on any terminal. A window is the normalization
of exactly the bytes read — never cut afterwards — except that an incomplete
UTF-8 character or escape sequence at the end of the window is left unconsumed,
so ``next_cursor`` stops before it and a reader that follows ``next_cursor``
never loses or garbles text.

**base64** is the same raw bytes, unnormalized.

Neither result holds a path, a directory or a PID: only the handle, cursors and
the rendered bytes.
"""

import base64
import math
from collections import Counter
from typing import NamedTuple, TypedDict

from git_forge.safetext import safe_text
from git_forge.supervisor.buffer import Chunk

BINARY_NUL_RATIO = 0.01
BINARY_ENTROPY_BITS = 7.5
BINARY_ENTROPY_MIN_BYTES = 256


class ArtifactJSON(TypedDict):
    """Where a window's raw bytes can be fetched from (as base64)."""

    id: str
    start_cursor: int
    end_cursor: int
    encoding: str


class OutputJSON(TypedDict):
    """A rendered window of one process's output (``proc output --json``)."""

    handle: str
    encoding: str
    output: str
    start_cursor: int
    next_cursor: int
    total_bytes: int
    gap: bool
    normalized: bool
    binary: bool
    artifact: ArtifactJSON


class RenderedOutput(NamedTuple):
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
    def artifact(self) -> ArtifactJSON:
        """Where the raw bytes of this window can be fetched from (as base64)."""
        return {
            "id": self.handle,
            "start_cursor": self.start_cursor,
            "end_cursor": self.next_cursor,
            "encoding": "base64",
        }

    def to_dict(self) -> OutputJSON:
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
