"""``git forge watch``: one frame of a run from the files the loop writes — beside a live
loop (serial and parallel), after a merge conflict, during a usage-limit wait and after
a loop died — as ``--once`` text, as ``--json``, through Textual's own test harness
(``App.run_test``), and once in a real pseudo-terminal beside a real loop.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import signal
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
import waiting
from builders import backlog_repo
from fake_agents import FakeAgents
from helpers import PtySession, forge_argv, git, run_forge, snapshot
from templates import Templates

from git_forge.cli.watch_app import OutputScreen, WatchApp
from git_forge.cli.watch_text import TITLE_COLUMNS, agent_cells
from git_forge.runner import runner_for
from git_forge.workspace import locate

#: A generic agent: prints its steps, then waits for ``release-<item>`` (30 s at most)
#: in ``FORGE_TEST_GATE``'s directory, writes its file and is done.
AGENT = r'''
import os, pathlib, sys, time
sys.stdin.read()
item = os.environ["FORGE_ITEM_ID"]
gate = pathlib.Path(os.environ["FORGE_TEST_GATE"])
for step in range(3):
    print(f"step {step} of {item}", flush=True)
print(f"\x1b[2Jwaiting for release [bold]{item}[/]", flush=True)
deadline = time.monotonic() + 30
while not (gate / f"release-{item}").exists() and time.monotonic() < deadline:
    time.sleep(0.05)
if os.environ.get("FORGE_TEST_CLASH"):
    pathlib.Path("shared.txt").write_text(f"line one, as item {item} has it\n")
pathlib.Path(f"item-{item}.txt").write_text("work\n")
print("FORGE_DONE", flush=True)
'''


def build(root: Path) -> None:
    backlog_repo(root, ("--title", "Parse [red]config[/red]", "--priority", "1"),
                 ("--title", "Add cache", "--priority", "2"),
                 ("--title", "Write docs", "--priority", "3"))
    (root / "shared.txt").write_text("line one\n")
    git("add", "shared.txt", cwd=root)
    git("commit", "-qm", "shared", cwd=root)


class Run:
    """A project, its agent, and a loop started beside the test."""

    def __init__(self, root: Path, tmp: Path) -> None:
        self.root, self.gate = root, tmp / "gate"
        self.gate.mkdir()
        self.agent = tmp / "agent.py"
        self.agent.write_text(AGENT)
        self.loop: subprocess.Popen | None = None

    def start(self, *args: str, **env: str) -> None:
        self.loop = subprocess.Popen(
            forge_argv() + ["loop", "run", "--agent", f"{sys.executable} {self.agent}", *args],
            cwd=self.root, env={**os.environ, "FORGE_TEST_GATE": str(self.gate), **env},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def release(self, *items: str) -> None:
        for item in items:
            (self.gate / f"release-{item}").touch()

    def finish(self) -> subprocess.CompletedProcess:
        assert self.loop is not None
        out, err = waiting.communicate(self.loop, timeout=60)
        return subprocess.CompletedProcess(self.loop.args, self.loop.returncode, out, err)

    def frame(self) -> dict:
        result = run_forge("watch", "--json", cwd=self.root)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def once(self, **env: str) -> list[str]:
        """The frame as text, whole: no terminal, no COLUMNS (the test runner's workers
        set one)."""
        result = run_forge("watch", "--once", cwd=self.root, env={"COLUMNS": "", **env})
        assert result.returncode == 0, result.stderr
        return result.stdout.splitlines()

    def wait_frame(self, test, what: str) -> dict:
        found: list[dict] = []

        def seen() -> bool:
            found[:] = [self.frame()]
            return bool(test(found[0]))

        waiting.wait_for(seen, timeout=30, interval=0.1, what=what)
        return found[0]


@pytest.fixture
def run(templates: Templates, tmp_path: Path):
    made = Run(templates.copy("watch-three", build, tmp_path / "repo"), tmp_path)
    yield made
    made.release("001", "002", "003")
    if made.loop is not None and made.loop.poll() is None:
        waiting.kill_tree(made.loop.pid)
        waiting.communicate(made.loop, timeout=10)


def pilot(root: Path, steps) -> None:
    """Run the live view under Textual's harness; ``steps(app, pilot)`` drives it."""
    async def drive() -> None:
        workspace = locate(str(root), None)
        app = WatchApp(workspace, runner_for(workspace), interval=0.2)
        async with app.run_test(size=(140, 40)) as harness:
            await harness.pause()
            await steps(app, harness)
            await harness.press("q")

    asyncio.run(asyncio.wait_for(drive(), timeout=60))


