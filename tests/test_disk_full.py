"""A full disk under the state dir: the run ends promptly with one clear error.

The state dir sits on a small private tmpfs (a user and mount namespace made by
``unshare -rm``; the test skips where that is not allowed), so its spool,
manifests, journal and state.json really hit ENOSPC.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import waiting
from helpers import block_buffered_env, forge_argv, git, run_forge

HELPER = str(Path(__file__).with_name("full_disk.py"))
AGENT = r'''
import os, signal, sys, time
marker = sys.argv[1]
sys.stdin.read()
mode = os.environ["FULL_MODE"]
signal.signal(signal.SIGTERM, signal.SIG_IGN)
if mode == "flood":
    for _ in range(400):
        os.write(1, b"x" * 65535 + b"\n")
else:
    with open(os.path.join(".forge", "state", "filler"), "wb") as filler:
        try:
            while True:
                filler.write(b"\0" * 65536)
                filler.flush()
        except OSError:
            pass
    print("the disk is full now", flush=True)
    with open(os.environ["FULL_SIGNAL"], "w") as said:  # outside the full disk
        said.write("full\n")
    if mode == "fill-then-sleep":
        time.sleep(60)
print("FORGE_DONE", flush=True)
'''


def _namespaces_work(tmp: Path) -> bool:
    probe = tmp / "probe"
    probe.mkdir()
    try:
        result = subprocess.run(["unshare", "-rm", "mount", "-t", "tmpfs", "-o", "size=64k",
                                 "tmpfs", str(probe)], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


@pytest.fixture
def full(git_repo: Path, tmp_path: Path):
    if shutil.which("unshare") is None or not _namespaces_work(tmp_path):
        pytest.skip("needs unshare -rm (user and mount namespaces) to make a full disk")
    (git_repo / ".forge.yaml").write_text(
        "loopRunner:\n  stateDir: state\nsupervisor:\n  graceSeconds: 0.5\n")
    assert run_forge("init", cwd=git_repo).returncode == 0
    assert run_forge("backlog", "add", "--title", "Fill it", cwd=git_repo).returncode == 0
    git("add", "-A", cwd=git_repo)
    git("commit", "-qm", "backlog", cwd=git_repo)
    (git_repo / ".forge" / "state").mkdir(exist_ok=True)
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    return git_repo, agent, tmp_path


def _start(full, mode: str, size: str = "2m") -> tuple[subprocess.Popen, int, str, Path]:
    repo, agent, tmp = full
    marker = f"disk-full-marker-{os.getpid()}-{tmp.name}"
    argv = [*forge_argv(), "loop", "run", "--agent", f"{sys.executable} {agent} {marker}",
            "--iterations", "1"]
    copy = tmp / "state-after"
    helper = subprocess.Popen(
        ["unshare", "-rm", sys.executable, HELPER, str(repo / ".forge" / "state"), size,
         str(tmp / "stop-now"), str(copy), "--", *argv],
        cwd=repo, env={**os.environ, "FULL_MODE": mode, "FULL_SIGNAL": str(tmp / "full")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    loop_pid = int(waiting.readline(helper, 60))
    return helper, loop_pid, marker, copy


def _finish(helper: subprocess.Popen, marker: str, copy: Path) -> tuple[int, str]:
    _, stderr = waiting.communicate(helper, timeout=60)
    waiting.wait_for(lambda: not _marked(marker), 10, what="the agent tree gone")
    for line in (copy / "events.ndjson").read_text().splitlines():
        json.loads(line)  # every line written before the disk filled is whole
    json.loads((copy / "state.json").read_text())
    return helper.returncode, stderr


def _marked(marker: str) -> list[int]:
    import psutil

    return [p.pid for p in psutil.process_iter(["cmdline"])
            if marker in (p.info["cmdline"] or [])]


@pytest.mark.parametrize("mode", ["flood", "fill-then-done"])
def test_a_full_disk_ends_the_run_with_one_clear_error(full, mode: str) -> None:
    helper, _, marker, copy = _start(full, mode)
    code, stderr = _finish(helper, marker, copy)
    assert code == 1, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "Error: no space left on device while writing "), stderr
    repo = full[0]
    assert json.loads((repo / ".forge" / "backlog.json").read_text())["items"][0][
        "status"] in ("in_progress", "pending")  # never "done" without a commit
    assert git("log", "--format=%s", cwd=repo).splitlines()[0] == "backlog"


@pytest.mark.parametrize("how", ["loop stop", "SIGTERM"])
def test_a_stop_still_works_on_a_full_disk(full, how: str) -> None:
    repo, _, tmp = full
    helper, loop_pid, marker, copy = _start(full, "fill-then-sleep")
    waiting.wait_for(lambda: (tmp / "full").exists(), 30, what="the disk full")
    if how == "SIGTERM":
        try:
            os.kill(loop_pid, signal.SIGTERM)
        except ProcessLookupError:  # it met the full disk itself first: the same end
            pass
    else:
        (tmp / "stop-now").write_text("stop\n")
    code, stderr = _finish(helper, marker, copy)
    # Stopped promptly; the stop's own bookkeeping (state.json) is what the full disk
    # refused, and the operator is told so in one line.
    assert code == 1, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "Error: no space left on device while writing "), stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
@pytest.mark.parametrize("command", [("--version",), ("status",), ("backlog", "show", "001"),
                                     ("backlog", "list", "--status", "pending"),
                                     ("backlog", "list", "--json"), ("config", "--json")])
def test_an_answer_that_cannot_be_written_is_one_clear_error(tmp_path: Path,
                                                             command: tuple[str, ...]) -> None:
    # stdout on a full disk: one Error line and exit 2, not the interpreter's
    # "Exception ignored" traceback at exit (rc 120). stdout block-buffered, as a
    # user's is when it is a file.
    from builders import backlog_repo

    repo = backlog_repo(tmp_path / "repo", "One", "Two")
    env = block_buffered_env()
    with open("/dev/full", "w") as device:
        result = waiting.run([*forge_argv(), *command], cwd=repo, stdout=device,
                             stderr=subprocess.PIPE, text=True, env=env)
    assert (result.returncode, result.stderr) == (
        2, "Error: cannot write the output: no space left on device\n")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_version_that_cannot_be_written_is_one_clear_error_buffered_or_not(
        tmp_path: Path) -> None:
    # Unbuffered, the write itself fails (not the flush after it); a reader that
    # went away before reading is no error.
    for env in (block_buffered_env(), {**block_buffered_env(), "PYTHONUNBUFFERED": "1"}):
        with open("/dev/full", "w") as device:
            result = waiting.run([*forge_argv(), "--version"], cwd=tmp_path, stdout=device,
                                 stderr=subprocess.PIPE, text=True, env=env)
        assert (result.returncode, result.stderr) == (
            2, "Error: cannot write the output: no space left on device\n")
        reader, writer = os.pipe()
        os.close(reader)
        try:
            result = waiting.run([*forge_argv(), "--version"], cwd=tmp_path, stdout=writer,
                                 stderr=subprocess.PIPE, text=True, env=env)
        finally:
            os.close(writer)
        assert (result.returncode, result.stderr) == (0, "")
