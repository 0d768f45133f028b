"""Lifecycle states, the transition matrix, reasons, error codes and handles."""

from __future__ import annotations

import base64
import itertools

import pytest

from git_forge.errors import ForgeError
from git_forge.supervisor.handles import is_valid_handle, mint_handle, require_handle
from git_forge.supervisor.lifecycle import (
    ALL_STATES,
    ERROR_CODES,
    REASONS,
    TERMINAL_STATES,
    Lifecycle,
    ProcessError,
    State,
    check_transition,
)

ALLOWED = {
    ("starting", "running"), ("starting", "failed"), ("starting", "terminated"),
    ("starting", "killed"), ("starting", "lost_on_restore"),
    ("running", "exited"), ("running", "failed"), ("running", "timed_out"),
    ("running", "interrupted"), ("running", "terminated"), ("running", "killed"),
    ("running", "lost_on_restore"),
}


def test_the_closed_state_set() -> None:
    assert ALL_STATES == {
        "starting", "running", "exited", "failed", "timed_out", "interrupted", "terminated",
        "killed", "lost_on_restore",
    }
    assert TERMINAL_STATES == ALL_STATES - {"starting", "running"}


PAIRS = list(itertools.product(sorted(ALL_STATES), repeat=2))


@pytest.mark.parametrize(("current", "target"), PAIRS)
def test_every_transition_pair(current: str, target: str) -> None:
    lifecycle = Lifecycle(current)
    if (current, target) in ALLOWED:
        assert lifecycle.transition(target) == target
        assert lifecycle.state == target
    else:
        with pytest.raises(ProcessError) as raised:
            lifecycle.transition(target)
        assert raised.value.code == "invalid_transition"
        assert lifecycle.state == current  # a refused transition changes nothing


@pytest.mark.parametrize("bad", ["", "RUNNING", "done", "timed-out"])
def test_unknown_states_are_rejected(bad: str) -> None:
    lifecycle = Lifecycle("running")
    with pytest.raises(ProcessError, match="invalid_transition"):
        lifecycle.transition(bad)
    assert lifecycle.state == "running"
    with pytest.raises(ProcessError, match="invalid_transition"):
        check_transition(bad, "running")
    with pytest.raises(ProcessError, match="invalid_transition"):
        Lifecycle(bad)


def test_reasons_are_hyphenated_wire_strings() -> None:
    assert REASONS == {
        "exited": "exited", "failed": "failed", "timed_out": "timed-out",
        "interrupted": "interrupted", "terminated": "terminated", "killed": "killed",
        "lost_on_restore": "lost-on-restore",
    }
    assert set(REASONS) == TERMINAL_STATES
    assert State.TIMED_OUT == "timed_out"


def test_errors_match_by_code_only() -> None:
    one = ProcessError("not_found", "first cause")
    other = ProcessError("not_found", "another cause entirely")
    assert one == other and hash(one) == hash(other)
    assert one.matches(other) and one.matches("not_found")
    assert not one.matches("cursor_ahead") and one != ProcessError("cursor_ahead")
    assert isinstance(one, ForgeError)
    assert one.message == "process: not_found: first cause"
    assert ProcessError("stdin_closed").message == "process: stdin_closed"


def test_error_codes_are_a_closed_set_with_exit_codes() -> None:
    for code in ("invalid_arguments", "invalid_settings", "process_quota_exceeded",
                 "spawn_failed", "process_setup_failed", "not_found", "stdin_closed",
                 "cursor_ahead", "supervisor_shutting_down", "manifest_corrupt",
                 "spool_corrupt", "teardown_failed"):
        assert code in ERROR_CODES
    with pytest.raises(ValueError):
        ProcessError("something_else")
    assert {code for code in ERROR_CODES if ProcessError(code).exit_code == 2} == {
        "invalid_arguments", "not_found", "cursor_ahead", "manifest_corrupt", "spool_corrupt",
    }
    assert ProcessError("spawn_failed").exit_code == 1


def test_minted_handles_are_22_url_safe_characters_never_starting_with_a_dash() -> None:
    handles = {mint_handle() for _ in range(3000)}
    assert len(handles) == 3000
    for handle in handles:
        assert len(handle) == 22 and not handle.startswith("-") and "=" not in handle
        assert len(base64.urlsafe_b64decode(handle + "==")) == 16
        assert is_valid_handle(handle)
        assert require_handle(handle) == handle


@pytest.mark.parametrize("bad", [
    "", "..", "../../etc/passwd", "/etc/passwd", "a" * 21, "a" * 23, "-" + "a" * 21,
    "aaaaaaaaaaaaaaaaaaaa/a", "aaaaaaaaaaaaaaaaaaaa.a", "AAAAAAAAAAAAAAAAAAAAAB",  # not canonical
    None, 42,
])
def test_invalid_handles_are_not_found(bad: object) -> None:
    assert not is_valid_handle(bad)
    with pytest.raises(ProcessError) as raised:
        require_handle(bad)
    assert raised.value.code == "not_found"


def test_the_stop_plan_alone() -> None:
    import signal

    from git_forge.supervisor.stopplan import StopKind, StopPlan

    plan = StopPlan()
    assert plan.outcome(3) == ("exited", 3) and plan.outcome(-signal.SIGTERM) == (
        "terminated", None)
    assert plan.request(StopKind.INTERRUPT, now=0, grace=5) == signal.SIGINT
    assert not plan.due(100)  # an interrupt never escalates
    assert plan.outcome(-signal.SIGINT) == ("interrupted", None)
    assert plan.request(StopKind.TERMINATE, now=10, grace=5) == signal.SIGTERM
    assert plan.kind is StopKind.TERMINATE  # it outranks the interrupt
    plan.request(StopKind.TERMINATE, now=12, grace=10)
    assert plan.escalate_at == 15 and not plan.due(14.9) and plan.due(15)
    assert plan.outcome(-signal.SIGTERM) == ("terminated", None)
    assert plan.escalate() == signal.SIGKILL and plan.escalate_at is None
    assert plan.outcome(-signal.SIGKILL) == ("killed", None)
    timeout = StopPlan()
    timeout.request(StopKind.TIMEOUT, now=0, grace=1)
    timeout.request(StopKind.KILL, now=0.5, grace=1)  # the first terminal kind stays
    assert timeout.outcome(-signal.SIGKILL) == ("timed_out", None)
