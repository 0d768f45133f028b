"""``git forge proc`` as an operator runs it: another process, while the owner runs
and after it is gone."""

from __future__ import annotations

import base64
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import waiting
from helpers import forge_argv, run_forge, snapshot
from waiting import gone, wait_for

from git_forge.supervisor.handles import mint_handle
from git_forge.supervisor.lifecycle import ERROR_CODES

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
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    # plain words for people: the codes are for --json
    assert "process:" not in lines[0], result.stderr
    assert not [code for code in ERROR_CODES if code in lines[0]], result.stderr
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
        "handle": handle, "state": "exited", "item_id": "001", "iteration": 1, "gate": None,
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
            assert result.stdout == "" and (
                "no such process" in result.stderr or "no process or item matches" in
                result.stderr), result.stderr
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
    assert f"timed out waiting: {sleeping} is still running" in timed.stderr
    stopped = json.loads(forge_ok("stop", sleeping, "--grace", "0.2", "--json",
                                  cwd=git_repo).stdout)
    assert stopped["state"] == "terminated"
    assert not (owner.root / f"{sleeping}.stop.json").exists()
    again = forge_ok("stop", sleeping, "--mode", "kill", cwd=git_repo).stdout
    assert again.strip() == f"{sleeping} terminated"  # terminal: nothing sent, same outcome
    events = [json.loads(line) for line in
              (git_repo / ".forge" / "events.ndjson").read_text().splitlines()]
    assert [event["type"] for event in events].count("llm_exited") == 2


def test_a_reader_follows_a_live_process_and_its_waits_have_deadlines(
        git_repo: Path, owners) -> None:
    from git_forge.supervisor.follow import OutputReader
    from git_forge.supervisor.lifecycle import ProcessError
    from git_forge.supervisor.view import ProcView

    talker = "import time\nfor n in range(6):\n    print('tick', n, flush=True); time.sleep(0.1)\n"
    sleeper = "import time\nprint('sleeping', flush=True)\ntime.sleep(60)\n"
    owner = owners(git_repo, "hold", talker, sleeper)
    talking, sleeping = owner.handles
    view = ProcView(owner.root)
    reader = OutputReader(view, talking, 0, window=4)
    reads = list(reader.follow(poll=0.02, timeout=30))
    assert "".join(read.rendered.output for read in reads) == "".join(
        f"tick {n}\n" for n in range(6))
    assert all(read.rendered.output for read in reads)  # only windows that carry output
    finished = view.manifest(talking)
    assert finished.terminal and reader.cursor == finished.cursors.total_bytes == 42
    assert reader.failure is None
    # a live process that falls silent: the follower gives up at its deadline
    wait_for(lambda: view.total_bytes(view.manifest(sleeping)) == len("sleeping\n"))
    silent = OutputReader(view, sleeping, len("sleeping\n"), window=64)
    with pytest.raises(ProcessError) as timed_out:
        next(silent.follow(poll=0.02, timeout=0.3))
    assert timed_out.value.code == "wait_timeout" and timed_out.value.handle == sleeping
    assert silent.failure is None and silent.cursor == len("sleeping\n")
    # a refused read is the reader's failure and leaves its cursor where the read began
    ahead = OutputReader(view, talking, 1000, window=4)
    with pytest.raises(ProcessError) as refused_read:
        ahead.read()
    assert refused_read.value.code == "cursor_ahead" and refused_read.value.next_cursor == 42
    assert ahead.failure is refused_read.value and ahead.cursor == 1000


