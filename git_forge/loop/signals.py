"""Reading an agent's final signal from its output.

The agent ends with one of ``FORGE_DONE``, ``FORGE_BLOCKED: <reason>`` or
``FORGE_NEEDS_HUMAN: <reason>`` (the rauf runner's ``RAUF_`` spellings are
accepted too). Lines are scanned from the end and the first signal line wins,
so an agent quoting the protocol earlier in its output is not misread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SignalKind = Literal["done", "blocked", "needs_human", "none"]

_DONE = ("FORGE_DONE", "RAUF_DONE")
_PREFIXES: tuple[tuple[str, SignalKind], ...] = (
    ("FORGE_BLOCKED:", "blocked"),
    ("RAUF_BLOCKED:", "blocked"),
    ("FORGE_NEEDS_HUMAN:", "needs_human"),
    ("RAUF_NEEDS_HUMAN:", "needs_human"),
)


@dataclass(frozen=True)
class Signal:
    kind: SignalKind
    reason: str | None = None


NO_SIGNAL = Signal("none")


def parse_signal(text: str) -> Signal:
    """The last signal line of ``text``, or ``NO_SIGNAL``."""
    for line in reversed(text.splitlines()):
        stripped = line.strip()
        if stripped in _DONE:
            return Signal("done")
        for prefix, kind in _PREFIXES:
            if stripped.startswith(prefix):
                return Signal(kind, stripped[len(prefix):].strip())
    return NO_SIGNAL
