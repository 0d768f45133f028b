"""The supervisor with real child processes: start, drain, stop, shutdown, restore."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest
import waiting
from waiting import gone, wait_for

from git_forge.loop.journal import Journal
from git_forge.loop.process_events import ProcessEventPublisher
from git_forge.supervisor import liveness
from git_forge.supervisor.config import SupervisorConfig
from git_forge.supervisor.entry import Outcome
from git_forge.supervisor.handles import mint_handle
from git_forge.supervisor.lifecycle import ProcessError
from git_forge.supervisor.manifest import Manifest, ManifestStore
from git_forge.supervisor.paths import ProcPaths
from git_forge.supervisor.process import PreparedProcess
from git_forge.supervisor.spool import SpoolReader
from git_forge.supervisor.supervisor import Supervisor

OWNER_SCRIPT = str(Path(__file__).parent / "supervisor_owner.py")
#: Seconds a supervised test process may take to end; the fixture's shutdown kills it.
WAIT = 30.0


def py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


class Recorder:
    """A lifecycle publisher and completion notifier that remembers every call."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[str, str, str]] = []
        self.notices: list[tuple[str, str]] = []

    def publish(self, kind: str, event_id: str, manifest: Manifest) -> None:
        with self.lock:
            self.events.append((kind, event_id, manifest.handle))

    def notify(self, command_id: str, manifest: Manifest) -> None:
        with self.lock:
            self.notices.append((command_id, manifest.handle))


