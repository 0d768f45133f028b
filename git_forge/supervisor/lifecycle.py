"""The supervised process's lifecycle: states, allowed edges, result reasons, error codes.

The wire strings here (states, reasons, codes) are a contract read by other tools
and by older files on disk: they never change spelling.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from git_forge.errors import ForgeError
from git_forge.exit_codes import EXIT_ERROR, EXIT_USAGE


class State(StrEnum):
    """The closed set of process states."""

    STARTING = "starting"
    RUNNING = "running"
    EXITED = "exited"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    INTERRUPTED = "interrupted"
    TERMINATED = "terminated"
    KILLED = "killed"
    LOST_ON_RESTORE = "lost_on_restore"


ALL_STATES: frozenset[str] = frozenset(state.value for state in State)
TERMINAL_STATES: frozenset[str] = ALL_STATES - {State.STARTING, State.RUNNING}

#: Every allowed edge; nothing leaves a terminal state and no state goes to itself.
ALLOWED_TRANSITIONS: dict[str, frozenset[str]] = {
    State.STARTING: frozenset(
        {State.RUNNING, State.FAILED, State.TERMINATED, State.KILLED, State.LOST_ON_RESTORE}
    ),
    State.RUNNING: TERMINAL_STATES,
    **{state: frozenset() for state in TERMINAL_STATES},
}

#: ``result.reason`` of each terminal state: hyphenated, unlike the state names.
REASONS: dict[str, str] = {
    State.EXITED: "exited",
    State.FAILED: "failed",
    State.TIMED_OUT: "timed-out",
    State.INTERRUPTED: "interrupted",
    State.TERMINATED: "terminated",
    State.KILLED: "killed",
    State.LOST_ON_RESTORE: "lost-on-restore",
}

#: The closed set of error codes. Callers match on the code, never on the message.
ERROR_CODES: frozenset[str] = frozenset({
    "invalid_arguments",         # a caller's input is malformed (cursor, mode, manifest)
    "invalid_settings",          # a supervisor configuration value is out of range
    "invalid_transition",        # a state change that is not an allowed edge (or an unknown state)
    "manifest_conflict",         # a save would rewrite what a manifest already made permanent
    "process_quota_exceeded",    # no room for another process (count, memory or spool budget)
    "spawn_failed",              # the operating system refused to start the command
    "process_setup_failed",      # the durable records of a process could not be created
    "not_found",                 # no such handle (or not a handle at all)
    "stdin_closed",              # the process's standard input is gone
    "cursor_ahead",              # a read cursor beyond the bytes written so far
    "supervisor_shutting_down",  # admission is closed
    "supervisor_busy",           # another live supervisor owns this process directory
    "owner_gone",                # no live supervisor owns a process that is not finished
    "wait_timeout",              # a bounded wait ended before the process did
    "manifest_corrupt",          # a manifest file exists but cannot be trusted
    "spool_corrupt",             # an output spool exists but cannot be trusted
    "teardown_failed",           # a signal could not be delivered while stopping a tree
})

#: Codes that are the caller's fault or unreadable input: exit 2 like every refusal.
_USAGE_CODES = frozenset(
    {"invalid_arguments", "not_found", "cursor_ahead", "manifest_corrupt", "spool_corrupt"}
)


class ProcessError(ForgeError):
    """The supervisor layer's one error type: a stable code plus an optional cause.

    Two errors are equal when their codes are; the cause is for people, and
    user-facing JSON shows only the code. ``handle`` and ``next_cursor`` carry
    the context a caller needs (a failed spawn's handle, where a reader stands).
    """

    def __init__(
        self,
        code: str,
        cause: object = None,
        *,
        handle: str | None = None,
        next_cursor: int | None = None,
    ) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown process error code {code!r}")
        message = f"process: {code}" if cause in (None, "") else f"process: {code}: {cause}"
        super().__init__(message, exit_code=EXIT_USAGE if code in _USAGE_CODES else EXIT_ERROR)
        self.code = code
        self.cause = cause
        self.handle = handle
        self.next_cursor = next_cursor

    def matches(self, other: object) -> bool:
        """True when ``other`` (an error or a code string) has the same code."""
        if isinstance(other, ProcessError):
            return other.code == self.code
        return isinstance(other, str) and other == self.code

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ProcessError):
            return other.code == self.code
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.code)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:  # picklable despite the keywords
        return (_rebuild_error, (self.code, self.cause, self.handle, self.next_cursor))


def _rebuild_error(code: str, cause: object, handle: str | None,
                   next_cursor: int | None) -> ProcessError:
    return ProcessError(code, cause, handle=handle, next_cursor=next_cursor)


def is_terminal(state: str) -> bool:
    return state in TERMINAL_STATES


def check_transition(current: str, target: str) -> None:
    """Refuse an edge the matrix does not allow (self-transitions and unknown
    states included) with ``invalid_transition``."""
    if current not in ALL_STATES:
        raise ProcessError("invalid_transition", f"unknown state {current!r}")
    if target not in ALL_STATES:
        raise ProcessError("invalid_transition", f"unknown state {target!r}")
    if target not in ALLOWED_TRANSITIONS[current]:
        raise ProcessError("invalid_transition", f"{current} -> {target} is not allowed")


class Lifecycle:
    """One process's current state; a refused transition leaves it unchanged."""

    def __init__(self, state: str = State.STARTING) -> None:
        if state not in ALL_STATES:
            raise ProcessError("invalid_transition", f"unknown state {state!r}")
        self._state = State(state)

    @property
    def state(self) -> State:
        return self._state

    @property
    def terminal(self) -> bool:
        return is_terminal(self._state)

    def transition(self, target: str) -> State:
        check_transition(self._state, target)
        self._state = State(target)
        return self._state
