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
the standard library's own. NaN and the infinities are that error
(``allow_nan=False``): ``NaN`` and ``Infinity`` are not JSON.
"""

from __future__ import annotations

import json
from itertools import chain
from json.encoder import encode_basestring

TYPE_CHECKING = False
if TYPE_CHECKING:
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
        return json.dumps(document, indent=indent, ensure_ascii=False, allow_nan=False)


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
                 indent: int = 2, end: bytes = b"") -> bytes | None:
    """``dumps_indented(document)`` as UTF-8 followed by ``end``, with
    ``document[key]`` a list whose elements' texts are ``elements`` (each
    ``encode_nested(element, 2, indent)`` as UTF-8), or ``None`` when another value
    of ``document`` is one only ``json.dumps`` can encode. Bytes, because one join of
    a large list's bytes is a copy, where joining and encoding its text costs many
    times that — and one join: the result is the only large buffer made (joining the
    list, then the document, then adding ``end`` made three, and for a 4 MiB backlog
    each fresh buffer's page faults cost more than its copy). Text that is not
    valid Unicode raises ``UnicodeEncodeError``, as encoding it would."""
    step = " " * indent
    inner = ("\n" + step).encode()
    deeper = inner + step.encode()
    parts: list[bytes] = [b"{"]
    for name, value in document.items():
        if type(name) is not str:
            return None
        parts += (inner if len(parts) == 1 else b"," + inner,
                  encode_basestring(name).encode("utf-8"), b": ")
        if name != key:
            encoded = encode_nested(value, 1, indent)
            if encoded is None:
                return None
            parts.append(encoded.encode("utf-8"))
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


#: The exact types of the values an object may hold for ``_flat_object`` to encode it.
_FLAT = frozenset((str, int, bool, type(None)))
_STR = frozenset((str,))
_DICT = frozenset((dict,))
#: One C encoder per line indentation (its item separator holds the indentation).
_FLAT_ENCODERS: dict[str, json.JSONEncoder] = {}


def _flat_encoder(indentation: str) -> json.JSONEncoder:
    """The standard library's encoder (its C one, where built) of flat objects whose
    members start lines indented as ``indentation`` (a newline and spaces): compact
    text whose item separator is ``,`` and that indentation. Flat objects hold no
    container, so no cycle to check for."""
    encoder = _FLAT_ENCODERS.get(indentation)
    if encoder is None:
        encoder = _FLAT_ENCODERS[indentation] = json.JSONEncoder(
            ensure_ascii=False, check_circular=False, allow_nan=False,
            separators=("," + indentation, ": "))
    return encoder


def _flat_object(value: dict[Any, Any], newline: str, inner: str) -> str | None:
    """An object of strings, integers, booleans and nulls under string keys — a
    decision entry, a summary — encoded by the standard library's C encoder: its
    compact output with the item separator set to ``,`` and the indentation is the
    indented text, once the braces get their own lines. ``None`` for any other
    object (a float, a container, a subclass, a key that is not a string)."""
    if not _FLAT.issuperset(map(type, value.values())) or not _STR.issuperset(map(type, value)):
        return None
    return "{" + inner + _flat_encoder(inner).encode(value)[1:-1] + newline + "}"


def _flat_objects(value: list[Any] | tuple[Any, ...], newline: str, inner: str,
                  deeper: str) -> str | None:
    """A list of non-empty flat objects (see ``_flat_object``) — a decision
    record's entries, the unapplied ones ``decision list`` prints — in one call of
    the C encoder, the item separator set to ``,`` and the objects' indentation. Its
    text is the indented one once each boundary between two objects, ``},`` + that
    separator's indentation + ``{``, takes the list's indentation: JSON escapes every
    newline inside a string, and a flat object's member never ends with ``}`` nor
    begins with ``{``, so that sequence is met at those boundaries alone. ``None``
    for any other list."""
    if not _DICT.issuperset(map(type, value)) or not all(value) or \
            not _FLAT.issuperset(map(type, chain.from_iterable(map(dict.values, value)))) or \
            not _STR.issuperset(map(type, chain.from_iterable(value))):
        return None
    body = _flat_encoder(deeper).encode(value)[2:-2].replace(
        "}," + deeper + "{", inner + "}," + inner + "{" + deeper)
    return "[" + inner + "{" + deeper + body + inner + "}" + newline + "]"


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
            flat = _flat_object(value, newline, inner)
            if flat is not None:
                append(flat)
                return
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
            if not strings:
                flat = _flat_objects(value, newline, inner, inner + step)
                if flat is not None:
                    append(flat)
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
