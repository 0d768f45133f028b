"""A backlog rewritten from its items' kept texts is json.dumps(indent=2)'s exact text."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from git_forge.jsonenc import dumps_indented, encode_nested, join_list_in
from git_forge.jsonfile import dumps_json

ALPHABET = ("abcXYZ09 _-/:,{}[]\"\\\t\n\r\x00\x01\x1f\x7f\x80éßü€中文😀\u2028\u2029\ufeff"
            "\ud800")  # a lone surrogate too: json.dumps passes it through unescaped


def reference(document: Any, indent: int = 2) -> str:
    return json.dumps(document, indent=indent, ensure_ascii=False)


def random_string(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 12)))


def random_scalar(rng: random.Random) -> Any:
    choice = rng.randrange(9)
    if choice == 0:
        return None
    if choice == 1:
        return rng.random() < 0.5
    if choice == 2:
        return rng.randrange(-10**6, 10**6)
    if choice == 3:
        return rng.choice([0, -1, 2**63, -(2**100), 10**40])
    if choice == 4:
        return rng.choice([0.0, -0.0, 0.1, 1e-7, 1e16, 1.5e300, 5e-324, -2.5, 1 / 3])
    if choice == 5:
        return rng.uniform(-1e6, 1e6)
    return random_string(rng)


def random_document(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 5 or roll < 0.35:
        return random_scalar(rng)
    size = rng.choice([0, 0, 1, 2, 3, 5, 8])
    if roll < 0.65:
        return {random_string(rng): random_document(rng, depth + 1) for _ in range(size)}
    items = [random_document(rng, depth + 1) for _ in range(size)]
    return tuple(items) if rng.random() < 0.2 else items


@pytest.mark.parametrize("number", [float("nan"), float("inf"), -float("inf")])
def test_nan_and_the_infinities_are_refused_not_written(number: float) -> None:
    for document in ([number], {"cost": number, "flat": "object"}, [{"a": [number]}]):
        with pytest.raises(ValueError, match="not JSON compliant"):
            dumps_indented(document)
        with pytest.raises(ValueError, match="not JSON compliant"):
            encode_nested(document, 1)


def test_dumps_json_is_the_file_format() -> None:
    document = {"schemaVersion": "1", "items": [{"id": "001", "title": "Ünïcode ✓",
                                                  "dependsOn": [], "priority": 2}]}
    assert dumps_json(document) == (reference(document) + "\n").encode("utf-8")


@pytest.mark.parametrize("seed", range(20))
def test_a_list_joined_from_its_elements_texts_is_the_whole_documents_text(seed: int) -> None:
    """``join_list_in`` over ``encode_nested`` texts (how the loop rewrites a backlog
    after one item changed) gives the whole document's exact text."""
    rng = random.Random(seed)
    for indent in (2, 4):
        elements = [random_document(rng, 1) for _ in range(rng.randrange(0, 6))]
        document = {random_string(rng): random_document(rng, 2)
                    for _ in range(rng.randrange(3))}
        document["items"] = elements
        document.update({random_string(rng) + "z": random_scalar(rng) for _ in range(2)})
        texts = [encode_nested(element, 2, indent) for element in elements]
        try:
            expected = reference(document, indent).encode("utf-8")
            elements_bytes = [text.encode("utf-8") for text in texts]
        except UnicodeEncodeError:  # a lone surrogate: refused before any join
            continue
        assert join_list_in(document, "items", elements_bytes, indent) == expected
        assert join_list_in(document, "items", elements_bytes, indent, end=b"\n") == (
            expected + b"\n")


def test_empty_documents_and_lists_join_as_json_dumps_writes_them() -> None:
    assert join_list_in({"items": []}, "items", []) == reference({"items": []}).encode()
    assert join_list_in({}, "items", [], end=b"\n") == b"{}\n"
    assert join_list_in({"items": []}, "items", [], end=b"\n") == (
        reference({"items": []}) + "\n").encode()
