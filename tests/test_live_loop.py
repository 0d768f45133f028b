"""Beside a live loop, and after a dead one: real loops, real agents, real SIGKILL.

The agent here is hostile in the ways that strand work: it ignores SIGTERM, has
a child in its group, a grandchild, and a double-forked ``setsid`` daemon — all
carrying a marker argument, so the tests can scan /proc for anything left.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
from helpers import forge_argv, git, run_forge, snapshot
from waiting import gone, wait_for

AGENT = r'''
import fcntl, json, os, pathlib, signal, subprocess, sys, time
marker = sys.argv[1]
item = os.environ["FORGE_ITEM_ID"]
sys.stdin.read()
log = pathlib.Path(os.environ["AGENT_LOG"])
log.mkdir(exist_ok=True)
# Two agents of one item at once is the failure: the first one holds this lock
# (and its whole tree inherits it) for as long as any of it lives.
lease = os.open(log / f"{item}.lease", os.O_RDWR | os.O_CREAT)
try:
    fcntl.flock(lease, fcntl.LOCK_EX | fcntl.LOCK_NB)
except BlockingIOError:
    (log / f"OVERLAP-{item}-{os.getpid()}").write_text("two agents on one item\n")
plan = json.loads(os.environ["AGENT_PLAN"])
step = plan.get(item, plan.get("*", {"signal": "FORGE_DONE"}))
signal.signal(signal.SIGTERM, signal.SIG_IGN)
for name, content in step.get("files", {}).items():
    pathlib.Path(name).write_text(content)
if step.get("tree"):
    stubborn = ("import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                "time.sleep(120)")
    child = ("import subprocess, sys, time; "
             "subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2], 'grandchild']); "
             "time.sleep(120)")
    subprocess.Popen([sys.executable, "-c", child, stubborn, marker, "child"])
    daemon = ("import os, subprocess, sys; os.setsid(); "
              "subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2], 'daemon']); "
              "os._exit(0)")
    subprocess.Popen([sys.executable, "-c", daemon, stubborn, marker, "setsid"]).wait()
(log / f"{item}.started").write_text(str(os.getpid()))
time.sleep(step.get("sleep", 0))
print(step.get("signal", ""), flush=True)
'''

FAST_CONFIG = "supervisor:\n  graceSeconds: 0.5\n  drainTimeoutSeconds: 0.3\n"


def marked(marker: str) -> list[int]:
    """Live processes whose command line carries ``marker``."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        try:
            if (marker in (process.info["cmdline"] or [])
                    and process.info["status"] != psutil.STATUS_ZOMBIE):
                found.append(process.pid)
        except psutil.Error:
            continue
    return found


