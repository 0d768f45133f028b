"""``NamedTuple`` records without ``import typing`` at run time.

``typing`` costs a start-up ~8 ms (of a ``status`` whose whole budget is three
interpreters' start-ups), and a record is the one thing git-forge needs from it
outside type checking. For the type checker ``NamedTuple`` *is*
``typing.NamedTuple``; at run time it is a base whose metaclass builds the same
class ``typing`` builds — ``collections.namedtuple`` of the annotated fields,
with their defaults, the class's methods, properties and docstring — minus the
evaluation of every annotation (``typing`` compiles each string annotation, a
cost of its own). Only the class form is supported::

    class Point(NamedTuple):
        x: int
        y: int = 0
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    from collections import namedtuple

    #: What ``collections.namedtuple`` makes itself: a class body that defines one is
    #: refused, as ``typing`` refuses it.
    _PROHIBITED = frozenset({"__new__", "__init__", "__slots__", "__getnewargs__", "_fields",
                             "_field_defaults", "_make", "_replace", "_asdict", "_source"})
    #: Set from the class body's own values, not copied over.
    _OWN = frozenset({"__module__", "__qualname__", "__annotations__"})

    class _RecordMeta(type):
        def __new__(mcls, name, bases, namespace):
            if not bases:  # NamedTuple itself
                return super().__new__(mcls, name, bases, namespace)
            if bases != (NamedTuple,):
                raise TypeError(f"{name}: a record has no base but NamedTuple")
            if "__annotations__" not in namespace:
                # No plain annotations to read (a body without fields, or lazily
                # evaluated ones, PEP 649): typing builds it, whatever it costs.
                import types
                import typing

                return types.new_class(name, (typing.NamedTuple,), {},
                                       lambda body: body.update(namespace))
            annotations = namespace["__annotations__"]
            fields = list(annotations)
            defaulted = [field in namespace for field in fields]
            if defaulted != sorted(defaulted):  # every field with a default comes last
                raise TypeError(f"{name}: a field without a default follows one with it")
            record = namedtuple(name, fields,
                                defaults=[namespace[field] for field in fields
                                          if field in namespace],
                                module=namespace.get("__module__"))
            record.__qualname__ = namespace.get("__qualname__", name)
            record.__annotations__ = dict(annotations)
            for key, value in namespace.items():
                if key in _PROHIBITED:
                    raise AttributeError(f"{name}: cannot overwrite NamedTuple attribute {key}")
                if key in annotations or key in _OWN:
                    continue
                if key == "__doc__" and value is None:
                    continue
                setattr(record, key, value)
            return record

    class NamedTuple(metaclass=_RecordMeta):
        """Subclass to declare a record (see the module's docstring)."""