async def output_lines(app: WatchApp, harness, at_least: int) -> list[str]:
    """The output screen's lines once it shows ``at_least`` of them (10 s at most: a
    loaded machine draws it late)."""
    deadline = waiting.Deadline(10)
    while True:
        await harness.pause(0.1)
        screen = app.screen
        assert isinstance(screen, OutputScreen)
        lines = list(screen.query_one("#output").lines)  # type: ignore[attr-defined]
        if len(lines) >= at_least or deadline.passed:
            return lines


def shown(app: WatchApp, selector: str) -> str:
    return str(app.query_one(selector).content)  # type: ignore[attr-defined]


def rows(app: WatchApp) -> list[list[str]]:
    table = app.query_one("#agents")
    return [[str(cell) for cell in table.get_row_at(index)]  # type: ignore[attr-defined]
            for index in range(table.row_count)]  # type: ignore[attr-defined]


# --- a serial run, live --------------------------------------------------------------------


def test_a_live_serial_run_at_a_glance(run: Run) -> None:
    run.start("--iterations", "1")
    frame = run.wait_frame(lambda f: f["agents"] and f["agents"][0]["lastLine"].startswith(
        "waiting for release"), "the agent to wait for its release")
    assert frame["loopState"] == "running" and frame["loopAlive"]
    agent = frame["agents"][0]
    assert (agent["itemId"], agent["title"]) == ("001", "Parse [red]config[/red]")
    # the screen-clearing escape the agent printed never reaches the frame
    assert agent["lastLine"] == "waiting for release [bold]001[/]"
    assert agent["outputBytes"] >= len("step 0 of 001\n") * 3
    assert [entry["id"] for entry in frame["queue"]] == ["002", "003"]
    assert frame["queued"] == 2

    lines = run.once()
    assert lines[0].startswith("loop: running · run ") and "iteration 1/1" in lines[0]
    header = next(line for line in lines if line.startswith("item"))
    assert header.split() == ["item", "title", "elapsed", "output", "cost", "last", "line"]
    row = next(line for line in lines if line.startswith("001"))
    assert "Parse [red]config[/red]" in row and row.endswith("waiting for release [bold]001[/]")
    assert "queue (2): 002 Add cache, 003 Write docs" in lines

    async def steps(app: WatchApp, harness) -> None:
        assert shown(app, "#run").startswith("loop: running")
        table = rows(app)
        assert len(table) == 1 and table[0][0] == "001"
        assert table[0][1] == "Parse [red]config[/red]"  # text, never markup
        assert table[0][5] == "waiting for release [bold]001[/]"
        assert "queue (2): 002 Add cache, 003 Write docs" in shown(app, "#details")
        await harness.press("o")  # the agent's whole output
        lines = await output_lines(app, harness, 4)
        assert [line for line in lines if line.startswith("step ")] == [
            "step 0 of 001", "step 1 of 001", "step 2 of 001"]
        await harness.press("escape")
        await harness.pause()
        assert not isinstance(app.screen, OutputScreen)

    pilot(run.root, steps)
    run.release("001")
    assert run.finish().returncode == 0
    after = run.frame()
    assert after["loopState"] == "iterations_complete" and not after["agents"]
    assert any(event["itemId"] == "001" and event["text"].startswith("done ")
               for event in after["recent"])


def test_watching_changes_nothing_and_takes_no_lock(run: Run) -> None:
    run.start("--iterations", "1")
    run.release("001")
    assert run.finish().returncode == 0
    before = snapshot(run.root, skip_git=False)
    stamps = {path: path.stat().st_mtime_ns for path in (run.root / ".forge").rglob("*")}
    run.once()
    run.frame()

    async def steps(app: WatchApp, harness) -> None:
        await harness.pause(0.5)  # a few refreshes

    pilot(run.root, steps)
    assert snapshot(run.root, skip_git=False) == before
    assert {path: path.stat().st_mtime_ns
            for path in (run.root / ".forge").rglob("*")} == stamps


# --- a parallel run: live, then a conflict ---------------------------------------------------


