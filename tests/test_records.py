"""``git_forge.records.NamedTuple``: the class ``typing.NamedTuple`` builds, without
importing ``typing`` — the same fields, defaults, methods and behaviour."""

from __future__ import annotations

import pickle
import subprocess
import sys
import typing

import pytest

from git_forge.records import NamedTuple


class Point(NamedTuple):
    """A point."""

    x: int
    y: int = 0
    #: A documented field with a default.
    label: str | None = None

    @property
    def norm(self) -> int:
        return abs(self.x) + abs(self.y)

    @classmethod
    def origin(cls) -> Point:
        return cls(0)

    def moved(self, by: int) -> Point:
        return self._replace(x=self.x + by)


class TypingPoint(typing.NamedTuple):
    """A point."""

    x: int
    y: int = 0
    label: str | None = None


def test_a_record_behaves_as_typing_builds_it() -> None:
    point = Point(3, -4)
    theirs = TypingPoint(3, -4)
    assert point == theirs == (3, -4, None)
    assert Point._fields == TypingPoint._fields == ("x", "y", "label")
    assert Point._field_defaults == TypingPoint._field_defaults == {"y": 0, "label": None}
    assert repr(point) == "Point(x=3, y=-4, label=None)"
    assert point.norm == 7 and Point.origin() == Point(0, 0)
    assert point.moved(2) == Point(5, -4) and point._asdict()["y"] == -4
    assert Point.__doc__ == "A point." and Point.__module__ == __name__
    assert Point.__qualname__ == "Point" and list(Point.__annotations__) == ["x", "y", "label"]
    assert isinstance(point, tuple) and pickle.loads(pickle.dumps(point)) == point
    with pytest.raises(AttributeError):
        point.x = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]


def test_a_field_without_a_default_after_one_with_it_is_refused() -> None:
    with pytest.raises(TypeError, match="follows one with it"):
        class Bad(NamedTuple):  # noqa: F841
            first: int = 0
            second: int  # type: ignore[misc]


def test_what_typing_refuses_is_refused() -> None:
    with pytest.raises(AttributeError, match="_replace"):
        class Clobbers(NamedTuple):  # noqa: F841
            x: int

            def _replace(self, **changes: object) -> Clobbers:  # type: ignore[override]
                return self

    with pytest.raises(TypeError, match="no base but NamedTuple"):
        class Mixed(NamedTuple, int):  # type: ignore[misc]  # noqa: F841
            x: int


def test_a_body_without_fields_or_without_the_future_import() -> None:
    class Empty(NamedTuple):
        """Nothing in it."""

    assert Empty() == () and Empty._fields == () and Empty.__doc__ == "Nothing in it."
    namespace: dict[str, object] = {}
    exec("from git_forge.records import NamedTuple\n"  # evaluated annotations
         "class P(NamedTuple):\n    x: int\n    y: 'int' = 2\n"
         "    def total(self):\n        return self.x + self.y\n", namespace)
    made = namespace["P"](1)  # type: ignore[operator]
    assert made == (1, 2) and made.total() == 3 and made._fields == ("x", "y")


def test_importing_it_imports_no_typing() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "import sys, git_forge.records\n"
         "class P(git_forge.records.NamedTuple):\n    x: int = 1\n"
         "print(P(), 'typing' in sys.modules)"],
        capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout == "P(x=1) False\n"
