"""``git forge proc`` as an operator runs it: another process, while the owner runs
and after it is gone."""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
import waiting
from helpers import run_forge, snapshot
from waiting import wait_for

from git_forge.supervisor.handles import mint_handle

OWNER_SCRIPT = str(Path(__file__).parent / "supervisor_owner.py")
OUTPUT_KEYS = ["handle", "state", "output", "start_cursor", "next_cursor", "total_bytes", "gap",
               "normalized", "binary", "exit_code", "reason", "error"]


def py(code: str) -> str:
    return json.dumps([sys.executable, "-c", code])


class Owner:
    """A supervising process in the repository, as a running loop would be."""

    def __init__(self, repo: Path, mode: str, *codes: str) -> None:
        self.root = repo / ".forge" / "proc"
        self.process = subprocess.Popen(
            [sys.executable, OWNER_SCRIPT, str(self.root), str(repo / ".forge" / "events.ndjson"),
             str(repo), mode, *(py(code) for code in codes)],
            stdout=subprocess.PIPE, text=True,
        )
        assert self.process.stdout is not None
        self.started = [json.loads(waiting.readline(self.process)) for _ in codes]
        self.handles = [line["handle"] for line in self.started]

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        waiting.wait_process(self.process)
        for line in self.started:
            try:
                psutil.Process(line["pid"]).kill()
            except psutil.NoSuchProcess:
                pass


@pytest.fixture
def owners():
    made: list[Owner] = []

    def start(repo: Path, mode: str, *codes: str) -> Owner:
        owner = Owner(repo, mode, *codes)
        made.append(owner)
        return owner

    yield start
    for owner in made:
        owner.close()