def kill_marked(marker: str) -> None:
    for pid in marked(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Project:
    """A copy of the template project, with its agent, plan and helpers."""

    def __init__(self, root: Path, agent: Path, marker: str) -> None:
        self.root, self.agent, self.marker = root, agent, marker
        self.log = root.parent / f"{root.name}-log"
        self.plan: dict = {}

    @property
    def env(self) -> dict[str, str]:
        return {"AGENT_PLAN": json.dumps(self.plan), "AGENT_LOG": str(self.log)}

    def loop_argv(self, *args: str) -> list[str]:
        return ["loop", "run", "--agent", f"{sys.executable} {self.agent} {self.marker}",
                *args]

    def spawn(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(forge_argv() + self.loop_argv(*args), cwd=self.root,
                                env={**os.environ, **self.env}, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)

    def run_loop(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return run_forge(*self.loop_argv(*args), cwd=self.root, env=self.env, timeout=timeout)

    def forge(self, *args: str) -> subprocess.CompletedProcess:
        return run_forge(*args, cwd=self.root, env=self.env)

    def started(self, item: str) -> bool:
        marker = self.log / f"{item}.started"
        return marker.exists() and marker.read_text().isdigit()

    def overlaps(self) -> list[str]:
        return sorted(path.name for path in self.log.glob("OVERLAP-*")) if self.log.exists() \
            else []

    def backlog(self) -> bytes:
        return (self.root / ".forge" / "backlog.json").read_bytes()

    def items(self) -> dict[str, dict]:
        return {item["id"]: item for item in json.loads(self.backlog())["items"]}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once: a repository with a three-item backlog, committed."""
    from conftest import IDENTITY

    root = tmp_path_factory.mktemp("template") / "repo"
    root.mkdir()
    env = {**IDENTITY, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root.parent)}
    git("init", "-q", "-b", "main", cwd=root, env=env)
    assert run_forge("init", cwd=root, env=env).returncode == 0
    for title in ("Write a", "Leave b", "Grow a tree"):
        assert run_forge("backlog", "add", "--title", title, cwd=root, env=env).returncode == 0
    (root / ".forge.yaml").write_text(FAST_CONFIG)
    git("add", "-A", cwd=root, env=env)
    git("commit", "-qm", "backlog", cwd=root, env=env)
    return root


@pytest.fixture
def project(template: Path, tmp_path: Path):
    made: list[Project] = []

    def make(name: str = "repo") -> Project:
        root = tmp_path / name
        shutil.copytree(template, root, symlinks=True)
        agent = tmp_path / "agent.py"
        agent.write_text(AGENT)
        made.append(Project(root, agent, f"forge-test-marker-{os.getpid()}-{tmp_path.name}-"
                                          f"{name}-{random.randrange(1 << 30)}"))
        return made[-1]

    yield make
    for made_project in made:
        kill_marked(made_project.marker)


HOSTILE_PLAN = {
    "001": {"signal": "FORGE_DONE", "files": {"a.txt": "a\n"}, "sleep": 0.1},
    "002": {"signal": "FORGE_BLOCKED: cannot", "files": {"b.txt": "b\n"}},
    "003": {"signal": "FORGE_DONE", "files": {"c.txt": "c\n"}, "tree": True, "sleep": 60},
}


def _kill_round(project: Project, delay: float, after_tree: bool) -> None:
    """SIGKILL a loop ``delay`` seconds in (after item 003's tree is up, with
    ``after_tree``); then no agent may survive, and the next launch, started at
    once, never runs a second agent beside a first."""
    project.plan = HOSTILE_PLAN
    loop = project.spawn()
    try:
        if after_tree:
            wait_for(lambda: project.started("003"), timeout=30, what="item 003 running")
        time.sleep(delay)
        killed_at = time.monotonic()
        loop.send_signal(signal.SIGKILL)
        loop.wait(timeout=10)
        # The next launch at once: refused while any agent of the dead run lives.
        project.plan = {item: {**step, "sleep": 0.3} for item, step in HOSTILE_PLAN.items()}
        following = project.run_loop("--iterations", "1")
        wait_for(lambda: not marked(project.marker), timeout=10 - (time.monotonic() - killed_at),
                 what=f"every agent process gone (killed {delay:.2f} s in)")
        assert not project.overlaps(), following.stderr
        assert following.returncode in (0, 1, 2, 5), following.stderr
    finally:
        if loop.poll() is None:
            loop.kill()
            loop.wait()


def test_sigkill_at_random_instants_leaves_no_agent_and_never_two(project) -> None:
    rng = random.Random(20261201)
    # Instants spread over start-up, item 001's commit, item 002's stash and the
    # bookkeeping commit, and item 003's tree while it sleeps.
    rounds = [(rng.uniform(0.2, 1.8), False) for _ in range(12)]
    rounds += [(rng.uniform(0.0, 0.3), True) for _ in range(8)]
    projects = [project(f"round{n}") for n in range(len(rounds))]
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(_kill_round, one, delay, after_tree)
                   for one, (delay, after_tree) in zip(projects, rounds, strict=True)]
        for future in futures:
            future.result(timeout=120)


def test_the_agent_tree_dies_with_the_loop_within_seconds(project) -> None:
    one = project()
    one.plan = HOSTILE_PLAN
    loop = one.spawn()
    try:
        wait_for(lambda: one.started("003"), timeout=30, what="item 003's agent running")
        wait_for(lambda: len(marked(one.marker)) >= 4, what="the whole tree running")
        loop.send_signal(signal.SIGKILL)
        loop.wait(timeout=10)
        killed = time.monotonic()
        wait_for(lambda: not marked(one.marker), timeout=10, what="the tree gone")
        assert time.monotonic() - killed < 10
    finally:
        if loop.poll() is None:
            loop.kill()
    # The dead loop is said to be dead; the next launch resets the item and goes on.
    status = one.forge("status")
    assert status.stdout.splitlines()[0].startswith("loop:     not running (last run ")
    assert "ended without shutting down; lock free)" in status.stdout.splitlines()[0]
    state = json.loads((one.root / ".forge" / "state.json").read_text())
    document = json.loads(one.forge("status", "--json").stdout)
    assert document["loopState"] == "stopped"
    assert document["liveness"]["endedWithoutShutdown"] is True
    assert document["liveness"]["runId"] == state["runId"]


# -- commands beside a live loop -----------------------------------------------------
def _live(one: Project) -> tuple[subprocess.Popen, str]:
    one.plan = {"001": {"signal": "FORGE_DONE", "files": {"work.txt": "in flight\n"},
                        "sleep": 60}}
    loop = one.spawn("--iterations", "1")
    wait_for(lambda: one.started("001"), timeout=30, what="the agent running")
    state = json.loads((one.root / ".forge" / "state.json").read_text())
    message = (f"Error: a loop is running on this backlog (run {state['runId']}, started "
               f"{state['startedAt']}); stop it with git forge loop stop, or wait for it to "
               "end\n")
    return loop, message


def _stop(one: Project, loop: subprocess.Popen) -> None:
    if loop.poll() is None:
        one.forge("loop", "stop")
        try:
            loop.wait(timeout=30)
        except subprocess.TimeoutExpired:
            loop.kill()
            loop.wait()


def _outside_the_live_run(root: Path) -> dict[str, bytes]:
    """Every file but the live run's own process records (``.forge/proc/``, the
    journal), which its supervisor keeps writing on its own schedule — the spool's
    timed flushes, the ``running`` manifest saved just after the agent started —
    and the read-only commands' derived cache (``.forge/cache/``: not user data)."""
    return {rel: data for rel, data in snapshot(root).items()
            if not rel.startswith((".forge/proc/", ".forge/cache/"))
            and rel != ".forge/events.ndjson"}


def test_tree_commands_refuse_beside_a_live_loop_and_change_nothing(project) -> None:
    one = project()
    loop, message = _live(one)
    try:
        before = _outside_the_live_run(one.root)
        refs = git("for-each-ref", cwd=one.root) + git("stash", "list", cwd=one.root)
        for argv in (["reconcile", "--stash", "item-001"], ["reconcile", "--commit", "item-001"],
                     ["reconcile", "--discard", "item-001", "--confirm-discard"],
                     ["reconcile", "--restore", "refs/forge/discarded/x"],
                     ["recover"], ["recover", "--non-interactive", "--json"],
                     ["recover", "--answer", "001=yes"]):
            result = one.forge(*argv)
            assert (result.returncode, result.stderr) == (2, message), argv
            assert _outside_the_live_run(one.root) == before, argv
            assert git("for-each-ref", cwd=one.root) + git("stash", "list",
                                                           cwd=one.root) == refs
        second = one.run_loop()
        assert (second.returncode, second.stderr) == (2, message)

        # Read-only commands keep working and say that a loop is live.
        status = one.forge("status")
        assert status.returncode == 0 and "running" in status.stdout.splitlines()[0]
        assert "lock:     held by run" in status.stdout
        for argv in (["reconcile"], ["recover", "--plan"], ["backlog", "list"],
                     ["backlog", "show", "002"], ["proc", "list"]):
            result = one.forge(*argv)
            assert "note: a loop is running on this backlog" in result.stderr, argv
            assert result.returncode in (0, 6), (argv, result.stderr)
        preflight = one.forge("preflight")
        assert preflight.returncode == 1
        assert preflight.stderr == "STOP: " + message[len("Error: "):]
        assert "stranded" not in preflight.stderr
        assert _outside_the_live_run(one.root) == before
    finally:
        _stop(one, loop)


def test_the_item_in_flight_cannot_be_changed_but_others_can(project) -> None:
    one = project()
    loop, message = _live(one)
    try:
        before = one.backlog()
        for argv in (["backlog", "answer", "001", "use Postgres"], ["backlog", "unblock", "001"],
                     ["backlog", "edit", "001", "--title", "Renamed"],
                     ["backlog", "done", "002", "1"]):
            result = one.forge(*argv)
            assert result.returncode == 2, argv
            lines = result.stderr.splitlines()
            assert len(lines) == 1 and lines[0].startswith(
                "Error: item 001 is being worked on by the running loop (run "), argv
            assert one.backlog() == before
        # an item taken out of the backlog may be the next one the loop selects
        dropped = one.forge("backlog", "drop", "003", "--yes")
        assert (dropped.returncode, dropped.stderr) == (2, message)
        assert one.backlog() == before
        assert one.forge("backlog", "edit", "002", "--title", "Renamed").returncode == 0
        assert one.forge("backlog", "add", "--title", "Queued").returncode == 0
        assert one.forge("decision", "record", "--backlog-dir", ".forge", "--item", "002",
                         "--question", "q?", "--answer", "a").returncode == 0
        items = one.items()
        assert items["002"]["title"] == "Renamed" and items["004"]["title"] == "Queued"
    finally:
        _stop(one, loop)
    items = one.items()  # the loop's own rewrites kept what was queued meanwhile
    assert items["002"]["title"] == "Renamed" and items["004"]["title"] == "Queued"


def test_backlog_add_racing_thirty_iterations_loses_no_item(project) -> None:
    one = project()
    # 003 keeps the loop busy while the first adds land; then it works through them.
    one.plan = {"003": {"signal": "FORGE_DONE", "sleep": 2}, "*": {"signal": "FORGE_DONE",
                                                                  "sleep": 0.15}}
    loop = one.spawn("--iterations", "30")
    added: list[str] = []
    try:
        wait_for(lambda: one.started("001"), timeout=30, what="the loop iterating")
        def add(n: int) -> str:
            result = one.forge("backlog", "add", "--title", f"Queued {n}")
            assert result.returncode == 0, result.stderr
            return result.stdout.strip()

        with ThreadPoolExecutor(max_workers=3) as pool:  # adders race each other too
            added = list(pool.map(add, range(30), timeout=120))
        loop.wait(timeout=120)
    finally:
        if loop.poll() is None:
            loop.kill()
            loop.wait()
    assert loop.returncode == 0, loop.stderr.read() if loop.stderr else ""
    items = one.items()
    assert len(added) == len(set(added)) == 30
    assert {f"Queued {n}" for n in range(30)} <= {item["title"] for item in items.values()}
    assert all(items[item_id]["title"].startswith("Queued") for item_id in added)
    done = [item for item in items.values() if item["status"] == "done"]
    assert len(done) > 5  # the loop really iterated while the adds went on
    assert any(items[item_id]["status"] == "done" for item_id in added)


# -- a failed watchdog ---------------------------------------------------------------
def _watchdog_processes(loop_pid: int) -> list[psutil.Process]:
    loop = psutil.Process(loop_pid)
    return [child for child in loop.children(recursive=True)
            if any("watchdog_process.py" in part for part in child.cmdline())]


def test_an_orphan_is_reported_refused_over_and_ended_by_proc_stop(project) -> None:
    one = project()
    one.plan = {"001": {"signal": "FORGE_DONE", "sleep": 60}}
    loop = one.spawn("--iterations", "1")
    try:
        wait_for(lambda: one.started("001"), timeout=30, what="the agent running")
        agent = int((one.log / "001.started").read_text())
        ours = [psutil.Process(loop.pid), *_watchdog_processes(loop.pid)]
        assert len(ours) == 2  # the loop and its watchdog
        for process in ours:  # freeze them all first, so none can act on the others' end
            process.suspend()
        for process in reversed(ours):
            process.kill()
        loop.wait(timeout=10)
        for process in ours:  # both dead: nothing is left that could end the agent
            wait_for(lambda pid=process.pid: gone(pid), timeout=10, what="our processes gone")
        assert psutil.Process(agent).is_running()  # the orphan the watchdog should have ended

        handle = json.loads(one.forge("proc", "list", "--json").stdout)[-1]["handle"]
        status = one.forge("status")
        assert (f"orphaned agent still running (handle {handle}, item 001)"
                in status.stdout), status.stdout
        refused = one.run_loop()
        assert refused.returncode == 2
        assert refused.stderr == (
            f"Error: an agent of an earlier run is still running (item 001, pid {agent}, "
            f"handle {handle}); stop it with git forge proc stop {handle}\n")
        assert "an agent of an earlier run" in one.forge("preflight").stderr

        stopped = one.forge("proc", "stop", handle, "--grace", "0.3")
        assert stopped.returncode == 0, stopped.stderr
        wait_for(lambda: not marked(one.marker), timeout=10, what="the orphan gone")
        assert "orphan" not in one.forge("status").stdout
        one.plan = {}
        resumed = one.run_loop()
        assert resumed.returncode == 0, resumed.stderr
        assert one.items()["001"]["status"] == "done"
        assert not one.overlaps()
    finally:
        if loop.poll() is None:
            loop.kill()
