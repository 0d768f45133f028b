"""Parsing YAML that git-forge did not write itself (the configuration, an answers
file), within ``parsing``'s limits: a document too deep or a number too large is
refused as there, and so is any anchor or alias (``<file>: line N: YAML anchors and
aliases are not allowed``) — nine lines of aliases, each naming the one above nine
times ("billion laughs"), expand to hundreds of millions of values, minutes of work
and gigabytes before any check could see them, and no file git-forge reads needs
one. The loader stops at the first anchor, before the parser reads further. Syntax
errors are left to each reader (``yaml.YAMLError``), which words them for its file
(``yaml_problem``: a YAML error in one line).

Apart from ``parsing`` because importing PyYAML is what no JSON reader should pay for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from git_forge.parsing import (
    TOO_DEEP,
    TOO_LARGE,
    DocumentTooComplex,
    check_depth,
    key_twice,
    number_too_large,
)

#: What a reader catches for a document that is not YAML (and words with ``yaml_problem``).
YAMLError = yaml.YAMLError

#: Why a YAML document with an anchor or an alias is refused.
NO_ALIASES = "YAML anchors and aliases are not allowed"


class _AliasFound(Exception):
    """An anchor or alias in the event stream, at ``line`` (1-based)."""

    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


class _KeyTwice(Exception):
    """A mapping's key given twice, at ``line`` (1-based)."""

    def __init__(self, key: object, line: int) -> None:
        super().__init__(key, line)
        self.key = key
        self.line = line


class _Loader(yaml.SafeLoader):
    """pyyaml's ``SafeLoader`` (what ``yaml.safe_load`` uses) stopping at the first
    node that has an anchor or is an alias — every node passes ``compose_node``.
    ``unique_keys``: a mapping's key given twice is refused, where pyyaml keeps the
    last."""

    unique_keys = False

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _AliasFound(event.start_mark.line + 1)
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        mapping = super().construct_mapping(node, deep)
        if self.unique_keys and len(mapping) < len(node.value):
            seen: set[object] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep)
                if key in seen:
                    raise _KeyTwice(key, key_node.start_mark.line + 1)
                seen.add(key)
        return mapping


class _TextLoader(_Loader):
    """``_Loader`` with no implicit resolver: a plain scalar resolves to a string."""

    yaml_implicit_resolvers: dict[Any, Any] = {}


def load_yaml(text: str, source: str | Path, *, as_text: bool = False,
              unique_keys: bool = False) -> Any:
    """``yaml.safe_load(text)``, refusing an anchor or alias, a document too deep
    or a number too large. ``as_text``: every plain scalar is read as the text
    written — YAML 1.1 reads ``010`` as the octal 8, ``0x10`` as 16, ``1:20`` as 80
    and ``yes`` as true, where a file of ids and answers means the words (an
    explicitly tagged value, ``!!int 10``, is still what its tag says).
    ``unique_keys``: a key given twice in one mapping is refused."""
    loader = (_TextLoader if as_text else _Loader)(text)
    loader.unique_keys = unique_keys
    try:
        document = loader.get_single_data()
    except _AliasFound as found:
        raise DocumentTooComplex(source, f"line {found.line}: {NO_ALIASES}") from None
    except _KeyTwice as twice:
        raise DocumentTooComplex(source, f"line {twice.line}: {key_twice(twice.key)}") from None
    except RecursionError:
        raise DocumentTooComplex(source, TOO_DEEP) from None
    except ValueError as exc:
        if number_too_large(exc):
            raise DocumentTooComplex(source, TOO_LARGE) from None
        raise
    finally:
        loader.dispose()
    check_depth(document, source)
    return document


def yaml_problem(exc: Exception) -> str:
    """A ``yaml.YAMLError`` in one line — ``line N: <problem>`` — for a refusal
    that names its file: pyyaml's own text runs over several lines, quoting the
    document."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}: " if mark is not None else ""
    lines = str(exc).splitlines()
    return where + (getattr(exc, "problem", None) or (lines[0] if lines else type(exc).__name__))