def forge_ok(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    result = run_forge("proc", *args, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result


def refused(*args: str, cwd: Path, code: int = 2) -> subprocess.CompletedProcess:
    result = run_forge("proc", *args, cwd=cwd)
    assert result.returncode == code, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: process: "), result.stderr
    return result


COLOURED = ("import sys, time\n"
            "sys.stdout.write('\\x1b[31mred\\x1b[0m line one\\n'); sys.stdout.flush()\n"
            "time.sleep(0.3)\n"
            "sys.stdout.write('\\x1b]0;title\\x07line two \\u4e2d\\n')\n")


def test_list_show_output_of_a_finished_process(git_repo: Path, owners) -> None:
    owner = owners(git_repo, "wait", COLOURED)
    assert waiting.readline(owner.process).strip() == "done"
    handle = owner.handles[0]
    listing = json.loads(forge_ok("list", "--json", cwd=git_repo).stdout)
    assert listing == [{
        "handle": handle, "state": "exited", "item_id": "001", "iteration": 1,
        "started_at": listing[0]["started_at"], "finished_at": listing[0]["finished_at"],
        "total_bytes": len("\x1b[31mred\x1b[0m line one\n\x1b]0;title\x07line two 中\n".encode()),
        "exit_code": 0, "reason": "exited", "liveness": None,
    }]
    table = forge_ok("list", cwd=git_repo).stdout
    assert handle in table and "exited" in table and "001" in table
    shown = json.loads(forge_ok("show", handle, "--json", cwd=git_repo).stdout)
    assert shown["handle"] == handle and shown["state"] == "exited"
    assert "exited (exit 0)" in forge_ok("show", handle, cwd=git_repo).stdout

    text = forge_ok("output", handle, cwd=git_repo).stdout
    assert text == "red line one\nline two 中\n"
    result = json.loads(forge_ok("output", handle, "--json", cwd=git_repo).stdout)
    assert list(result) == OUTPUT_KEYS
    assert result["output"] == text and result["normalized"] and not result["binary"]
    assert (result["start_cursor"], result["gap"], result["error"]) == (0, False, None)
    assert result["next_cursor"] == result["total_bytes"] == listing[0]["total_bytes"]
    assert (result["state"], result["exit_code"], result["reason"]) == ("exited", 0, "exited")
    raw = json.loads(forge_ok("output", handle, "--base64", "--json", cwd=git_repo).stdout)
    assert base64.b64decode(raw["output"]).startswith(b"\x1b[31mred")
    assert not raw["normalized"]
    # --limit bounds the raw bytes, and the window never ends inside a sequence
    first = json.loads(forge_ok("output", handle, "--limit", "30", "--json",
                                cwd=git_repo).stdout)
    assert first["next_cursor"] <= 30
    rest = json.loads(forge_ok("output", handle, "--cursor", str(first["next_cursor"]),
                               "--json", cwd=git_repo).stdout)
    assert first["output"] + rest["output"] == text
    end = forge_ok("output", handle, "--cursor", str(result["total_bytes"]), "--json",
                   cwd=git_repo)
    assert json.loads(end.stdout)["output"] == ""


def test_bad_cursors_and_handles_exit_2(git_repo: Path, owners) -> None:
    owner = owners(git_repo, "wait", "print('hi')")
    assert waiting.readline(owner.process).strip() == "done"
    handle = owner.handles[0]
    ahead = refused("output", handle, "--cursor", "99", "--json", cwd=git_repo)
    document = json.loads(ahead.stdout)
    assert list(document) == OUTPUT_KEYS
    assert (document["error"], document["next_cursor"], document["total_bytes"]) == (
        "cursor_ahead", 3, 3)
    negative = refused("output", handle, "--cursor", "-1", "--json", cwd=git_repo)
    assert json.loads(negative.stdout)["error"] == "invalid_arguments"
    plain = refused("output", handle, "--cursor", "-1", cwd=git_repo)
    assert plain.stdout == ""
    before = snapshot(git_repo)
    for bad in ("../../etc/passwd", "..", "/etc/passwd", "", mint_handle()):
        for verb in (("show", bad), ("output", bad), ("wait", bad), ("stop", bad)):
            result = refused(*verb, cwd=git_repo)
            assert result.stdout == "" and "not_found" in result.stderr
        found = json.loads(refused("output", bad, "--json", cwd=git_repo).stdout)
        assert found["error"] == "not_found"
    assert snapshot(git_repo) == before  # no file of any kind was created


def test_an_empty_repository_lists_nothing_and_creates_nothing(git_repo: Path) -> None:
    before = snapshot(git_repo)
    assert forge_ok("list", "--json", cwd=git_repo).stdout.strip() == "[]"
    assert forge_ok("list", cwd=git_repo).stdout == ""
    assert snapshot(git_repo) == before and not (git_repo / ".forge").exists()


def test_follow_wait_and_stop_from_another_terminal(git_repo: Path, owners) -> None:
    talker = "import time\nfor n in range(6):\n    print('tick', n, flush=True); time.sleep(0.1)\n"
    sleeper = "import time\nprint('sleeping', flush=True)\ntime.sleep(60)\n"
    owner = owners(git_repo, "hold", talker, sleeper)
    talking, sleeping = owner.handles
    followed = forge_ok("output", talking, "--follow", cwd=git_repo).stdout
    assert followed == "".join(f"tick {n}\n" for n in range(6))
    waited = forge_ok("wait", talking, cwd=git_repo).stdout
    assert waited.strip() == f"{talking} exited (exit 0)"
    assert json.loads(forge_ok("show", sleeping, "--json", cwd=git_repo).stdout)["state"] == (
        "running")
    timed = refused("wait", sleeping, "--timeout", "0.3", cwd=git_repo, code=1)
    assert "wait_timeout" in timed.stderr
    stopped = json.loads(forge_ok("stop", sleeping, "--grace", "0.2", "--json",
                                  cwd=git_repo).stdout)
    assert stopped["state"] == "terminated"
    assert not (owner.root / f"{sleeping}.stop.json").exists()
    again = forge_ok("stop", sleeping, "--mode", "kill", cwd=git_repo).stdout
    assert again.strip() == f"{sleeping} terminated"  # terminal: nothing sent, same outcome
    events = [json.loads(line) for line in
              (git_repo / ".forge" / "events.ndjson").read_text().splitlines()]
    assert [event["type"] for event in events].count("llm_exited") == 2


def test_the_owner_gone_is_said_plainly(git_repo: Path, owners) -> None:
    owner = owners(git_repo, "hold", "import time\nprint('up', flush=True)\ntime.sleep(60)\n")
    handle = owner.handles[0]
    wait_for(lambda: json.loads(forge_ok("output", handle, "--json", cwd=git_repo).stdout)[
        "output"] == "up\n")
    owner.process.send_signal(signal.SIGKILL)
    waiting.wait_process(owner.process)
    # The watchdog ends the tree of a dead owner; what is left is a manifest to reconcile.
    wait_for(lambda: not psutil.pid_exists(owner.started[0]["pid"])
             or psutil.Process(owner.started[0]["pid"]).status() == psutil.STATUS_ZOMBIE)
    stop = refused("stop", handle, cwd=git_repo, code=1)
    assert "owner_gone" in stop.stderr
    assert not (owner.root / f"{handle}.stop.json").exists()
    assert "owner_gone" in refused("wait", handle, cwd=git_repo, code=1).stderr
    assert "owner_gone" in refused("output", handle, "--follow", cwd=git_repo, code=1).stderr
    # the output that reached the spool is still there
    assert forge_ok("output", handle, cwd=git_repo).stdout == "up\n"


def test_an_orphan_is_reported_and_proc_stop_ends_it(git_repo: Path, owners) -> None:
    code = ("import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('up', flush=True)\ntime.sleep(60)\n")
    owner = owners(git_repo, "hold-unwatched", code)
    handle, pid = owner.handles[0], owner.started[0]["pid"]
    wait_for(lambda: json.loads(forge_ok("output", handle, "--json", cwd=git_repo).stdout)[
        "output"] == "up\n")
    owner.process.send_signal(signal.SIGKILL)
    waiting.wait_process(owner.process)
    listing = json.loads(forge_ok("list", "--json", cwd=git_repo).stdout)
    assert [(row["handle"], row["liveness"]) for row in listing] == [(handle, "orphaned")]
    assert "orphaned" in forge_ok("list", cwd=git_repo).stdout
    assert "owner_gone" in refused("wait", handle, cwd=git_repo, code=1).stderr
    assert psutil.Process(pid).is_running()  # nothing was signalled by reading
    stopped = forge_ok("stop", handle, "--grace", "0.3", cwd=git_repo)
    assert "orphaned" in stopped.stdout and "1 process" in stopped.stdout
    wait_for(lambda: not psutil.pid_exists(pid)
             or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    listing = json.loads(forge_ok("list", "--json", cwd=git_repo).stdout)
    assert [(row["handle"], row["liveness"]) for row in listing] == [(handle, "gone")]


def test_a_corrupt_manifest_is_named_and_left_alone(git_repo: Path, owners) -> None:
    owner = owners(git_repo, "wait", "print('ok')")
    assert waiting.readline(owner.process).strip() == "done"
    corrupt = owner.root / f"{mint_handle()}.manifest.json"
    corrupt.write_bytes(b"{half a manif")
    listing = run_forge("proc", "list", "--json", cwd=git_repo)
    assert listing.returncode == 2
    assert [row["handle"] for row in json.loads(listing.stdout)] == owner.handles
    assert str(corrupt) in listing.stderr and "manifest_corrupt" in listing.stderr
    shown = refused("show", corrupt.name.split(".")[0], cwd=git_repo)
    assert str(corrupt) in shown.stderr
    assert corrupt.read_bytes() == b"{half a manif"
