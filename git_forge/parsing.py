"""Parsing JSON that git-forge did not write itself, within limits (YAML: ``yamlfile``).

Every document git-forge reads — backlog.json, state.json, the decision record,
journal lines, supervisor manifests and spool indexes, an answers file, the
configuration, a runner's output — is parsed here, or as YAML by ``yamlfile``
under the same limits. A hand-edited or hostile
file may nest thousands of levels deep (the parsers recurse and fail with a
``RecursionError``; code that walks a merely deep document later fails the same
way) or hold an integer of thousands of digits (Python refuses to convert more
than 4300 digits). Either is refused here, as ``DocumentTooComplex`` naming the
source: ``<file>: too deeply nested`` / ``<file>: number too large``. So is, for a JSON
reader that asks (``finite=True``: the backlog, which no writer may write back
with one), a number JSON has no text for — ``NaN``, ``Infinity``, ``1e999`` —
which Python's parser accepts. So is,
for a reader that asks (``unique_keys=True``: an answers file), a key written
twice in one mapping, which both parsers otherwise settle silently by keeping
the last (``<file>: the key '001' is given twice``). Syntax
errors are left to each reader (``json.JSONDecodeError``, ``UnicodeDecodeError``),
which words them for its file.

No document git-forge or feature-forge writes nests deeper than a handful of
levels; ``MAX_DEPTH`` leaves a wide margin and still keeps every walk of a
document (copies, comparisons, the encoder) far from the interpreter's
recursion limit. Checking the depth visits each container once: about a third
of the parse's own time on a 10 000-item backlog, a fraction of a millisecond
on a usual one.
"""

from __future__ import annotations

import json
import math
from itertools import chain, compress, repeat
from operator import is_, is_not

from git_forge.errors import ForgeError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

#: Containers inside containers, the top level being depth 1.
MAX_DEPTH = 100
TOO_DEEP = "too deeply nested"
TOO_LARGE = "number too large"
NOT_FINITE = "a number that is not finite (NaN or an infinity: not JSON)"


def key_twice(key: object) -> str:
    return f"the key {key!r} is given twice"


class _DuplicateKey(ValueError):
    """A mapping's key met a second time by the parser."""


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``'s ``object_pairs_hook`` refusing a repeated key."""
    document: dict[str, Any] = {}
    for key, value in pairs:
        if key in document:
            raise _DuplicateKey(key_twice(key))
        document[key] = value
    return document


class _NotFinite(ValueError):
    """``NaN``, ``Infinity`` or a float beyond the largest, met by the parser."""


def _refuse_constant(name: str) -> float:
    raise _NotFinite(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999: valid syntax, read as an infinity
        raise _NotFinite(text)
    return value


class DocumentTooComplex(ForgeError):
    """A document nested deeper than ``MAX_DEPTH``, holding a number too large to
    convert, a YAML anchor or alias, or (where refused) a key given twice: a refusal
    (exit 2) that names the source."""

    def __init__(self, source: str | Path, problem: str) -> None:
        super().__init__(f"{source}: {problem}")
        self.problem = problem


def number_too_large(exc: ValueError) -> bool:
    """The interpreter's integer-digits limit (``sys.set_int_max_str_digits``)."""
    return "integer string conversion" in str(exc)


_CONTAINERS = (dict, list, tuple)  # tuple: YAML's !!pairs
_CONTAINERS_SET = frozenset(_CONTAINERS)


def check_depth(document: Any, source: str | Path) -> None:
    """Refuse ``document`` (``DocumentTooComplex`` naming ``source``) when it nests
    deeper than ``MAX_DEPTH``. Level by level, without recursion, so any depth is
    safe to measure. Each level's children are gathered and their types taken by C
    loops (``chain``, ``map``); a level holding no container — most documents' third
    or fourth — ends the walk without a Python step per value."""
    level = [document] if type(document) in _CONTAINERS else []
    for _ in range(MAX_DEPTH):
        if not level:
            return
        types = list(map(type, level))
        dicts = compress(level, map(is_, types, repeat(dict)))
        others = compress(level, map(is_not, types, repeat(dict)))  # lists and tuples
        children = list(chain(chain.from_iterable(map(dict.values, dicts)),
                              chain.from_iterable(others)))
        kinds = list(map(type, children))
        if _CONTAINERS_SET.isdisjoint(kinds):
            return
        level = list(compress(children, map(_CONTAINERS_SET.__contains__, kinds)))
    if level:
        raise DocumentTooComplex(source, TOO_DEEP)


def load_json(data: str | bytes, source: str | Path, *, limit_depth: bool = True,
              finite: bool = False, unique_keys: bool = False) -> Any:
    """``json.loads(data)``, refusing a document too deep or a number too large.
    ``limit_depth=False``: for a reader that walks only a part of the document it
    picks out without recursion (``decision list --unapplied`` prints an item's
    latest entry, never the ones before), which checks that part (``check_depth``)
    before anything walks it. A document too deep for the parser itself is refused
    all the same. ``finite``: a number that is not finite is refused too.
    ``unique_keys``: so is a key given twice in one object."""
    options: dict[str, Any] = {}
    if finite:
        options.update(parse_constant=_refuse_constant, parse_float=_finite_float)
    if unique_keys:
        options["object_pairs_hook"] = _unique_pairs
    try:
        document = json.loads(data, **options)
    except RecursionError:
        raise DocumentTooComplex(source, TOO_DEEP) from None
    except _NotFinite:
        raise DocumentTooComplex(source, NOT_FINITE) from None
    except _DuplicateKey as exc:
        raise DocumentTooComplex(source, str(exc)) from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are the reader's
        if not isinstance(exc, json.JSONDecodeError | UnicodeDecodeError) and \
                number_too_large(exc):
            raise DocumentTooComplex(source, TOO_LARGE) from None
        raise
    if limit_depth:
        check_depth(document, source)
    return document
