"""The suite's waits end: a deadline kills what was waited for and fails the test."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import waiting
from helpers import PtySession, git, run_forge

# A child that starts a grandchild, says so, and then never ends on its own.
TREE = ("import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(120)\n")


def spawn_tree() -> tuple[subprocess.Popen, int]:
    child = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
    return child, int(waiting.readline(child))


def test_a_wait_past_its_deadline_kills_the_whole_tree_and_fails() -> None:
    child, grandchild = spawn_tree()
    started = time.monotonic()
    with pytest.raises(AssertionError, match="did not end within 0.3 s, killed"):
        waiting.wait_process(child, timeout=0.3)
    assert time.monotonic() - started < 10
    assert child.returncode is not None
    waiting.wait_for(lambda: waiting.gone(grandchild), 10, what="the grandchild gone")


def test_run_past_its_deadline_kills_the_tree_and_shows_what_it_printed() -> None:
    code = TREE.replace("print(p.pid, flush=True)", "print('pid', p.pid, flush=True)")
    with pytest.raises(AssertionError) as raised:
        waiting.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=2)
    message = str(raised.value)
    assert "killed" in message and "stdout: 'pid " in message
    grandchild = int(message.split("stdout: 'pid ")[1].split("\\n")[0])
    waiting.wait_for(lambda: waiting.gone(grandchild), 10, what="the grandchild gone")


def test_a_line_that_never_comes_fails_and_kills_the_child() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                             stdout=subprocess.PIPE, text=True)
    with pytest.raises(AssertionError, match="no line came from a child within 0.3 s, killed"):
        waiting.readline(child, timeout=0.3)
    assert child.returncode is not None


def test_a_forked_child_is_reaped_or_killed_at_the_deadline() -> None:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        time.sleep(120)
        os._exit(0)
    with pytest.raises(AssertionError, match=f"child {pid} still running after 0.3 s"):
        waiting.reap(pid, 0.3)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # already reaped: nothing is left behind
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os._exit(7)
    assert waiting.reap(pid, 10) == 7


def test_a_terminal_session_left_at_a_prompt_fails_at_its_deadline(git_repo) -> None:
    assert run_forge("init", cwd=git_repo).returncode == 0
    git("add", "-A", cwd=git_repo)
    git("commit", "-qm", "forge", cwd=git_repo)
    (git_repo / "stray.txt").write_text("x\n")
    session = PtySession("reconcile", cwd=git_repo)
    session.expect("unattributed")
    session.wait_reading()  # it asks, and nobody answers
    pid = session.pid
    started = time.monotonic()
    with pytest.raises(AssertionError, match="still running after 1 s, killed"):
        session.finish(timeout=1)
    assert time.monotonic() - started < 10
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # killed and reaped
    assert (git_repo / "stray.txt").read_text() == "x\n"


def test_a_ctrl_c_typed_at_a_prompt_always_reaches_the_child(git_repo) -> None:
    # Typed as soon as the prompt shows, about one Ctrl-C in three was held by Python
    # until a line arrived (the child had printed the prompt, not yet begun to read),
    # and the child waited forever: keys wait for the read.
    assert run_forge("init", cwd=git_repo).returncode == 0
    git("add", "-A", cwd=git_repo)
    git("commit", "-qm", "forge", cwd=git_repo)
    (git_repo / "stray.txt").write_text("x\n")
    for _ in range(6):
        session = PtySession("reconcile", cwd=git_repo)
        session.expect("(default: leave) ")
        session.interrupt()
        assert session.finish(timeout=10) == 130, session.text
    assert (git_repo / "stray.txt").read_text() == "x\n"


def test_a_condition_never_met_fails_naming_it() -> None:
    with pytest.raises(AssertionError, match="the impossible not met within 0.1 s"):
        waiting.wait_for(lambda: False, 0.1, what="the impossible")
