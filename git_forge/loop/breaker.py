"""The circuit breaker: a broken agent stops the run instead of deferring the
backlog item by item.

The breaker is about the agent, not one item. An agent that is not logged in, not
installed or failing on every API call fails every attempt the same way. The
breaker counts consecutive attempts — across items — whose failure has the same
signature (exit code and classified kind, ``exit 1: not logged in``; for a
failure with no kind, such as a plain command line's, exit code and last error
line, ``exit 1: RuntimeError: model overloaded``); any other
attempt (one that ran, or failed differently, or was cut off by a backstop)
starts the count again. It trips at ``--max-consecutive-failures`` (3) such
attempts once they span at least two items: one item that keeps failing is
deferred after its retries, as any item, and the next item gets its turn — when
that one fails the same way too, the agent is at fault, and the run stops. A
failure that is the agent's by kind (``AGENT_KINDS``: not logged in, command not
found, a command line refused, a usage limit still reported after its reset)
trips it at the count on one item alone: no other item could do better. The
items the streak touched are put back as they were before it, so a tripped run
leaves the backlog as it found it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from git_forge.backlog.item import Item
from git_forge.words import counted


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
        lines = [f"circuit breaker: the agent failed {counted(self.attempts, 'time')} in a row "
                 f"the same way ({self.signature}): stopped the run instead of deferring the "
                 f"backlog; item{'s' if len(self.items) != 1 else ''} {ids} back to pending"]
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
               stderr: tuple[str, ...] = (), *, agents_own: bool = False) -> Tripped | None:
        """One finished attempt on the item that was ``before`` when it was taken:
        ``signature`` when it failed (``AgentResult.failure_signature``), ``None`` otherwise;
        ``agents_own`` when that kind is the agent's, whatever the item."""
        if signature is None:
            self.reset()
            return None
        if signature != self._signature:
            self.reset()
            self._signature = signature
        self._count += 1
        self._touched.setdefault(before.id, before)
        if self._count < self.limit or not (agents_own or len(self._touched) > 1):
            return None
        tripped = Tripped(signature, self._count, tuple(self._touched.values()), said, stderr)
        self.reset()
        return tripped

    def reset(self) -> None:
        self._signature, self._count = None, 0
        self._touched = {}
