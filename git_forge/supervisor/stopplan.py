"""What was asked of a process's end, and what that makes of its outcome.

Pure bookkeeping (no signals, no clock of its own), so every rule is testable
alone: which request wins when several arrive (a timeout or a terminate
outranks an interrupt; the first of terminate / kill / timeout stays), when a
terminate escalates to SIGKILL, and which terminal state the process gets.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from enum import Enum

from git_forge.supervisor.lifecycle import ProcessError, State


class StopKind(Enum):
    INTERRUPT = "interrupt"
    TERMINATE = "terminate"
    KILL = "kill"
    TIMEOUT = "timeout"


#: The signal each stop request sends first.
FIRST_SIGNAL = {StopKind.INTERRUPT: signal.SIGINT, StopKind.TERMINATE: signal.SIGTERM,
                StopKind.KILL: signal.SIGKILL, StopKind.TIMEOUT: signal.SIGTERM}

_SIGNAL_STATES = {
    -signal.SIGINT: State.INTERRUPTED,
    -signal.SIGTERM: State.TERMINATED,
    -signal.SIGKILL: State.KILLED,
}


def stop_kind(mode: str) -> StopKind:
    """A stop mode as ``Supervisor.stop`` takes it (``interrupt``/``terminate``/``kill``)."""
    if mode not in ("interrupt", "terminate", "kill"):
        raise ProcessError("invalid_arguments", f"unknown stop mode {mode!r}")
    return StopKind(mode)


@dataclass
class StopPlan:
    """The stop requests one process received, and the escalation they scheduled."""

    kind: StopKind | None = None
    escalate_at: float | None = None
    escalated: bool = False

    def request(self, kind: StopKind, *, now: float, grace: float) -> int:
        """Record ``kind``; the signal to send now. An interrupt never replaces an
        earlier request and never escalates; a terminate or a timeout schedules a
        SIGKILL ``grace`` seconds on (the earliest one wins); a kill is at once."""
        if self.kind in (None, StopKind.INTERRUPT):
            self.kind = kind
        if kind in (StopKind.TERMINATE, StopKind.TIMEOUT):
            at = now + grace
            self.escalate_at = at if self.escalate_at is None else min(self.escalate_at, at)
        elif kind is StopKind.KILL:
            self.escalated = True
        return FIRST_SIGNAL[kind]

    def due(self, now: float) -> bool:
        return self.escalate_at is not None and now >= self.escalate_at

    def escalate(self) -> int:
        """The scheduled escalation happens: SIGKILL."""
        self.escalate_at = None
        self.escalated = True
        return signal.SIGKILL

    def outcome(self, returncode: int) -> tuple[str, int | None]:
        """The terminal state (and exit code when ``exited``) of a process that
        ended with ``returncode`` under this plan."""
        if self.kind is StopKind.TIMEOUT:
            return State.TIMED_OUT, None
        if self.kind is StopKind.INTERRUPT:
            return State.INTERRUPTED, None
        if self.kind is StopKind.TERMINATE:
            return (State.KILLED if self.escalated else State.TERMINATED), None
        if self.kind is StopKind.KILL:
            return State.KILLED, None
        if returncode >= 0:
            return State.EXITED, returncode
        return _SIGNAL_STATES.get(returncode, State.FAILED), None
