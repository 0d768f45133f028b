"""The circuit breaker: a broken agent stops the run instead of deferring the
backlog item by item.

An agent that is not logged in, not installed or failing on every API call fails
every attempt the same way. The breaker counts consecutive attempts — across
items — whose failure has the same signature (exit code and classified kind,
``exit 1: not logged in``); at ``--max-consecutive-failures`` (3) it trips. Any
other attempt (one that ran, or failed differently, or was cut off by a
backstop) starts the count again. The items the streak touched are put back as
they were before it, so a tripped run leaves the backlog as it found it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from git_forge.backlog.item import Item


@dataclass(frozen=True)
class Tripped:
    signature: str
    attempts: int
    #: Each item the streak touched, as it was before the streak's first attempt on it.
    items: tuple[Item, ...]
    #: The last attempt's own words and stderr lines, for the operator.
    said: str | None
    stderr: tuple[str, ...]

    def message(self) -> str:
        ids = ", ".join(item.id for item in self.items)
        lines = [f"circuit breaker: the agent failed {self.attempts} times in a row the "
                 f"same way ({self.signature}): stopped the run instead of deferring the backlog; "
                 f"item{'s' if len(self.items) != 1 else ''} {ids} back to pending"]
        if self.said:
            lines.append(f"  agent: {self.said}")
        lines += [f"  stderr: {line}" for line in self.stderr]
        lines.append("  fix the agent (log in, install it, check its flags), then run "
                     "git forge loop run again")
        return "\n".join(lines)


@dataclass
class Breaker:
    limit: int
    _signature: str | None = None
    _count: int = 0
    _touched: dict[str, Item] = field(default_factory=dict)

    def record(self, before: Item, signature: str | None, said: str | None = None,
               stderr: tuple[str, ...] = ()) -> Tripped | None:
        """One finished attempt on the item that was ``before`` when it was taken:
        ``signature`` when it failed with a classified kind, ``None`` otherwise."""
        if signature is None:
            self.reset()
            return None
        if signature != self._signature:
            self.reset()
            self._signature = signature
        self._count += 1
        self._touched.setdefault(before.id, before)
        if self._count < self.limit:
            return None
        tripped = Tripped(signature, self._count, tuple(self._touched.values()), said, stderr)
        self.reset()
        return tripped

    def reset(self) -> None:
        self._signature, self._count = None, 0
        self._touched = {}
