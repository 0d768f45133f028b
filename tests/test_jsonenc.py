"""The indented encoder must give json.dumps(indent=…, ensure_ascii=False)'s exact text."""

from __future__ import annotations

import json
import random
from collections import OrderedDict
from enum import IntEnum
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


@pytest.mark.parametrize("seed", range(40))
def test_random_documents_encode_exactly_like_json_dumps(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(50):
        document = random_document(rng)
        for indent in (2, 4, 0):
            assert dumps_indented(document, indent) == reference(document, indent)


@pytest.mark.parametrize("document", [
    {}, [], (), "", 0, None, True, 1.0, {"a": {}}, {"a": []}, [[], {}, [[]], [{}]],
    {"nested": {"empty": {"list": [], "dict": {}}}}, ["only", "strings"], ["mixed", 1, None],
    {"é": "ü", "\u2028": "\x00"},
])
def test_edge_documents(document: Any) -> None:
    assert dumps_indented(document) == reference(document)


@pytest.mark.parametrize("document", [
    {7: "int key", 2.5: "float key", True: "bool key", None: "null key"},
    OrderedDict([("b", 1), ("a", 2)]),
    {"enum": IntEnum("Level", "LOW HIGH").HIGH},
    [type("Text", (str,), {})("a str subclass")],
])
def test_what_it_leaves_to_json_dumps_comes_out_the_same(document: Any) -> None:
    assert dumps_indented(document) == reference(document)


@pytest.mark.parametrize("number", [float("nan"), float("inf"), -float("inf")])
def test_nan_and_the_infinities_are_refused_not_written(number: float) -> None:
    for document in ([number], {"cost": number, "flat": "object"}, [{"a": [number]}]):
        with pytest.raises(ValueError, match="not JSON compliant"):
            dumps_indented(document)
        assert encode_nested(document, 1) is None


def test_deep_nesting_and_cycles_give_json_dumps_own_result() -> None:
    deep: Any = "bottom"
    for _ in range(300):
        deep = {"down": [deep]}
    assert dumps_indented(deep) == reference(deep)
    for _ in range(2000):
        deep = [deep]
    with pytest.raises(RecursionError):
        reference(deep)
    with pytest.raises(RecursionError):
        dumps_indented(deep)
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="Circular reference"):
        dumps_indented(cycle)


def test_unserializable_values_raise_like_json_dumps() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps_indented({"a": object()})
    with pytest.raises(TypeError, match="keys must be"):
        dumps_indented({(1, 2): "tuple key"})


def test_dumps_json_is_the_file_format() -> None:
    document = {"schemaVersion": "1", "items": [{"id": "001", "title": "Ünïcode ✓",
                                                  "dependsOn": [], "priority": 2}]}
    assert dumps_json(document) == (reference(document) + "\n").encode("utf-8")


@pytest.mark.parametrize("seed", range(20))
def test_a_list_joined_from_its_elements_texts_is_the_whole_documents_text(seed: int) -> None:
    """``join_list_in`` over ``encode_nested`` texts (how the loop rewrites a backlog
    after one item changed) gives the whole document's exact text."""
    rng = random.Random(seed)
    elements = [random_document(rng, 1) for _ in range(rng.randrange(0, 6))]
    document = {random_string(rng): random_document(rng, 2) for _ in range(rng.randrange(3))}
    document["items"] = elements
    document.update({random_string(rng) + "z": random_scalar(rng) for _ in range(2)})
    texts = [encode_nested(element, 2) for element in elements]
    if None in texts:  # a value only json.dumps encodes: the caller encodes it all
        return
    others = [encode_nested(value, 1) for key, value in document.items() if key != "items"]
    try:
        expected = None if None in others else reference(document).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no bytes, as encoding it would say
        with pytest.raises(UnicodeEncodeError):
            join_list_in(document, "items", [text.encode("utf-8") for text in texts])
        return
    try:
        elements_bytes = [text.encode("utf-8") for text in texts]
    except UnicodeEncodeError:
        return
    assert join_list_in(document, "items", elements_bytes) == expected
    if expected is not None:  # what ``end`` adds is simply after the document
        assert join_list_in(document, "items", elements_bytes, end=b"\n") == expected + b"\n"


def test_what_only_json_dumps_encodes_is_no_element_text() -> None:
    assert encode_nested(float("nan"), 2) is None
    assert encode_nested({1: "x"}, 2) is None
    assert join_list_in({"items": [], "x": float("inf")}, "items", []) is None
    assert join_list_in({"items": []}, "items", []) == reference({"items": []}).encode()
    assert join_list_in({}, "items", [], end=b"\n") == b"{}\n"
    assert join_list_in({"items": []}, "items", [], end=b"\n") == (
        reference({"items": []}) + "\n").encode()


#: Strings that look like the text between two objects of a list, or like its ends.
LOOKALIKES = ["},\n  {", "},\n      {", "}, {", "},{", "[{", "}]", "{", "}", "\n", ",\n",
              "\\n", "\u2028", ""]


def flat_object(rng: random.Random) -> dict[str, Any]:
    """A non-empty object of strings, integers, booleans and nulls (a float, which
    no flat object holds, becomes its text)."""
    def value() -> Any:
        if rng.random() < 0.2:
            return rng.choice(LOOKALIKES)
        scalar = random_scalar(rng)
        return repr(scalar) if type(scalar) is float else scalar
    return {rng.choice(LOOKALIKES + [random_string(rng)]) + str(n): value()
            for n in range(rng.randrange(1, 6))}


@pytest.mark.parametrize("seed", range(30))
def test_lists_of_flat_objects_encode_exactly_like_json_dumps(seed: int) -> None:
    """A list whose elements are all non-empty flat objects (a decision record's
    entries) is encoded in one call of the C encoder; strings that look like the
    boundary between two of them, a list that holds one other value (an empty
    object, a float, a nested list, a str subclass), a tuple and every depth and
    indentation give json.dumps' own text."""
    rng = random.Random(seed)
    others: list[Any] = [{}, 1.5, [], ["a"], {"a": {}}, {"a": [1]}, {"a": 0.5}, "text",
                         None, {"a": type("Text", (str,), {})("x")}, {1: "int key"}]
    for _ in range(20):
        flat = [flat_object(rng) for _ in range(rng.randrange(1, 8))]
        mixed = list(flat)
        mixed.insert(rng.randrange(len(mixed) + 1), rng.choice(others))
        for listed in (flat, tuple(flat), mixed):
            for document in (listed, {"unapplied": listed, "count": len(listed)},
                             [{"deeper": [listed]}]):
                for indent in (2, 4, 0, 1):
                    assert dumps_indented(document, indent) == reference(document, indent)