class CountingStore(ManifestStore):
    """A real store that also counts the saves per state."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.saves: Counter[str] = Counter()

    def save(self, manifest: Manifest) -> None:
        super().save(manifest)
        self.saves[manifest.state] += 1


FAST = {"grace_seconds": 0.3, "drain_timeout_seconds": 0.3, "flush_interval_seconds": 0.1,
        "stop_poll_seconds": 0.1}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "state" / "proc"


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def make(root: Path, recorder: Recorder):
    made: list[Supervisor] = []

    def build(store: ManifestStore | None = None, **config) -> Supervisor:
        supervisor = Supervisor(
            SupervisorConfig(**(FAST | config)), store or ManifestStore(root),
            lifecycle=recorder, notifications=recorder,
        )
        made.append(supervisor)
        return supervisor

    yield build
    for supervisor in made:
        try:
            supervisor.shutdown()
        except ProcessError:
            pass


def run(supervisor: Supervisor, argv: list[str], **options) -> str:
    return supervisor.start({"run_id": "run-1"}, {"item_id": "001", "iteration": 1},
                            PreparedProcess(argv, cwd=options.pop("cwd", "/"), **options))


def output(supervisor: Supervisor, handle: str) -> bytes:
    return supervisor.read(handle, 0, 1 << 30).data


# -- start, drain, natural exit -------------------------------------------------------
def test_a_process_runs_to_its_exit(make, root: Path, recorder: Recorder) -> None:
    supervisor = make()
    # whole lines in one write each: the combined order interleaves writes, not lines
    handle = run(supervisor, py("import os, sys; os.write(1, b'out\\n'); "
                                "os.write(2, b'err\\n'); sys.exit(3)"))
    manifest = supervisor.wait(handle, timeout=WAIT)
    assert manifest.state == "exited" and manifest.result.exit_code == 3
    assert manifest.result.reason == "exited"
    assert sorted(output(supervisor, handle).splitlines()) == [b"err", b"out"]
    assert manifest.cursors.total_bytes == 8 and manifest.completion_published == 1
    assert ManifestStore(root).load(handle) == manifest
    assert recorder.events == [("started", manifest.events.started, handle),
                               ("completed", manifest.events.completed, handle)]
    assert recorder.notices == [(manifest.events.command_id, handle)]
    assert manifest.started_at and manifest.finished_at >= manifest.started_at
    for path in [root, *root.rglob("*")]:  # output may hold secrets: owner-only, everywhere
        assert stat.S_IMODE(path.stat().st_mode) == (0o700 if path.is_dir() else 0o600), path


def test_wait_any_hears_of_whichever_process_ends_first(make) -> None:
    """The first process to end wakes the waiter, whichever handle it is — not the
    one a caller happens to look at first."""
    supervisor = make()
    slow = run(supervisor, py("import time; time.sleep(30)"))
    quick = run(supervisor, py("import time; time.sleep(0.3)"))
    assert supervisor.wait_any([slow, quick], 0) == []
    assert supervisor.wait_any([slow, quick], WAIT) == [quick]
    assert supervisor.wait(quick, timeout=0).state == "exited"
    supervisor.stop(slow, "kill")
    assert supervisor.wait_any([slow, quick], WAIT) == [slow, quick]
    stranger = mint_handle()  # not run here: settled, and ``wait`` answers for it
    assert supervisor.wait_any([stranger], 0) == [stranger]


def test_a_wake_ends_the_wait_under_way_or_else_the_next(make) -> None:
    """A caller watching its processes and another thread's work in one wait (a
    parallel run's merges) hears of that work as it is done, not at the wait's end."""
    supervisor = make()
    slow = run(supervisor, py("import time; time.sleep(30)"))
    waker = threading.Timer(0.2, supervisor.wake)
    waker.start()
    started = time.monotonic()
    assert supervisor.wait_any([slow], WAIT) == []
    assert time.monotonic() - started < WAIT / 2
    waker.join()
    supervisor.wake()  # none under way: the next one returns at once, and only that one
    started = time.monotonic()
    assert supervisor.wait_any([slow], WAIT) == []
    assert time.monotonic() - started < WAIT / 2
    assert supervisor.wait_any([slow], 0.3) == []
    assert time.monotonic() - started >= 0.3
    supervisor.stop(slow, "kill")


def test_wait_ended_answers_before_the_end_is_recorded(make, root: Path) -> None:
    """A caller learns that a tree has ended — what it did to the files around it is
    final — while the supervisor is still making its end durable (here held up at
    its terminal manifest), and ``wait`` answers only once that is done."""
    recording = threading.Event()
    release = threading.Event()

    class HeldAtTheEnd(ManifestStore):
        def save(self, manifest: Manifest) -> None:
            if manifest.terminal and not manifest.completion_published:
                recording.set()
                assert release.wait(WAIT)
            super().save(manifest)

    supervisor = make(HeldAtTheEnd(root))
    slow = run(supervisor, py("import time; time.sleep(30)"))
    assert not supervisor.wait_ended(slow, 0.05)
    quick = run(supervisor, py("print('made')"))
    try:
        assert supervisor.wait_ended(quick, WAIT)
        assert recording.wait(WAIT)
        with pytest.raises(ProcessError, match="still"):
            supervisor.wait(quick, timeout=0)  # not recorded yet
    finally:
        release.set()
    manifest = supervisor.wait(quick, timeout=WAIT)
    assert manifest.state == "exited" and output(supervisor, quick) == b"made\n"
    assert supervisor.wait_ended(quick, 0) and not supervisor.wait_ended(slow, 0)
    supervisor.stop(slow, "kill")
    assert supervisor.wait_ended(slow, WAIT)
    assert supervisor.wait_ended(mint_handle(), 0)  # not run here: nothing to wait for


SPLIT_SIGNAL_AGENT = """
import os, sys, time
os.write(1, b"working\\nFORGE_")         # half of the signal line
time.sleep(0.05)
os.write(2, b"a warning in the middle\\n")  # stderr while the line is open
time.sleep(0.05)
os.write(1, b"DONE\\n")
os.write(2, (b"e" * 99 + b"\\n") * 10486)    # 1 MiB of stderr lines after it
"""


def test_lines_stay_whole_in_the_combined_record(make) -> None:
    supervisor = make()
    seen: list[tuple[str, bytes]] = []
    handle = supervisor.start({"run_id": "run-1"}, None, PreparedProcess(
        py(SPLIT_SIGNAL_AGENT), cwd="/", observe=lambda stream, data: seen.append((stream,
                                                                                   data))))
    manifest = supervisor.wait(handle, timeout=WAIT)
    assert manifest.state == "exited"
    record = output(supervisor, handle)
    assert len(record) == manifest.cursors.total_bytes
    # Every line is whole, whichever drain read first: the signal line, the line
    # written while it was half-written, every line of the block after it.
    lines = record.split(b"\n")
    assert lines.pop() == b""
    assert set(lines) == {b"working", b"a warning in the middle", b"FORGE_DONE", b"e" * 99}
    assert lines.count(b"FORGE_DONE") == 1 and lines.count(b"e" * 99) == 10486
    assert lines.index(b"working") < lines.index(b"FORGE_DONE")
    # The signal is read from stdout's own end, whatever stderr did around it.
    assert supervisor.tail(handle, "stdout") == b"working\nFORGE_DONE\n"
    assert supervisor.tail(handle, "stderr").endswith(b"\n" + b"e" * 99 + b"\n")
    # The observer saw the bytes as they were read: the open line before its end.
    stdout_reads = [data for stream, data in seen if stream == "stdout"]
    assert stdout_reads[0] == b"working\nFORGE_" and b"".join(stdout_reads).endswith(b"DONE\n")


def test_a_line_longer_than_the_hold_goes_in_pieces_and_an_open_end_at_exit(make) -> None:
    from git_forge.supervisor.entry import LINE_HOLD_BYTES

    agent = (f"import os, time\n"
             f"os.write(1, b'x' * {LINE_HOLD_BYTES + 10})\n"  # no newline: too long to hold
             f"time.sleep(0.3)\n"
             f"os.write(2, b'between\\n')\n"
             f"time.sleep(0.05)\n"
             f"os.write(1, b'tail without newline')\n")
    supervisor = make()
    handle = run(supervisor, py(agent))
    assert supervisor.wait(handle, timeout=WAIT).state == "exited"
    record = output(supervisor, handle)
    # stderr's line lands whole, wherever the drains' timing puts it; stdout's bytes
    # are all there in order, its open last line appended when the stream ended.
    assert b"between\n" in record
    assert record.replace(b"between\n", b"", 1) == (b"x" * (LINE_HOLD_BYTES + 10)
                                                     + b"tail without newline")


def test_a_quick_agent_s_exit_is_not_held_for_the_linger(make) -> None:
    # The watchdog lingers drainTimeoutSeconds for a tree whose lock is still held when
    # its agent exits; the supervisor's own copy of the lock must never count as one.
    supervisor = make(drain_timeout_seconds=5.0)
    for _ in range(12):
        started = time.monotonic()
        handle = run(supervisor, ["true"])
        assert supervisor.wait(handle, timeout=WAIT).state == "exited"
        assert time.monotonic() - started < 4.0


def test_the_manifest_is_durable_before_the_process_runs(make, root: Path) -> None:
    supervisor = make()
    probe = ("import json, pathlib, sys; "
             f"found = [json.loads(p.read_text())['state'] for p in "
             f"pathlib.Path({str(root)!r}).glob('*.manifest.json')]; print(found)")
    handle = run(supervisor, py(probe))
    supervisor.wait(handle, timeout=WAIT)
    seen = output(supervisor, handle).decode()
    assert seen.strip() in ("['starting']", "['running']")


def test_stdin_reaches_the_process(make) -> None:
    supervisor = make()
    prompt = ("a long prompt " * 20000).encode()  # larger than a pipe buffer
    handle = run(supervisor, py("import sys; data = sys.stdin.buffer.read(); "
                                "print(len(data), data[:6].decode())"), stdin=prompt)
    supervisor.wait(handle, timeout=WAIT)
    assert output(supervisor, handle) == f"{len(prompt)} a long\n".encode()


@pytest.mark.parametrize("options", [
    {"argv": ["/nonexistent/agent"]},
    {"argv": py("pass"), "cwd": "/nonexistent/directory"},
    {"argv": py("pass"), "env": {"BROKEN": 1}},
])
def test_a_spawn_failure_leaves_a_failed_manifest_and_releases(make, root: Path,
                                                               recorder: Recorder,
                                                               options: dict) -> None:
    supervisor = make(max_processes=1)
    options = dict(options)
    with pytest.raises(ProcessError) as raised:
        run(supervisor, options.pop("argv"), **options)
    assert raised.value.code == "spawn_failed" and raised.value.handle
    manifest = ManifestStore(root).load(raised.value.handle)
    assert manifest.state == "failed" and manifest.result.reason == "failed"
    assert manifest.completion_published == 1
    assert [kind for kind, _, _ in recorder.events] == ["completed"]
    assert supervisor.snapshot(raised.value.handle) == manifest
    handle = run(supervisor, py("pass"))  # the only slot was released
    assert supervisor.wait(handle, timeout=WAIT).state == "exited"


def test_memory_and_spool_budgets_are_reserved(make, root: Path) -> None:
    window = 64 * 1024 + 16 * 1024 + 1024 * 1024
    supervisor = make(max_spool_bytes=64 * 1024, spool_segment_bytes=16 * 1024,
                      memory_budget_bytes=window + 1)
    first = run(supervisor, py("import time; time.sleep(30)"))
    with pytest.raises(ProcessError, match="process_quota_exceeded"):
        run(supervisor, py("pass"))
    supervisor.stop(first, "kill")
    assert supervisor.wait(run(supervisor, py("pass")), timeout=WAIT).state == "exited"


def test_quota_and_single_use(make, root: Path) -> None:
    supervisor = make(max_processes=1)
    prepared = PreparedProcess(py("import time; time.sleep(30)"), cwd="/")
    handle = supervisor.start({"run_id": "r"}, None, prepared)
    with pytest.raises(ProcessError) as raised:
        supervisor.start({"run_id": "r"}, None, prepared)
    assert raised.value.code == "invalid_arguments"
    fresh = PreparedProcess(py("pass"), cwd="/")
    with pytest.raises(ProcessError) as raised:
        supervisor.start({"run_id": "r"}, None, fresh)
    assert raised.value.code == "process_quota_exceeded"
    assert not fresh.used  # a refused start does not consume the prepared process
    assert ManifestStore(root).scan() == [handle]
    supervisor.stop(handle, "kill")
    assert supervisor.wait(supervisor.start({"run_id": "r"}, None, fresh),
                           timeout=WAIT).state == "exited"


def test_a_workspace_lease_is_released_once_before_notification(make) -> None:
    order: list[str] = []

    class Lease:
        def release(self) -> None:
            order.append("lease")

    class Notifier:
        def notify(self, command_id: str, manifest: Manifest) -> None:
            order.append("notify")

    supervisor = make()
    supervisor.notifications = Notifier()
    handle = supervisor.start({"run_id": "r"}, None,
                              PreparedProcess(py("pass"), cwd="/", lease=Lease()))
    supervisor.wait(handle, timeout=WAIT)
    assert order == ["lease", "notify"]


# -- deadlines and stop modes --------------------------------------------------------
SLEEPER = "import time; print('up', flush=True); time.sleep(30)"
IGNORES_TERM = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                "print('up', flush=True); time.sleep(30)")
IGNORES_INT = ("import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); "
               "print('up', flush=True); time.sleep(30)")


def started(supervisor: Supervisor, code: str, **options) -> str:
    handle = run(supervisor, py(code), **options)
    wait_for(lambda: supervisor.read(handle, 0, 10).data == b"up\n", timeout=10)
    return handle


@pytest.mark.parametrize("code", [SLEEPER, IGNORES_TERM])
def test_a_deadline_ends_in_timed_out(make, code: str) -> None:
    supervisor = make()
    handle = run(supervisor, py(code), timeout=0.5)
    manifest = supervisor.wait(handle, timeout=WAIT)
    assert manifest.state == "timed_out" and manifest.result.reason == "timed-out"
    assert manifest.deadline is not None


def test_stop_modes(make) -> None:
    supervisor = make()
    assert supervisor.stop(started(supervisor, SLEEPER), "interrupt").state == "interrupted"
    assert supervisor.stop(started(supervisor, SLEEPER), "terminate").state == "terminated"
    assert supervisor.stop(started(supervisor, IGNORES_TERM), "terminate", 0.2).state == "killed"
    assert supervisor.stop(started(supervisor, SLEEPER), "kill").state == "killed"


def test_interrupt_never_escalates(make) -> None:
    supervisor = make()
    handle = started(supervisor, IGNORES_INT)
    assert supervisor.stop(handle, "interrupt", 0.3).state == "running"
    assert psutil.Process(supervisor.entry(handle).pid).is_running()
    assert supervisor.stop(handle, "terminate").state == "terminated"


def test_stopping_a_terminal_process_sends_nothing(make, root: Path) -> None:
    supervisor = make()
    handle = run(supervisor, py("pass"))
    finished = supervisor.wait(handle, timeout=WAIT)
    path = root / f"{handle}.manifest.json"
    before = path.read_bytes()
    for mode in ("interrupt", "terminate", "kill"):
        assert supervisor.stop(handle, mode) == finished
    assert path.read_bytes() == before
    with pytest.raises(ProcessError, match="invalid_arguments"):
        supervisor.stop(handle, "explode")


TREE = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
inside = subprocess.Popen([sys.executable, "-c", stubborn])
escaped = subprocess.Popen([sys.executable, "-c", stubborn], start_new_session=True)
print(inside.pid, escaped.pid, flush=True)
time.sleep(60)
"""