def test_the_owner_gone_is_said_plainly(git_repo: Path, owners) -> None:
    owner = owners(git_repo, "hold", "import time\nprint('up', flush=True)\ntime.sleep(60)\n")
    handle = owner.handles[0]
    wait_for(lambda: json.loads(forge_ok("output", handle, "--json", cwd=git_repo).stdout)[
        "output"] == "up\n")
    owner.process.send_signal(signal.SIGKILL)
    waiting.wait_process(owner.process)
    # The watchdog ends the tree of a dead owner; what is left is a manifest to reconcile.
    wait_for(lambda: gone(owner.started[0]["pid"]))
    stop = refused("stop", handle, cwd=git_repo, code=1)
    assert "no running loop owns it" in stop.stderr
    assert not (owner.root / f"{handle}.stop.json").exists()
    assert f"no running loop owns {handle}" in refused("wait", handle, cwd=git_repo,
                                                       code=1).stderr
    assert "no running loop owns it" in refused("output", handle, "--follow", cwd=git_repo,
                                                code=1).stderr
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
    assert "no running loop owns" in refused("wait", handle, cwd=git_repo, code=1).stderr
    assert psutil.Process(pid).is_running()  # nothing was signalled by reading
    stopped = forge_ok("stop", handle, "--grace", "0.3", cwd=git_repo)
    assert "orphaned" in stopped.stdout and "1 process" in stopped.stdout
    wait_for(lambda: gone(pid))
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
    assert str(corrupt) in listing.stderr and "is corrupt" in listing.stderr
    assert "manifest_corrupt" not in listing.stderr
    shown = refused("show", corrupt.name.split(".")[0], cwd=git_repo)
    assert str(corrupt) in shown.stderr
    assert corrupt.read_bytes() == b"{half a manif"


# --- all of the output, and where a bounded read goes on -----------------------------------------

#: A character straddles byte 32768 (the old window) and byte 196608 (a streaming read).
WIDE = b"x" + "\u4e2d".encode() * 80000 + b"\n\x1b[31mred\x1b[0m tail\n"
WIDE_TEXT = "x" + "\u4e2d" * 80000 + "\nred tail\n"
WRITE_WIDE = ("import sys\nsys.stdout.buffer.write(b'x' + '\\u4e2d'.encode() * 80000"
              " + b'\\n\\x1b[31mred\\x1b[0m tail\\n')\n")
NOTE = "note: more output follows: git forge "


