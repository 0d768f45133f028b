"""Indented JSON as ``json.dumps(indent=N, ensure_ascii=False)`` writes it, and a
large list's rewrite that re-encodes only the elements that changed.

Every git-forge file is written indented (feature-forge's format). The loop
rewrites backlog.json several times per iteration, so the held backlog
(``backlog.held``) keeps each item's encoded text and re-encodes only the item
that changed (``encode_nested``), joining the texts into the document's bytes
(``join_list_in``): what that saves at 10,000 items is in ARCHITECTURE.md ("What
is measured, and where"). The result is byte for byte what ``dumps_indented`` gives.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from json.encoder import encode_basestring
from typing import Any


def dumps_indented(document: Any, indent: int = 2) -> str:
    """``json.dumps(document, indent=indent, ensure_ascii=False)``; NaN and the
    infinities are refused (``ValueError``): they are not JSON."""
    return json.dumps(document, indent=indent, ensure_ascii=False, allow_nan=False)


def encode_nested(value: Any, depth: int, indent: int = 2) -> str:
    """The text ``value`` has when it sits ``depth`` containers deep in a document
    ``dumps_indented`` encodes (its first line unindented): its own text with every
    line after the first indented ``depth`` steps — JSON escapes every newline
    inside a string, so each one in the text starts a line."""
    return dumps_indented(value, indent).replace("\n", "\n" + " " * (indent * depth))


def join_list_in(document: Mapping[str, object], key: str, elements: list[bytes],
                 indent: int = 2, end: bytes = b"") -> bytes:
    """``dumps_indented(document)`` as UTF-8 followed by ``end``, with
    ``document[key]`` a list whose elements' texts are ``elements`` (each
    ``encode_nested(element, 2, indent)`` as UTF-8). Bytes, joined once: for a
    large backlog that join is the only large buffer made. Text that is not valid
    Unicode raises ``UnicodeEncodeError``, as encoding it would."""
    step = " " * indent
    inner = ("\n" + step).encode()
    deeper = inner + step.encode()
    parts: list[bytes] = [b"{"]
    for name, value in document.items():
        parts += (inner if len(parts) == 1 else b"," + inner,
                  encode_basestring(name).encode("utf-8"), b": ")
        if name != key:
            parts.append(encode_nested(value, 1, indent).encode("utf-8"))
        elif not elements:
            parts.append(b"[]")
        else:
            listed = [b"," + deeper] * (2 * len(elements) - 1)
            listed[0::2] = elements  # element, separator, element, …: one flat list
            parts += (b"[", deeper)
            parts += listed
            parts += (inner, b"]")
    if len(parts) == 1:
        return b"{}" + end
    parts += (b"\n}", end)
    return b"".join(parts)
