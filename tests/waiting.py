"""Waits with deadlines. Every wait in the suite ends: when its deadline passes, what
it waited for is killed (a child process with everything it started) and the test
fails saying what did not happen — a hung child never hangs the suite.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO, Any

import psutil

#: Seconds a single child process may take before the test fails.
PROCESS_TIMEOUT = 60.0


class Deadline:
    """A point in time a wait must not pass."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self.at - time.monotonic())

    @property
    def passed(self) -> bool:
        return time.monotonic() >= self.at


def wait_for(condition: Callable[[], Any], timeout: float = 30.0, *, interval: float = 0.05,
             what: str = "condition") -> None:
    """Poll ``condition`` until it is true; fail after ``timeout`` seconds."""
    deadline = Deadline(timeout)
    while not condition():
        if deadline.passed:
            raise AssertionError(f"{what} not met within {timeout:g} s")
        time.sleep(interval)


def gone(pid: int) -> bool:
    """True once process ``pid`` has exited (a zombie has: only its parent's wait is left)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and every descendant (captured first: a killed parent's
    children are re-parented out of reach)."""
    try:
        descendants = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        descendants = []
    for target in [pid, *(child.pid for child in descendants)]:
        try:
            os.kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _killed(proc: subprocess.Popen, timeout: float, what: str) -> AssertionError:
    kill_tree(proc.pid)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL not delivered
        pass
    argv = proc.args if isinstance(proc.args, str) else " ".join(map(str, proc.args))
    return AssertionError(f"{what} within {timeout:g} s, killed: {argv[:300]}")


def wait_process(proc: subprocess.Popen, timeout: float = PROCESS_TIMEOUT) -> int:
    """``proc.wait()`` with a deadline; returns the exit status."""
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise _killed(proc, timeout, "a child process did not end") from None


def communicate(proc: subprocess.Popen, input: Any = None,
                timeout: float = PROCESS_TIMEOUT) -> tuple[Any, Any]:
    """``proc.communicate()`` with a deadline; returns ``(stdout, stderr)``."""
    try:
        return proc.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        error = _killed(proc, timeout, "a child process did not end")
        out, err = proc.communicate()
        raise AssertionError(f"{error}\nstdout: {out!r}\nstderr: {err!r}") from None


def run(argv: Sequence[str], *, timeout: float = PROCESS_TIMEOUT,
        **kwargs: Any) -> subprocess.CompletedProcess:
    """``subprocess.run`` whose deadline kills the child's whole tree (``run``'s own
    kills only the child) and fails the test with what it printed so far."""
    check = kwargs.pop("check", False)
    stdin = kwargs.pop("input", None)
    if stdin is not None:
        kwargs["stdin"] = subprocess.PIPE
    if kwargs.pop("capture_output", False):
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    with subprocess.Popen(list(argv), **kwargs) as proc:
        out, err = communicate(proc, stdin, timeout)
    result = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if check:
        result.check_returncode()
    return result


def within(proc: subprocess.Popen, call: Callable[[], Any], timeout: float = 30.0,
           what: str = "a read of a child's output did not return") -> Any:
    """``call()`` (a read of ``proc``'s output that may block), or ``proc`` killed and
    the test failed when it does not return in time. Runs in a helper thread, so
    buffered pipes keep working for later plain reads; killing the child ends it."""
    result: list[Any] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # handed to the test's thread below
            failure.append(exc)

    reader = threading.Thread(target=target, daemon=True)
    reader.start()
    reader.join(timeout)
    if reader.is_alive():
        error = _killed(proc, timeout, what)
        reader.join(10)
        raise error
    if failure:
        raise failure[0]
    return result[0]


def readline(proc: subprocess.Popen, timeout: float = 30.0,
             stream: IO[Any] | None = None) -> Any:
    """One line from ``proc``'s stdout (or ``stream``) within ``timeout`` seconds."""
    source = proc.stdout if stream is None else stream
    assert source is not None, "the child's output is not a pipe"
    return within(proc, source.readline, timeout, "no line came from a child")


def join(thread: threading.Thread, timeout: float = 30.0) -> None:
    """``thread.join()`` with a deadline: a thread still running fails the test."""
    thread.join(timeout)
    if thread.is_alive():
        raise AssertionError(f"thread {thread.name} still running after {timeout:g} s")


def reap(pid: int, timeout: float = PROCESS_TIMEOUT) -> int:
    """``os.waitpid(pid, 0)`` with a deadline, for children made by ``fork``;
    returns the exit code."""
    deadline = Deadline(timeout)
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if deadline.passed:
            kill_tree(pid)
            os.waitpid(pid, 0)  # SIGKILL cannot be ignored: this returns
            raise AssertionError(f"child {pid} still running after {timeout:g} s, killed")
        time.sleep(0.02)