def test_output_prints_everything_retained_and_a_limit_says_where_to_go_on(
        git_repo: Path, owners) -> None:
    owner = owners(git_repo, "wait", WRITE_WIDE)
    assert waiting.readline(owner.process).strip() == "done"
    handle = owner.handles[0]
    whole = forge_ok("output", handle, cwd=git_repo)
    assert whole.stdout == WIDE_TEXT and whole.stderr == ""
    raw = forge_ok("output", handle, "--base64", cwd=git_repo).stdout
    assert len(raw.splitlines()) == 2  # one line per bounded read
    assert base64.b64decode("".join(raw.split())) == WIDE

    # --limit: a window, and on stderr the exact command that continues it
    pieces, args = [], ["proc", "output", handle, "--limit", "100000"]
    for _ in range(5):
        result = run_forge(*args, cwd=git_repo)
        assert result.returncode == 0, result.stderr
        pieces.append(result.stdout)
        if not result.stderr:
            break
        assert result.stderr.startswith(NOTE) and result.stderr.count("\n") == 1
        args = shlex.split(result.stderr[len(NOTE):])
        cursor = int(args[args.index("--cursor") + 1])
        assert cursor <= 100000 * len(pieces) and cursor % 3 == 1  # never inside a character
    assert len(pieces) == 3 and "".join(pieces) == WIDE_TEXT

    # --json keeps one bounded document; its next_cursor says where to go on
    document = json.loads(forge_ok("output", handle, "--json", cwd=git_repo).stdout)
    assert document["total_bytes"] == len(WIDE)
    window = document["next_cursor"]
    assert 32768 - 3 < window <= 32768 and (window - 1) % 3 == 0
    assert document["output"] == "x" + "\u4e2d" * ((window - 1) // 3)


def _max_rss_kib(argv: list[str], cwd: Path) -> int:
    """Peak resident memory of a child whose output is thrown away."""
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = waiting.Deadline(waiting.PROCESS_TIMEOUT)
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            break
        if deadline.passed:
            waiting.kill_tree(proc.pid)
            raise AssertionError(f"{argv} did not end")
        time.sleep(0.02)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    return usage.ru_maxrss


def test_all_of_a_large_output_is_printed_in_bounded_memory(git_repo: Path, owners) -> None:
    size = 16 * 1024 * 1024
    owner = owners(git_repo, "wait",
                   f"import sys\nsys.stdout.buffer.write(b'0123456789abcde\\n' * {size // 16})\n")
    assert waiting.readline(owner.process).strip() == "done"
    handle = owner.handles[0]
    argv = [*forge_argv(), "proc", "output", handle]
    small = _max_rss_kib([*argv, "--limit", "16"], git_repo)
    everything = _max_rss_kib(argv, git_repo)
    # Holding the output once would cost 16 MiB, its text as much again.
    assert everything - small < 6 * 1024, (small, everything)


# --- handles as people type them -----------------------------------------------------------------


def _twin(root: Path, handle: str) -> str:
    """A second manifest whose handle shares the first four characters of ``handle``
    (written through the store, as a supervisor writes one)."""
    import secrets

    from git_forge.supervisor.manifest import Manifest, ManifestStore

    raw = base64.urlsafe_b64decode(handle + "==")[:3] + secrets.token_bytes(13)
    twin = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    store = ManifestStore(root)
    store.save(Manifest.from_dict({**store.load(handle).to_dict(), "handle": twin}))
    return twin


def test_handles_by_prefix_or_item_and_a_list_with_exit_codes(git_repo: Path, owners) -> None:
    owner = owners(git_repo, "wait", "print('one')\nraise SystemExit(1)", "print('two')")
    assert waiting.readline(owner.process).strip() == "done"
    first, latest = owner.handles
    table = forge_ok("list", cwd=git_repo).stdout.splitlines()
    assert table[0].split() == ["HANDLE", "STATE", "ITEM", "STARTED", "FINISHED", "BYTES"]
    assert [row.split()[:4] for row in table[1:]] == [[first, "exited", "1", "001"],
                                                      [latest, "exited", "0", "001"]]
    # an item id is that item's latest process; a prefix of 4+ characters is its handle
    assert json.loads(forge_ok("show", "001", "--json", cwd=git_repo).stdout)["handle"] == latest
    assert forge_ok("output", first[:6], cwd=git_repo).stdout == "one\n"
    assert forge_ok("wait", first[:4], "001", cwd=git_repo).stdout.splitlines() == [
        f"{first} exited (exit 1)", f"{latest} exited (exit 0)"]
    assert forge_ok("stop", latest[:5], cwd=git_repo).stdout.strip() == f"{latest} exited (exit 0)"

    twin = _twin(owner.root, first)
    before = snapshot(git_repo)
    ambiguous = refused("show", first[:4], cwd=git_repo)
    assert first in ambiguous.stderr and twin in ambiguous.stderr
    assert "is ambiguous" in ambiguous.stderr
    assert json.loads(refused("output", first[:4], "--json", cwd=git_repo).stdout)[
        "error"] == "invalid_arguments"
    assert forge_ok("show", first[:8], cwd=git_repo).stdout.startswith(f"handle:   {first}")
    short = refused("output", first[:3], cwd=git_repo)
    assert "at least 4 characters" in short.stderr
    unknown = refused("wait", "zzzz-no-such", cwd=git_repo)
    assert "no process or item matches 'zzzz-no-such'" in unknown.stderr
    assert snapshot(git_repo) == before  # resolving creates nothing


def test_an_item_is_named_by_its_number_as_every_command_takes_it(git_repo: Path,
                                                                  owners) -> None:
    owner = owners(git_repo, "wait", "print('one')", "print('two')")
    assert waiting.readline(owner.process).strip() == "done"
    latest = owner.handles[-1]
    # 1 is item 001 (as backlog show 1 and recover --answer 1=… take it): its latest process
    assert json.loads(forge_ok("show", "1", "--json", cwd=git_repo).stdout)["handle"] == latest
    assert forge_ok("output", "1", cwd=git_repo).stdout == "two\n"
    assert forge_ok("wait", "01", cwd=git_repo).stdout.startswith(f"{latest} exited")
    unknown = refused("output", "2", cwd=git_repo)
    assert "no process or item matches '2'" in unknown.stderr


def test_a_failed_start_is_said_in_words_and_kept_as_a_code_in_json(
        templates, tmp_path: Path) -> None:
    from builders import one_item_backlog

    root = templates.copy("one-item", one_item_backlog, tmp_path / "repo")
    agent = tmp_path / "not-a-program"
    agent.write_bytes(b"\x00\x01 not a script, not a binary")
    agent.chmod(0o755)
    result = run_forge("loop", "run", "--agent", str(agent), cwd=root)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        f"Error: could not start the agent: Exec format error: {agent}")
    status = run_forge("status", cwd=root).stdout
    assert "could not start the agent" in status and "spawn_failed" not in status
    assert "spawn_failed" in json.loads(run_forge("status", "--json", cwd=root).stdout)["error"]
    assert "(the agent could not be started)" in forge_ok("show", "001", cwd=root).stdout