def test_a_parallel_run_and_its_conflict(run: Run) -> None:
    run.start("--parallel", "2", "--iterations", "3", FORGE_TEST_CLASH="1")
    frame = run.wait_frame(lambda f: len(f["agents"]) == 2 and all(
        a["lastLine"].startswith("waiting") for a in f["agents"]), "two agents at work")
    assert sorted(agent["itemId"] for agent in frame["agents"]) == ["001", "002"]
    assert all(agent["worktree"] for agent in frame["agents"])
    assert [entry["id"] for entry in frame["queue"]] == ["003"]

    async def steps(app: WatchApp, harness) -> None:
        assert sorted(row[0] for row in rows(app)) == ["001", "002"]

    pilot(run.root, steps)
    run.release("001")
    run.wait_frame(lambda f: [a["itemId"] for a in f["agents"]] != ["001", "002"] and
                   "001" not in [a["itemId"] for a in f["agents"]], "001 to land")
    run.release("002", "003")  # 002 rewrote the line 001 changed: a conflict
    run.finish()
    after = run.frame()
    waiting_ids = {entry["id"]: entry for entry in after["waiting"]}
    assert "002" in waiting_ids and waiting_ids["002"]["kind"] == "needs-human"
    assert any(event["type"] == "merge_conflict" and event["itemId"] == "002"
               for event in after["recent"])
    lines = run.once()
    assert any(line.startswith("waiting on a decision (") for line in lines)
    assert any(line.startswith("  002  needs-human: ") for line in lines)
    assert any(line.endswith("002 merge conflict") for line in lines)

    async def conflict(app: WatchApp, harness) -> None:
        assert "002  needs-human: " in shown(app, "#details")
        assert "agents: none running" in shown(app, "#details")

    pilot(run.root, conflict)


# --- a usage-limit wait, and a loop that died ----------------------------------------------


