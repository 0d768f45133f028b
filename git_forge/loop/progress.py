"""What the loop tells its caller as it goes.

Rendering is not done in the loop: the caller passes a ``Progress`` whose hooks it
implements (a live line on a terminal, plain lines, or the journal as NDJSON).
"""

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple, Protocol

from git_forge.backlog.item import Item
from git_forge.loop.journal import EventJSON


class RunningAgent(NamedTuple):
    """One agent of a parallel run, as the progress shows it: a line each."""

    item: Item
    elapsed: float
    output_bytes: int
    worktree: Path


class Progress(Protocol):
    """What the loop tells its caller as it goes. A caller renders it (the CLI's
    ``TerminalProgress``) or leaves hooks out by extending ``NullProgress``."""

    def started(self, run_id: str, max_iterations: int) -> None: ...
    def iteration(self, number: int, max_iterations: int, item: Item) -> None: ...
    def tick(self, elapsed: float, output_bytes: int) -> None: ...
    def output(self, text: str) -> None: ...
    def finished(self, item: Item, outcome: str, detail: str) -> None: ...
    def event(self, event: EventJSON) -> None: ...
    def note(self, text: str) -> None: ...
    def limit_wait(self, until: str, reason: str) -> None: ...
    def countdown(self, seconds_left: float) -> None: ...
    def agents(self, running: Sequence[RunningAgent], queued: Sequence[str]) -> None: ...


class NullProgress:
    """A ``Progress`` that tells nobody: the loop's default, and a base whose
    hooks a caller overrides only where it wants to hear."""

    def started(self, run_id: str, max_iterations: int) -> None:
        return None

    def iteration(self, number: int, max_iterations: int, item: Item) -> None:
        return None

    def tick(self, elapsed: float, output_bytes: int) -> None:
        return None

    def output(self, text: str) -> None:
        return None

    def finished(self, item: Item, outcome: str, detail: str) -> None:
        return None

    def event(self, event: EventJSON) -> None:
        return None

    def note(self, text: str) -> None:
        return None

    def limit_wait(self, until: str, reason: str) -> None:
        """The run starts waiting out a usage limit until ``until`` (UTC)."""
        return None

    def countdown(self, seconds_left: float) -> None:
        """Called about once a second during that wait, and with 0 when it ends
        (waited out or stopped)."""
        return None

    def agents(self, running: Sequence[RunningAgent], queued: Sequence[str]) -> None:
        """Items run in parallel: every running agent, and the done items waiting
        to be integrated (oldest first)."""
        return None