def tree_pids(supervisor: Supervisor, handle: str) -> list[int]:
    wait_for(lambda: output(supervisor, handle).endswith(b"\n"), timeout=10)
    return [supervisor.entry(handle).pid, *map(int, output(supervisor, handle).split())]


def test_shutdown_leaves_no_process_of_the_tree_alive(make) -> None:
    supervisor = make(grace_seconds=0.3)
    handle = run(supervisor, py(TREE))
    pids = tree_pids(supervisor, handle)
    supervisor.shutdown()
    assert supervisor.snapshot(handle).state == "killed"
    for pid in pids:
        wait_for(lambda pid=pid: gone(pid), timeout=5)
    assert output(supervisor, handle)  # output stays readable after shutdown


def test_stop_reaches_a_descendant_that_left_the_group(make) -> None:
    supervisor = make()
    handle = run(supervisor, py(TREE))
    pids = tree_pids(supervisor, handle)
    assert supervisor.stop(handle, "terminate", 0.2).state == "killed"
    for pid in pids:
        wait_for(lambda pid=pid: gone(pid), timeout=5)


def test_a_grandchild_holding_the_pipe_does_not_hang_the_entry(make) -> None:
    supervisor = make(drain_timeout_seconds=0.3)
    code = ("import subprocess, sys; "
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
            "print(p.pid, flush=True)")
    handle = run(supervisor, py(code))
    started_at = time.monotonic()
    manifest = supervisor.wait(handle, timeout=10)
    assert time.monotonic() - started_at < 5
    assert manifest.state == "exited" and manifest.result.exit_code == 0
    grandchild = int(output(supervisor, handle))
    wait_for(lambda: gone(grandchild), timeout=5)  # no orphan outlives its entry