def test_a_usage_limit_wait_counts_down(templates: Templates, tmp_path: Path) -> None:
    root = templates.copy("watch-three", build, tmp_path / "repo")
    fakes = FakeAgents(tmp_path)
    fakes.plan({"001": [{"do": "rejected", "resets_in": 600}, {"do": "done"}]})
    loop = subprocess.Popen(forge_argv() + ["loop", "run", "--agent", "claude"], cwd=root,
                            env={**os.environ, **fakes.env}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        def frame() -> dict:
            return json.loads(run_forge("watch", "--json", cwd=root).stdout)

        waiting.wait_for(lambda: frame()["secondsLeft"], timeout=30, what="the run to wait")
        live = frame()
        assert live["loopAlive"] and 500 < live["secondsLeft"] <= 601
        lines = run_forge("watch", "--once", cwd=root, env={"COLUMNS": ""}).stdout.splitlines()
        assert (f"waiting for the agent's usage limit until {live['waitingUntil']} — 9:"
                in lines[2]) and lines[2].endswith(" left"), lines

        async def steps(app: WatchApp, harness) -> None:
            assert "waiting for the agent's usage limit until" in shown(app, "#run")

        pilot(root, steps)
    finally:
        run_forge("loop", "stop", cwd=root)
        waiting.communicate(loop, timeout=30)
    # stopped during its wait: when the limit lifts is kept, and said as such
    after = frame()
    assert not after["loopAlive"] and after["waitingUntil"] == live["waitingUntil"]
    lines = run_forge("watch", "--once", cwd=root, env={"COLUMNS": ""}).stdout.splitlines()
    assert any(line.startswith(f"the agent's usage limit lifts at {live['waitingUntil']} (in 9:")
               and line.endswith("a run started before then waits for it") for line in lines)


def test_a_dead_loop_is_said_to_have_ended_without_shutting_down(run: Run) -> None:
    run.start()
    run.wait_frame(lambda f: f["agents"], "an agent to start")
    assert run.loop is not None
    os.kill(run.loop.pid, signal.SIGKILL)
    waiting.communicate(run.loop, timeout=10)
    frame = run.wait_frame(lambda f: not f["loopAlive"], "the lock to be free")
    assert frame["endedWithoutShutdown"] and frame["loopState"] == "stopped"
    assert frame["agents"] == []  # no live run supervises an agent now
    lines = run.once()
    assert lines[0].startswith(
        "loop: stopped — the loop ended without shutting down (git forge recover)")

    async def steps(app: WatchApp, harness) -> None:
        assert "ended without shutting down" in shown(app, "#run")

    pilot(run.root, steps)


def test_no_run_yet_and_a_narrow_terminal(templates: Templates, tmp_path: Path) -> None:
    root = templates.copy("watch-three", build, tmp_path / "repo")
    lines = run_forge("watch", "--once", cwd=root, env={"COLUMNS": "30"}).stdout.splitlines()
    assert lines[0] == "loop: no run yet"
    assert "agents: none running" in lines
    assert lines[-1].startswith("queue (3): 001 Par") and lines[-1].endswith("…")
    assert all(len(line) <= 30 for line in lines)
    run_forge("backlog", "edit", "001", "--title", "日本語の文字列を解析する", cwd=root)
    wide = run_forge("watch", "--once", cwd=root, env={"COLUMNS": "30"}).stdout.splitlines()
    # a wide character takes two columns: the line is cut to 30 columns, not characters
    assert wide[-1] == "queue (3): 001 日本語の文字列…"  # 29 columns and the ellipsis


def test_bad_flags_are_refused(templates: Templates, tmp_path: Path) -> None:
    root = templates.copy("watch-three", build, tmp_path / "repo")
    result = run_forge("watch", "--interval", "0", cwd=root)
    assert result.returncode == 2
    assert result.stderr == "Error: --interval must be between 0.1 and 3600 seconds\n"


# --- a real terminal beside a real loop ------------------------------------------------------


def _sized(session: PtySession, rows: int = 40, columns: int = 140) -> None:
    fcntl.ioctl(session.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    os.kill(session.pid, signal.SIGWINCH)


def test_the_live_view_in_a_terminal_beside_a_parallel_loop(run: Run) -> None:
    run.start("--parallel", "2", "--iterations", "3")
    run.wait_frame(lambda f: len(f["agents"]) == 2, "two agents at work")
    session = PtySession("watch", "--interval", "0.3", cwd=run.root)
    _sized(session)
    session.expect("loop: running")
    session.expect("Parse [red]config[/red]")
    session.expect("Add cache")
    os.write(session.fd, b"\x03")  # Ctrl-C quits, as q does (the harness's tests press q)
    assert session.finish(timeout=20) == 0
    run.release("001", "002", "003")
    assert run.finish().returncode == 0


def test_once_on_a_terminal_is_coloured_unless_no_color(run: Run) -> None:
    coloured = PtySession("watch", "--once", cwd=run.root)
    assert coloured.finish() == 0
    assert "\x1b[1mloop: no run yet" in coloured.text
    plain = PtySession("watch", "--once", cwd=run.root, env={"NO_COLOR": "1"})
    assert plain.finish() == 0
    assert "\x1b[" not in plain.text and "loop: no run yet" in plain.text


def test_a_gate_s_row_is_named_and_its_command_cut() -> None:
    gate = {"handle": "p-20261204T170000-abcdef", "itemId": None, "title": None,
            "startedAt": None, "elapsedSeconds": 3.0, "outputBytes": 10, "lastLine": "ok",
            "costUsd": None, "worktree": None, "gate": "python3 -c '" + "x" * 100 + "'"}
    cells = agent_cells(gate)  # type: ignore[arg-type]
    assert cells[0] == "baseline"  # the run's baseline check: no item, not a handle
    assert cells[1].startswith("check: python3 -c 'x") and cells[1].endswith("…")
    assert len(cells[1]) == TITLE_COLUMNS


#: A stand-in for Claude Code's stream: two assistant messages, then it waits for
#: ``release-<item>`` before its result (the format ``agent_streams`` holds the real
#: program's to; only what watch reads of it here).
STREAMING_CLAUDE = r'''#!{python}
import json, os, pathlib, sys, time
sys.stdin.read()
item = os.environ["FORGE_ITEM_ID"]
gate = pathlib.Path(os.environ["FORGE_TEST_GATE"])
def say(event):
    print(json.dumps(event), flush=True)
say({{"type": "system", "subtype": "init", "session_id": "s-" + item}})
for text in ("Reading the code.\nIt is small.", "Now writing \x1b[31mthe[/] fix."):
    say({{"type": "assistant", "message": {{"content": [{{"type": "text", "text": text}}]}},
         "session_id": "s-" + item}})
deadline = time.monotonic() + 30
while not (gate / f"release-{{item}}").exists() and time.monotonic() < deadline:
    time.sleep(0.05)
say({{"type": "result", "subtype": "success", "is_error": False, "result": "FORGE_DONE",
     "session_id": "s-" + item, "num_turns": 1, "total_cost_usd": 0.01,
     "usage": {{"input_tokens": 1, "output_tokens": 1}}}})
'''


def test_a_structured_agent_is_watched_as_its_text_not_its_json(run: Run,
                                                                tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text(STREAMING_CLAUDE.format(python=sys.executable))
    claude.chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    run.loop = subprocess.Popen(
        forge_argv() + ["loop", "run", "--agent", "claude", "--iterations", "1"],
        cwd=run.root, env={**os.environ, "PATH": path, "FORGE_TEST_GATE": str(run.gate)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    frame = run.wait_frame(lambda f: f["agents"] and f["agents"][0]["lastLine"],
                           "the agent's text")
    agent = frame["agents"][0]
    assert agent["stream"] == "claude"
    assert agent["lastLine"] == "Now writing the[/] fix."  # its text, cleaned; not JSON

    async def steps(app: WatchApp, harness) -> None:
        assert rows(app)[0][5] == "Now writing the[/] fix."
        await harness.press("o")
        lines = await output_lines(app, harness, 3)
        assert lines[:3] == ["Reading the code.", "It is small.", "Now writing the[/] fix."]

    pilot(run.root, steps)
    run.release("001")
    assert run.finish().returncode == 0
