"""An indented JSON encoder, byte-identical to ``json.dumps(indent=N, ensure_ascii=False)``.

Why it exists: with ``indent`` set, the standard library falls back from its C
encoder to a pure-Python one built from nested generators. Every git-forge file
is written indented (feature-forge's format), and the big ones are rewritten on
every change — the loop rewrites backlog.json several times per iteration,
``recover`` once per applied item — so that encoder was the largest single cost
of both. This one walks the document once, appending to one list, and lets the
C string escaper do the escaping: about twice as fast.

It handles exactly the types git-forge documents are made of — ``dict`` with
``str`` keys, ``list``, ``tuple``, ``str``, ``int``, finite ``float``, ``bool``
and ``None``, each by its exact type — and hands anything else (a subclass, a
non-string key, NaN or infinity, a cycle or a nesting too deep to recurse) to
``json.dumps`` for the whole document, so the output, or the error, is always
the standard library's own.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import Any

_int_repr = int.__repr__
_float_repr = float.__repr__
_INFINITY = float("inf")


class _Unsupported(Exception):
    """A value this encoder leaves to ``json.dumps``."""


def dumps_indented(document: Any, indent: int = 2) -> str:
    """``json.dumps(document, indent=indent, ensure_ascii=False)``, faster."""
    try:
        return _encode(document, " " * indent)
    except (_Unsupported, RecursionError):
        return json.dumps(document, indent=indent, ensure_ascii=False)


def encode_nested(value: Any, depth: int, indent: int = 2) -> str | None:
    """The text ``value`` has when it sits ``depth`` containers deep in a document
    ``dumps_indented`` encodes (its first line unindented), or ``None`` for a value
    only ``json.dumps`` can encode. A writer that rewrites one element of a large
    list keeps the other elements' texts and encodes only the changed one."""
    try:
        return _encode(value, " " * indent, "\n" + " " * (indent * depth))
    except (_Unsupported, RecursionError):
        return None


def join_list_in(document: dict[str, Any], key: str, elements: list[bytes],
                 indent: int = 2) -> bytes | None:
    """``dumps_indented(document)`` as UTF-8, with ``document[key]`` a list whose
    elements' texts are ``elements`` (each ``encode_nested(element, 2, indent)`` as
    UTF-8), or ``None`` when another value of ``document`` is one only
    ``json.dumps`` can encode. Bytes, because one join of a large list's bytes is a
    copy, where joining and encoding its text costs many times that. Text that is
    not valid Unicode raises ``UnicodeEncodeError``, as encoding it would."""
    step = " " * indent
    inner = "\n" + step
    parts: list[bytes] = []
    for name, value in document.items():
        if type(name) is not str:
            return None
        if name == key:
            if not elements:
                text = b"[]"
            else:
                deeper = (inner + step).encode()
                text = b"[" + deeper + (b"," + deeper).join(elements) + inner.encode() + b"]"
        else:
            encoded = encode_nested(value, 1, indent)
            if encoded is None:
                return None
            text = encoded.encode("utf-8")
        parts.append(encode_basestring(name).encode("utf-8") + b": " + text)
    if not parts:
        return b"{}"
    return b"{" + inner.encode() + ("," + inner).encode().join(parts) + b"\n}"


def _scalar(value: Any) -> str:
    """The JSON text of a value that is not a container, or ``_Unsupported``."""
    kind = type(value)
    if kind is str:
        return encode_basestring(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return _int_repr(value)
    if kind is float and value == value and value != _INFINITY and value != -_INFINITY:
        return _float_repr(value)
    raise _Unsupported


def _encode(document: Any, step: str, newline: str = "\n") -> str:
    chunks: list[str] = []
    append = chunks.append

    def walk(value: Any, newline: str) -> None:
        kind = type(value)
        if kind is dict:
            if not value:
                append("{}")
                return
            inner = newline + step
            separator = "," + inner
            append("{" + inner)
            first = True
            for key, item in value.items():
                if type(key) is not str:
                    raise _Unsupported
                if first:
                    first = False
                else:
                    append(separator)
                item_kind = type(item)
                if item_kind is str:  # the common case, inline
                    append(encode_basestring(key) + ": " + encode_basestring(item))
                elif item_kind is dict or item_kind is list or item_kind is tuple:
                    append(encode_basestring(key) + ": ")
                    walk(item, inner)
                else:
                    append(encode_basestring(key) + ": " + _scalar(item))
            append(newline + "}")
        elif kind is list or kind is tuple:
            if not value:
                append("[]")
                return
            inner = newline + step
            separator = "," + inner
            strings = [encode_basestring(item) for item in value if type(item) is str]
            if len(strings) == len(value):  # a list of strings: one join
                append("[" + inner + separator.join(strings) + newline + "]")
                return
            append("[" + inner)
            first = True
            for item in value:
                if first:
                    first = False
                else:
                    append(separator)
                walk(item, inner)
            append(newline + "]")
        else:
            append(_scalar(value))

    walk(document, newline)
    return "".join(chunks)