# -- shutdown ------------------------------------------------------------------------
def test_shutdown_is_shared_and_idempotent(make) -> None:
    supervisor = make()
    handles = [started(supervisor, code) for code in (SLEEPER, IGNORES_TERM, SLEEPER)]
    errors: list[BaseException] = []

    def stop_all() -> None:
        try:
            supervisor.shutdown()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=stop_all) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        waiting.join(thread, 20)
    assert not errors
    states = [supervisor.snapshot(handle).state for handle in handles]
    assert states == ["terminated", "killed", "terminated"]
    supervisor.shutdown()  # again: nothing left to do
    with pytest.raises(ProcessError) as raised:
        run(supervisor, py("pass"))
    assert raised.value.code == "supervisor_shutting_down"
    assert output(supervisor, handles[0]) == b"up\n"


# -- the terminalization gate --------------------------------------------------------
def test_eight_concurrent_terminalizers_pass_the_gate_once(make, root: Path,
                                                           recorder: Recorder) -> None:
    store = CountingStore(root)
    supervisor = make(store)
    handle = run(supervisor, py("import time; time.sleep(0.2)"))
    entry = supervisor.entry(handle)
    barrier = threading.Barrier(8)
    results: list[bool] = []

    def terminalize() -> None:
        barrier.wait(timeout=10)
        results.append(entry.terminalize(Outcome("terminated")))

    threads = [threading.Thread(target=terminalize) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        waiting.join(thread)
    supervisor.wait(handle, timeout=WAIT)
    # the natural exit arrives too, and must be a no-op: its watcher has ended
    watched = threading.Thread(target=entry.join)
    watched.start()
    waiting.join(watched, timeout=10)
    assert results.count(True) == 1
    terminal_saves = {state: count for state, count in store.saves.items()
                      if state not in ("starting", "running")}
    # one terminal manifest, then the completion marker on that same terminal manifest
    assert terminal_saves == {"terminated": 2}
    manifest = store.load(handle)
    assert manifest.state == "terminated" and manifest.completion_published == 1
    assert [kind for kind, _, _ in recorder.events] == ["started", "completed"]
    assert recorder.notices == [(manifest.events.command_id, handle)]


# -- volume --------------------------------------------------------------------------
def test_fifty_megabytes_as_fast_as_possible_are_all_accounted_for(make) -> None:
    supervisor = make()
    code = ("import os, sys\n"
            "out, err = b'o' * 65536, b'e' * 65536\n"
            "for n in range(610):\n"
            "    os.write(1, out)\n"
            "    if n % 4 == 0: os.write(2, err)\n"
            "os.write(1, b'o' * 30000)\n")
    handle = run(supervisor, py(code))
    manifest = supervisor.wait(handle, timeout=60)
    expected_out, expected_err = 610 * 65536 + 30000, 153 * 65536
    total = expected_out + expected_err
    assert total > 50_000_000
    assert manifest.state == "exited" and manifest.cursors.total_bytes == total
    data = SpoolReader(Path(supervisor.paths.spool(handle))).read(0, total).data
    assert len(data) == total
    assert data.count(b"o") == expected_out and data.count(b"e") == expected_err


def test_output_beyond_the_ceiling_keeps_the_last_window(make) -> None:
    supervisor = make(max_spool_bytes=256 * 1024, spool_segment_bytes=64 * 1024)
    code = "import sys\nfor n in range(200000): print(n)\n"
    handle = run(supervisor, py(code))
    manifest = supervisor.wait(handle, timeout=WAIT)
    total = sum(len(f"{n}\n") for n in range(200000))
    assert manifest.cursors.total_bytes == total
    retained = manifest.cursors.retained_from
    assert 256 * 1024 <= total - retained < 320 * 1024
    chunk = supervisor.read(handle, 0, 1 << 20)
    assert chunk.gap and chunk.data.endswith(b"199999\n")
    rendered = supervisor.render(handle, retained, 1 << 20)
    assert rendered.next_cursor == total and rendered.output.endswith("199999\n")


ESCAPE = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        open(sys.argv[1] + ".tmp", "w").write(str(os.getpid()))
        os.rename(sys.argv[1] + ".tmp", sys.argv[1])
        time.sleep(60)
    os._exit(0)
os.wait()
"""


def test_an_ended_tree_leaves_no_liveness_file_but_an_escaped_member_keeps_it(
        make, root: Path, tmp_path: Path) -> None:
    """Every finished agent's file made each later status probe it. Under the
    watchdog "exited" means the whole tree is gone, a double-forked daemon
    included, so the file goes; without it a member that escaped the sweep (a new
    session, reparented) still holds the lock, and its file is what finds it."""
    supervisor = make()
    ended = run(supervisor, py("print('done')"))
    supervisor.wait(ended, timeout=WAIT)
    assert not (root / f"{ended}.alive").exists()
    assert (root / f"{ended}.manifest.json").exists()
    supervisor.shutdown()  # one supervisor owns a process root at a time

    for watched in (True, False):
        pid_file = tmp_path / f"daemon-{watched}.pid"
        supervisor = make(watchdog=watched)
        handle = run(supervisor, [*py(ESCAPE), str(pid_file)])
        assert supervisor.wait(handle, timeout=WAIT).state == "exited"
        supervisor.shutdown()
        wait_for(pid_file.exists, timeout=10)
        daemon = int(pid_file.read_text())
        try:
            if watched:
                assert gone(daemon)
                assert not (root / f"{handle}.alive").exists()
                continue
            assert liveness.tree_alive(root / f"{handle}.alive") is True
            psutil.Process(daemon).kill()
            wait_for(lambda: gone(daemon), timeout=10)  # noqa: B023 — used at once
            assert liveness.tree_alive(root / f"{handle}.alive") is False
        finally:
            with contextlib.suppress(psutil.Error):
                psutil.Process(daemon).kill()


def test_forget_removes_a_liveness_file_only_when_nothing_holds_it(tmp_path: Path) -> None:
    path = tmp_path / "handle.alive"
    fd = liveness.hold(path)  # an exclusive flock, as a live tree holds it
    try:
        liveness.forget(path)
        assert path.exists() and liveness.tree_alive(path) is True
    finally:
        os.close(fd)
    liveness.forget(path)
    assert not path.exists() and liveness.tree_alive(path) is None
    liveness.forget(path)  # already gone: nothing to do


# -- restore -------------------------------------------------------------------------
def _owner(tmp_path: Path, root: Path, mode: str, code: str) -> tuple[subprocess.Popen, str]:
    journal_path = tmp_path / "state" / "events.ndjson"
    owner = subprocess.Popen(
        [sys.executable, OWNER_SCRIPT, str(root), str(journal_path), str(tmp_path), mode,
         json.dumps(py(code))],
        stdout=subprocess.PIPE, text=True,
    )
    handle = json.loads(waiting.readline(owner))["handle"]
    spool = SpoolReader(root / f"{handle}.spool")
    wait_for(lambda: spool.extent().total_bytes > 0, timeout=10)
    return owner, handle


AGENT_WITH_PID = ("import os, time; print(os.getpid(), flush=True); time.sleep(120)")


def test_sigkill_of_the_owner_ends_the_tree_then_restore_reconciles(tmp_path: Path,
                                                                    root: Path) -> None:
    journal_path = tmp_path / "state" / "events.ndjson"
    owner, handle = _owner(tmp_path, root, "hold", AGENT_WITH_PID)
    spool = SpoolReader(root / f"{handle}.spool")
    try:
        wait_for(lambda: spool.read(0, 100).data.endswith(b"\n"), timeout=10)
        agent = int(spool.read(0, 100).data)
        owner.send_signal(signal.SIGKILL)
        waiting.wait_process(owner, 10)
        assert ManifestStore(root).load(handle).state == "running"
        wait_for(lambda: gone(agent), timeout=10)  # the watchdog ended the orphan
        wait_for(lambda: liveness.tree_alive(root / f"{handle}.alive") is False, timeout=10)
        journal = Journal(journal_path, tmp_path)
        for _ in range(2):  # restoring twice is safe
            supervisor = Supervisor(SupervisorConfig(**FAST), ManifestStore(root),
                                    lifecycle=ProcessEventPublisher(journal))
            report = supervisor.restore()
            supervisor.shutdown()
        manifest = ManifestStore(root).load(handle)
        assert manifest.state == "lost_on_restore"
        assert manifest.result.reason == "lost-on-restore" and manifest.finished_at
        size = len(spool.read(0, 100).data)
        assert manifest.cursors.total_bytes == size  # refreshed from the spool
        assert report.reconciled == [] and [m.handle for m in report.reopened] == [handle]
        lost = [event for event in journal.read() if event["type"] == "process_lost"]
        assert len(lost) == 1 and lost[0]["eventId"] == manifest.events.lost
        assert lost[0]["handle"] == handle and lost[0]["itemId"] == "001"
        with Supervisor(SupervisorConfig(**FAST), ManifestStore(root)) as later:
            assert later.read(handle, 0, 100).data == spool.read(0, 100).data
            assert later.wait(handle, timeout=WAIT) == manifest
            assert later.stop(handle) == manifest
    finally:
        if owner.poll() is None:
            owner.kill()
            waiting.wait_process(owner)


def test_restore_reports_a_live_orphan_and_never_signals_it(tmp_path: Path,
                                                            root: Path) -> None:
    owner, handle = _owner(tmp_path, root, "hold-unwatched", AGENT_WITH_PID)
    spool = SpoolReader(root / f"{handle}.spool")
    try:
        wait_for(lambda: spool.read(0, 100).data.endswith(b"\n"), timeout=10)
        agent = int(spool.read(0, 100).data)
        owner.send_signal(signal.SIGKILL)
        waiting.wait_process(owner, 10)
        assert [o.handle for o in liveness.orphans(ProcPaths(root))] == [handle]
        supervisor = Supervisor(SupervisorConfig(**FAST), ManifestStore(root))
        report = supervisor.restore()
        supervisor.shutdown()
        assert [m.handle for m in report.orphans] == [handle] and not report.reconciled
        assert ManifestStore(root).load(handle).state == "running"  # not claimed lost
        assert psutil.Process(agent).is_running()  # restore never signals an old process
        # An explicit stop finds the tree through the lock's holders, not a PID of ours.
        assert liveness.holders(root / f"{handle}.alive") == [agent]
        assert liveness.end_orphan(root / f"{handle}.alive", grace=0.3) == 1
        wait_for(lambda: gone(agent), timeout=10)
        assert liveness.orphans(ProcPaths(root)) == []
        supervisor = Supervisor(SupervisorConfig(**FAST), ManifestStore(root))
        report = supervisor.restore()
        supervisor.shutdown()
        assert [m.handle for m in report.reconciled] == [handle]
    finally:
        if owner.poll() is None:
            owner.kill()
            waiting.wait_process(owner)
        with contextlib.suppress(psutil.Error, UnboundLocalError):
            psutil.Process(agent).kill()


def test_restore_reports_corrupt_records_and_continues(make, root: Path,
                                                       recorder: Recorder) -> None:
    first = make()
    good = run(first, py("print('fine')"))
    bad_spool = run(first, py("print('spool')"))
    first.wait(good, timeout=WAIT)
    first.wait(bad_spool, timeout=WAIT)
    first.shutdown()
    running = ManifestStore(root).load(good).to_dict()
    running.update(state="running", finished_at=None,
                   result={"exit_code": None, "reason": None}, completion_published=0)
    running.pop("finished_at")
    from git_forge.supervisor.handles import mint_handle
    stale = mint_handle()
    running["handle"] = stale
    (root / f"{stale}.manifest.json").write_text(json.dumps(running))
    corrupt = mint_handle()
    (root / f"{corrupt}.manifest.json").write_bytes(b"{oops")
    (root / f"{bad_spool}.spool" / "index.json").write_bytes(b"garbage")
    recorder.events.clear()
    report = make().restore()
    assert [m.handle for m in report.reconciled] == [stale]
    assert sorted(m.handle for m in report.reopened) == sorted([good, bad_spool])
    assert {(error.handle, error.error.code) for error in report.errors} == {
        (corrupt, "manifest_corrupt"), (bad_spool, "spool_corrupt"),
    }
    assert (root / f"{corrupt}.manifest.json").read_bytes() == b"{oops"
    assert ManifestStore(root).load(stale).state == "lost_on_restore"
    assert [(kind, handle) for kind, _, handle in recorder.events] == [("lost", stale)]


def test_restore_publishes_a_completion_a_crash_left_unpublished(make, root: Path,
                                                                 recorder: Recorder) -> None:
    first = make()
    handle = run(first, py("pass"))
    first.wait(handle, timeout=WAIT)
    first.shutdown()
    document = json.loads((root / f"{handle}.manifest.json").read_text())
    document["completion_published"] = 0  # as if the owner died right after the terminal save
    (root / f"{handle}.manifest.json").write_text(json.dumps(document))
    recorder.events.clear()
    recorder.notices.clear()
    report = make().restore()
    manifest = ManifestStore(root).load(handle)
    assert report.published == [handle] and manifest.completion_published == 1
    assert recorder.events == [("completed", manifest.events.completed, handle)]
    assert recorder.notices == [(manifest.events.command_id, handle)]


def test_one_owner_per_process_root(make, root: Path) -> None:
    first = make()
    with pytest.raises(ProcessError) as raised:
        make()
    assert raised.value.code == "supervisor_busy"
    first.shutdown()
    make()  # the lock went with the first owner


def test_a_stop_request_file_reaches_the_owner(make, root: Path) -> None:
    from git_forge.supervisor.requests import StopRequest, write_stop_request

    supervisor = make()
    handle = started(supervisor, SLEEPER)
    write_stop_request(supervisor.paths, handle, StopRequest("kill"))
    manifest = supervisor.wait(handle, timeout=5)
    assert manifest.state == "killed"
    assert not (root / f"{handle}.stop.json").exists()


def test_settings_are_validated() -> None:
    assert SupervisorConfig.from_settings({"maxProcessSpoolBytes": 1024}).max_spool_bytes == 1024
    for settings in ({"maxProcesses": 0}, {"graceSeconds": "soon"}, {"spoolSegmentBytes": 1 << 23},
                     {"unknownKey": 1}, {"maxProcesses": 1.5}):
        with pytest.raises(ProcessError) as raised:
            SupervisorConfig.from_settings(settings)
        assert raised.value.code == "invalid_settings"


DOUBLE_FORK = """
import os, subprocess, sys, time
stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
daemon = ("import os, subprocess, sys; os.setsid(); "
          "p = subprocess.Popen([sys.executable, '-c', sys.argv[1]], stdout=subprocess.DEVNULL,"
          " stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL); print(p.pid, flush=True); "
          "os._exit(0)")
first = subprocess.Popen([sys.executable, "-c", daemon, stubborn], stdout=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
print(first.stdout.readline().strip(), flush=True)
first.wait()
time.sleep(float(sys.argv[1]))
"""


def ignores_sigterm(pid: int) -> bool:
    """True once process ``pid`` has SIGTERM set to SIG_IGN (its SigIgn mask in /proc)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("SigIgn:"):
                return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


@pytest.mark.parametrize("how", ["exits", "stopped", "timed_out"])
def test_a_double_forked_setsid_daemon_never_outlives_its_entry(make, how: str) -> None:
    """The daemon closes its output and leaves the session: only the watchdog,
    as the subreaper it is re-parented to, can still reach it."""
    supervisor = make(grace_seconds=0.3)
    options = {"timeout": 0.8} if how == "timed_out" else {}
    handle = run(supervisor, py(DOUBLE_FORK) + ["0" if how == "exits" else "60"], **options)
    wait_for(lambda: output(supervisor, handle).endswith(b"\n"), timeout=10)
    daemon = int(output(supervisor, handle))
    assert not gone(daemon)
    if how == "stopped":
        # "killed" needs the daemon to ignore SIGTERM: wait until it does (it is
        # still starting its interpreter when its pid is printed).
        wait_for(lambda: ignores_sigterm(daemon), timeout=10, what="the daemon ignoring SIGTERM")
        supervisor.stop(handle, "terminate", 0.3)
    manifest = supervisor.wait(handle, timeout=20)
    # A stop ends in "killed": the daemon ignores SIGTERM, so the tree needed SIGKILL.
    assert manifest.state == {"exits": "exited", "stopped": "killed",
                              "timed_out": "timed_out"}[how]
    wait_for(lambda: gone(daemon), timeout=5)


PARENT_OF_A_SLEEPER = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
print(child.pid, flush=True)
time.sleep(30)
"""


@pytest.mark.parametrize("watched", [True, False])
def test_only_an_uncontained_tree_is_scanned_for_its_descendants(make, watched: bool) -> None:
    """Remembering an agent's descendants means reading every process on the
    machine, once a second per agent. Below the watchdog nothing can escape (it is
    the subreaper and ends the tree), so that scan is for a direct child alone."""
    supervisor = make(watchdog=watched)
    handle = run(supervisor, py(PARENT_OF_A_SLEEPER))
    wait_for(lambda: output(supervisor, handle).endswith(b"\n"), timeout=10)
    grandchild = int(output(supervisor, handle))
    tree = supervisor.entry(handle)._tree  # what the entry remembered of the tree
    assert tree is not None
    if watched:
        time.sleep(1.5)  # past the scan's period: a scan would have found it
        assert grandchild not in tree._known
    else:
        wait_for(lambda: grandchild in tree._known, timeout=10, what="the scan finding it")
    supervisor.stop(handle, "terminate", 0.3)
    assert supervisor.wait(handle, timeout=WAIT).state in ("terminated", "killed")
    wait_for(lambda: gone(grandchild), timeout=10)


@pytest.mark.parametrize("settle", [0.0, 1.5])
def test_a_tree_whose_watchdog_dies_is_ended_whole(make, settle: float) -> None:
    """SIGKILL the watchdog (the OOM killer, say): the tree it contained is orphaned,
    and nothing of it — the agent, a child in its group, a child in a session of
    its own — outlives the entry, however soon after the start it happens."""
    supervisor = make(grace_seconds=0.3)
    handle = run(supervisor, py(TREE))
    pids = tree_pids(supervisor, handle)
    time.sleep(settle)
    watchdog = supervisor._watchdog._process  # the one way to kill it from outside
    assert watchdog is not None
    os.kill(watchdog.pid, signal.SIGKILL)
    assert supervisor.wait(handle, timeout=WAIT).state in ("killed", "exited")
    try:
        for pid in pids:
            wait_for(lambda pid=pid: gone(pid), timeout=10, what=f"process {pid} ending")
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_an_observer_sees_each_stream_as_it_is_spooled(make) -> None:
    seen: dict[str, bytearray] = {"stdout": bytearray(), "stderr": bytearray()}
    lock = threading.Lock()

    def observe(stream: str, data: bytes) -> None:
        with lock:
            seen[stream] += data
        if b"boom" in data:
            raise RuntimeError("an observer's bug")  # must not stop the output

    supervisor = make()
    code = ("import os\n"
            "for n in range(200):\n"
            "    os.write(1, b'out %d\\n' % n)\n"
            "    os.write(2, b'err %d\\n' % n)\n"
            "os.write(1, b'boom\\n' + b'o' * 300000)\n")
    handle = supervisor.start({"run_id": "r"}, None,
                              PreparedProcess(py(code), cwd="/", observe=observe))
    manifest = supervisor.wait(handle, timeout=WAIT)
    assert manifest.state == "exited"
    expected_out = b"".join(b"out %d\n" % n for n in range(200)) + b"boom\n" + b"o" * 300000
    assert bytes(seen["stdout"]) == expected_out
    assert bytes(seen["stderr"]) == b"".join(b"err %d\n" % n for n in range(200))
    assert len(output(supervisor, handle)) == len(expected_out) + len(seen["stderr"])


def test_a_watched_childs_exit_call_comes_once_whenever_it_is_asked_for() -> None:
    """``when_exited`` before the watchdog's report: called by the report; after
    it: called at once. Either way exactly once, and a second report changes nothing."""
    from git_forge.supervisor.watchdog import WatchedChild

    def child() -> WatchedChild:
        return WatchedChild(12345, None, open("/dev/null", "rb"), open("/dev/null", "rb"))

    early, calls = child(), []
    early.when_exited(lambda: calls.append("early"))
    assert calls == [] and not early.reaped
    early.report(0)
    early.report(signal.SIGKILL)
    assert calls == ["early"] and early.wait() == 0

    late = child()
    late.report(256)  # a raw wait status: exit code 1
    late.when_exited(lambda: calls.append("late"))
    assert calls == ["early", "late"] and late.wait() == 1
    for stream in (early.stdout, early.stderr, late.stdout, late.stderr):
        stream.close()


def test_a_direct_childs_exit_call_leaves_it_unreaped() -> None:
    """Without the watchdog the exit is seen with WNOWAIT: the call comes once the
    child ended, and its pid stays reserved until ``wait`` reaps it."""
    from git_forge.supervisor.watchdog import DirectChild

    child = DirectChild(subprocess.Popen([sys.executable, "-c", "pass"],
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    ended = threading.Event()
    child.when_exited(ended.set)
    assert ended.wait(30)
    assert psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE  # not reaped yet
    assert child.wait() == 0 and child.reaped
    child.stdout.close()
    child.stderr.close()


def test_an_environment_of_raw_bytes_reaches_the_process_unchanged(make) -> None:
    # The watchdog is asked over its socket in JSON: a value that is not UTF-8 (as
    # Python holds it, surrogate-escaped) must come through byte for byte.
    raw = os.fsdecode(b"caf\xe9-\xff")
    supervisor = make()
    handle = run(supervisor, py("import os; print(os.environb[b'RAW'].hex())"),
                 env={**os.environ, "RAW": raw})
    manifest = supervisor.wait(handle, timeout=WAIT)
    assert manifest.state == "exited", manifest
    assert output(supervisor, handle) == b"caf\xe9-\xff".hex().encode() + b"\n"
