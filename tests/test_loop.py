"""The embedded loop, end to end: real repositories, real agent processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import waiting
from builders import backlog_repo
from helpers import abandoned, forge_argv, git, run_forge
from templates import Templates
from waiting import gone, wait_for

AGENT = r'''
import json, os, pathlib, signal, sys, time
prompt = sys.stdin.read()
item = os.environ["FORGE_ITEM_ID"]
plan = json.loads(pathlib.Path(os.environ["AGENT_PLAN"]).read_text())
log = pathlib.Path(os.environ["AGENT_LOG"])
log.mkdir(exist_ok=True)
attempt = len(list(log.glob(f"{item}-*.txt")))
(log / f"{item}-{attempt}.txt").write_text(prompt)
step = plan.get(item, {"signal": "FORGE_DONE"})
if isinstance(step, list):
    step = step[min(attempt, len(step) - 1)]
if step.get("ignore_term"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
for name, content in step.get("files", {}).items():
    path = pathlib.Path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
for name in step.get("delete", []):
    pathlib.Path(name).unlink()
for args in step.get("git", []):
    import subprocess
    subprocess.run(["git", *args], check=True)
if step.get("late_file"):  # a child that writes a file only as the sweep ends it
    import subprocess
    ready = log / f"{item}-child-ready"
    subprocess.Popen([sys.executable, "-c", (
        "import pathlib, signal, sys, time\n"
        "def end(*_):\n"
        "    time.sleep(0.3)\n"  # within the sweep's grace: long after the agent's exit
        f"    pathlib.Path({step['late_file']!r}).write_text('written as it was ended\\n')\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, end)\n"
        f"pathlib.Path({str(ready)!r}).touch()\n"
        "while True: time.sleep(0.05)\n")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
print("working on", item, flush=True)
if step.get("sleep"):
    (log / f"{item}-running").write_text(str(os.getpid()))
    time.sleep(step["sleep"])
if step.get("stderr"):
    sys.stderr.write(step["stderr"]); sys.stderr.flush()
if step.get("split_signal"):  # the signal line written in two pieces, stderr between
    sys.stdout.write(step["signal"][:6]); sys.stdout.flush(); time.sleep(0.05)
    sys.stderr.write("a warning in the middle\n"); sys.stderr.flush(); time.sleep(0.05)
    print(step["signal"][6:], flush=True)
else:
    print(step.get("signal", ""), flush=True)
if step.get("stderr_after"):
    os.write(2, b"e" * step["stderr_after"])
sys.exit(step.get("exit", 0))
'''


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    path = tmp_path / "agent.py"
    path.write_text(AGENT)
    return path


class Loop:
    """A project with a backlog, a scripted agent and helpers to run the loop."""

    def __init__(self, root: Path, agent: Path, tmp: Path) -> None:
        self.root, self.agent, self.tmp = root, agent, tmp
        self.plan_file = tmp / "plan.json"
        self.spawned: list[subprocess.Popen] = []
        self.log = tmp / "prompts"
        self.plan({})

    def plan(self, plan: dict) -> None:
        self.plan_file.write_text(json.dumps(plan))

    @property
    def env(self) -> dict[str, str]:
        return {"AGENT_PLAN": str(self.plan_file), "AGENT_LOG": str(self.log)}

    def argv(self, *args: str) -> list[str]:
        return ["loop", "run", "--agent", f"{sys.executable} {self.agent}", *args]

    def run(self, *args: str, timeout: float = waiting.PROCESS_TIMEOUT
            ) -> subprocess.CompletedProcess:
        return run_forge(*self.argv(*args), cwd=self.root, env=self.env, timeout=timeout)

    def spawn(self, *args: str) -> subprocess.Popen:
        """A loop in the background; one still running when the test ends is killed."""
        proc = subprocess.Popen(forge_argv() + self.argv(*args), cwd=self.root,
                                env={**os.environ, **self.env}, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.spawned.append(proc)
        return proc

    def kill_spawned(self) -> None:
        for proc in self.spawned:
            if proc.poll() is None:
                waiting.kill_tree(proc.pid)
                waiting.communicate(proc, timeout=10)

    def items(self) -> dict[str, dict]:
        document = json.loads((self.root / ".forge" / "backlog.json").read_text())
        return {item["id"]: item for item in document["items"]}

    def state(self) -> dict:
        return json.loads((self.root / ".forge" / "state.json").read_text())

    def events(self) -> list[dict]:
        path = self.root / ".forge" / "events.ndjson"
        return [json.loads(line) for line in path.read_text().splitlines()]

    def subjects(self) -> list[str]:
        return git("log", "--format=%s", cwd=self.root).splitlines()

    def files_of(self, rev: str) -> list[str]:
        return git("show", "--name-only", "--format=", rev, cwd=self.root).split()


def build_backlog(root: Path) -> None:
    """A repository with a committed backlog of three items, 002 depending on 001."""
    backlog_repo(root, ("--title", "Base module", "--priority", "2"),
                 ("--title", "Depends on base", "--priority", "1", "--depends-on", "001"),
                 ("--title", "Independent", "--priority", "3"))


@pytest.fixture
def loop(templates: Templates, agent: Path, tmp_path: Path) -> Iterator[Loop]:
    root = templates.copy("loop-backlog", build_backlog, tmp_path / "repo")
    made = Loop(root, agent, tmp_path)
    yield made
    made.kill_spawned()


def test_dependent_items_run_to_completion_one_commit_each(loop: Loop) -> None:
    loop.plan({"001": {"signal": "FORGE_DONE", "files": {"base.py": "base\n"}},
               "002": {"signal": "FORGE_DONE", "files": {"dep.py": "dep\n"}},
               "003": {"signal": "RAUF_DONE", "files": {"docs/ind.md": "x\n"}}})
    result = loop.run()
    assert result.returncode == 0, result.stderr
    # Dependencies first, then priority: 001 (P2) before 002 (P1, depends on 001), then 003.
    assert loop.subjects()[:3] == ["[forge] 003: Independent", "[forge] 002: Depends on base",
                                   "[forge] 001: Base module"]
    assert loop.files_of("HEAD~2") == [".forge/backlog.json", "base.py"]
    assert loop.files_of("HEAD~1") == [".forge/backlog.json", "dep.py"]
    assert loop.files_of("HEAD") == [".forge/backlog.json", "docs/ind.md"]
    assert git("status", "--porcelain", cwd=loop.root) == ""
    items = loop.items()
    assert all(item["status"] == "done" and item["completedAt"] for item in items.values())

    state = loop.state()
    assert state["status"] == "complete" and state["iteration"] == 3
    assert state["completedItems"] == ["001", "002", "003"]
    assert state["currentItem"] is None and state["lastSignal"] == "clean"
    assert state["baseCommitHash"] == git("rev-parse", "HEAD~3", cwd=loop.root).strip()
    assert state["runId"] and state["startedAt"].endswith("Z") and state["error"] is None
    events = loop.events()
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert all(e["schemaVersion"] == "1" and e["projectPath"] == str(loop.root)
               for e in events)
    types = [e["type"] for e in events]
    assert types[0] == "loop_started" and types[-1] == "loop_completed"
    assert types.count("llm_spawned") == types.count("llm_exited") == 3
    completed = [e for e in events if e["type"] == "item_completed"]
    assert [(e["itemId"], e["commit"]) for e in completed] == [
        ("001", git("rev-parse", "HEAD~2", cwd=loop.root).strip()),
        ("002", git("rev-parse", "HEAD~1", cwd=loop.root).strip()),
        ("003", git("rev-parse", "HEAD", cwd=loop.root).strip())]
    spawned = next(e for e in events if e["type"] == "llm_spawned")
    assert spawned["itemId"] == "001" and spawned["handle"] and "agent.py" in spawned["command"]
    selected = next(e for e in events if e["type"] == "item_selected")
    assert (selected["itemId"], selected["title"], selected["priority"]) == (
        "001", "Base module", 2)


@pytest.mark.parametrize("watchdog", [True, False])
def test_what_the_tree_writes_as_it_is_ended_is_committed_with_its_item(
    loop: Loop, watchdog: bool
) -> None:
    # The tree is listed once the supervisor is done with it — its leftovers swept —
    # not at the agent's own exit: a child that writes a file as it is terminated has
    # that file committed with the item's work, and nothing is left in the tree.
    if not watchdog:
        with open(loop.root / ".forge.yaml", "a", encoding="utf-8") as config:
            config.write("\nsupervisor:\n  watchdog: false\n")
        git("commit", "-qam", "no watchdog", cwd=loop.root)
    loop.plan({"001": {"signal": "FORGE_DONE", "files": {"base.py": "base\n"},
                       "late_file": "late.txt"}})
    result = loop.run("--iterations", "1")
    assert result.returncode == 0, result.stderr
    assert (loop.root / "late.txt").read_text() == "written as it was ended\n"
    assert sorted(loop.files_of("HEAD")) == [".forge/backlog.json", "base.py", "late.txt"]
    assert git("status", "--porcelain", cwd=loop.root) == ""


def test_needs_human_and_blocked_continue_and_end_with_exit_5(loop: Loop) -> None:
    loop.plan({
        "001": {"signal": "FORGE_NEEDS_HUMAN: Which database, SQLite or Postgres?",
                "files": {"half.py": "half\n"}},
        "003": {"signal": "FORGE_BLOCKED: the API is down"},
    })
    result = loop.run()
    assert result.returncode == 5, result.stderr
    assert "git forge recover" in result.stderr
    items = loop.items()
    assert items["001"]["status"] == "blocked" and items["001"]["needsHuman"] is True
    assert items["001"]["blockedReason"] == "Which database, SQLite or Postgres?"
    assert items["003"]["needsHuman"] is False and items["003"]["deferred"] is False
    assert items["002"]["status"] == "pending"  # its dependency never finished
    assert loop.subjects()[:2] == ["[forge] 003: blocked — the API is down",
                                   "[forge] 001: blocked — Which database, SQLite or Postgres?"]
    assert loop.files_of("HEAD~1") == [".forge/backlog.json"]
    # The needs-human item's half-done work is kept under its ref, not in any commit,
    # and not on the user's stash list.
    [kept] = abandoned(loop.root, "001")
    assert git("log", "-1", "--format=%s", kept, cwd=loop.root) == (
        "On main: forge: abandoned work from item 001\n")
    assert git("stash", "list", cwd=loop.root) == ""
    assert not (loop.root / "half.py").exists()
    assert git("status", "--porcelain", cwd=loop.root) == ""
    state = loop.state()
    assert state["needsHumanItems"] == ["001"] and state["blockedItems"] == ["003"]
    assert state["lastSignal"] == "blocked"
    types = [e["type"] for e in loop.events()]
    assert "needs_human" in types and "item_blocked" in types


def test_pause_on_needs_human_exits_3(loop: Loop) -> None:
    loop.plan({"001": {"signal": "FORGE_NEEDS_HUMAN: which?"}})
    result = loop.run("--pause-on-needs-human")
    assert result.returncode == 3
    assert loop.state()["status"] == "paused_human"
    assert loop.items()["003"]["status"] == "pending"  # nothing ran after the pause
    assert loop.events()[-1]["type"] == "loop_paused"


def test_retries_then_deferral_with_the_exact_reason(loop: Loop) -> None:
    loop.plan({"001": {"signal": "", "exit": 1, "files": {"junk.txt": "x\n"}}})
    result = loop.run("--retries", "2", "--iterations", "3")
    assert result.returncode == 0  # the budget ran out with 003 still selectable
    item = loop.items()["001"]
    assert item["status"] == "blocked" and item["deferred"] is True
    assert item["blockedReason"] == "exit 1 — deferred after 3 attempts"
    assert len(list(loop.log.glob("001-*.txt"))) == 3
    assert loop.state()["iteration"] == 3 and loop.state()["deferredItems"] == ["001"]
    assert len(abandoned(loop.root, "001")) == 3  # each attempt's work, kept
    assert git("stash", "list", cwd=loop.root) == ""


def test_timeout_defers_and_says_so(loop: Loop) -> None:
    loop.plan({"001": {"signal": "FORGE_DONE", "sleep": 60}})
    result = loop.run("--timeout", "0.02", "--retries", "0", "--iterations", "1")
    assert result.returncode == 0, result.stderr
    item = loop.items()["001"]
    assert item["blockedReason"] == (
        "timed out after 1.2 seconds — deferred after 1 attempt")
    exited = next(e for e in loop.events() if e["type"] == "llm_exited")
    assert exited["state"] == "timed_out" and exited["timedOut"] is True


def test_blocked_leftovers_never_reach_the_next_commit(loop: Loop) -> None:
    loop.plan({"001": {"signal": "FORGE_BLOCKED: nope", "files": {"left.txt": "x\n",
                                                                   "README.md": "edited\n"}},
               "003": {"signal": "FORGE_DONE", "files": {"ok.txt": "ok\n"}}})
    assert loop.run().returncode == 5
    assert loop.files_of("HEAD") == [".forge/backlog.json", "ok.txt"]
    stash = git("stash", "show", "--include-untracked", "--name-only",
                abandoned(loop.root, "001")[-1], cwd=loop.root).split()
    assert sorted(stash) == ["README.md", "left.txt"]
    assert (loop.root / "README.md").read_text() == "# test repository\n"


def test_the_human_answer_reaches_the_next_prompt_and_is_cleared(loop: Loop) -> None:
    loop.plan({"001": [{"signal": "FORGE_NEEDS_HUMAN: which colour?"},
                       {"signal": "FORGE_DONE", "files": {"colour.txt": "blue\n"}}]})
    assert loop.run("--iterations", "1").returncode == 0
    assert "human's answer" not in (loop.log / "001-0.txt").read_text()
    answered = run_forge("backlog", "answer", "001", "Blue, like the sea.", cwd=loop.root)
    assert answered.returncode == 0
    git("commit", "-qam", "answer", cwd=loop.root)
    assert loop.run("--iterations", "1").returncode == 0
    prompt = (loop.log / "001-1.txt").read_text()
    assert ("## Your question, and the human's answer\nYour previous attempt asked:\n"
            "> which colour?\n\nThe human's answer:\nBlue, like the sea.\n") in prompt
    item = loop.items()["001"]
    assert item["status"] == "done"
    assert not {"humanAnswer", "answeredReason", "answeredKind"} & set(item)


def test_a_crash_s_answer_reaches_the_prompt_as_what_failed_and_what_the_human_says(
        loop: Loop) -> None:
    loop.plan({"001": [{"exit": 1, "stderr": "RuntimeError: the mirror is down\n"},
                       {"signal": "FORGE_DONE"}]})
    assert loop.run("--iterations", "1", "--retries", "0").returncode == 0
    item = loop.items()["001"]
    reason = "exit 1: RuntimeError: the mirror is down — deferred after 1 attempt"
    assert item["deferred"] and item["blockedReason"] == reason
    answered = run_forge("backlog", "answer", "001", "Use the second mirror.", cwd=loop.root)
    assert answered.returncode == 0, answered.stderr
    item = loop.items()["001"]
    assert (item["answeredReason"], item["answeredKind"]) == (reason, "failure")
    assert "blockedReason" not in item
    git("commit", "-qam", "answer", cwd=loop.root)
    assert loop.run("--iterations", "1").returncode == 0
    prompt = (loop.log / "001-1.txt").read_text()
    assert ("## Your earlier attempts failed, and what the human says\n"
            f"Your earlier attempts failed:\n> {reason}\n\n"
            "The human says:\nUse the second mirror.\n") in prompt
    assert "Your question" not in prompt and "asked:" not in prompt  # it asked nothing


def test_refusals(loop: Loop) -> None:
    (loop.root / "stray.txt").write_text("x")
    result = loop.run()
    assert result.returncode == 2 and "uncommitted changes" in result.stderr
    assert not (loop.root / ".forge" / "state.json").exists()
    (loop.root / "stray.txt").unlink()
    git("checkout", "-q", "--detach", cwd=loop.root)
    result = loop.run()
    assert result.returncode == 2 and "detached" in result.stderr
    git("checkout", "-q", "main", cwd=loop.root)
    result = run_forge("loop", "run", cwd=loop.root)  # no agent configured
    assert result.returncode == 2 and result.stderr.startswith("Error: no agent")


def test_a_second_loop_on_the_same_backlog_is_refused(loop: Loop) -> None:
    loop.plan({"001": {"signal": "FORGE_DONE", "sleep": 30}})
    first = loop.spawn("--iterations", "1")
    try:
        running_agent(loop, "001")
        second = loop.run()
        assert second.returncode == 2
        state = loop.state()
        assert second.stderr == (
            f"Error: a loop is running on this backlog (run {state['runId']}, started "
            f"{state['startedAt']}); stop it with git forge loop stop, or wait for it to end\n")
    finally:
        assert run_forge("loop", "stop", cwd=loop.root).returncode == 0
        waiting.communicate(first)


def running_agent(loop: Loop, item: str) -> int:
    """The pid the scripted agent writes once it runs (the file may be empty at first)."""
    marker = loop.log / f"{item}-running"
    wait_for(lambda: marker.exists() and marker.read_text().strip().isdigit(),
             what=f"the agent of {item} running")
    return int(marker.read_text())


def test_loop_stop_ends_a_run_whose_agent_ignores_sigterm(loop: Loop) -> None:
    (loop.root / ".forge.yaml").write_text("supervisor:\n  graceSeconds: 0.5\n")
    git("commit", "-qam", "short grace", cwd=loop.root)
    loop.plan({"001": {"signal": "FORGE_DONE", "sleep": 120, "ignore_term": True,
                       "files": {"partial.txt": "half\n"}}})
    proc = loop.spawn()
    agent_pid = running_agent(loop, "001")
    stop = run_forge("loop", "stop", cwd=loop.root)
    assert stop.returncode == 0
    out, err = waiting.communicate(proc)
    assert proc.returncode == 130, err
    assert not psutil.pid_exists(agent_pid) or psutil.Process(agent_pid).status() == (
        psutil.STATUS_ZOMBIE)
    state = loop.state()
    assert state["status"] == "stopped" and state["currentItem"] == "001"
    assert loop.items()["001"]["status"] == "pending"
    assert loop.events()[-1]["type"] == "loop_cancelled"
    exited = next(e for e in loop.events() if e["type"] == "llm_exited")
    assert exited["state"] == "killed"
    # The agent's partial work is left for the operator, and the next launch stops on it.
    assert (loop.root / "partial.txt").exists()
    assert run_forge("preflight", cwd=loop.root).returncode == 1
    assert run_forge("loop", "stop", cwd=loop.root).returncode == 1  # nothing runs now


def test_sigkill_mid_iteration_then_a_new_run_restores(loop: Loop) -> None:
    loop.plan({"001": [{"signal": "FORGE_DONE", "sleep": 3, "files": {"wip.txt": "wip\n"}},
                       {"signal": "FORGE_DONE", "files": {"base.py": "base\n"}}]})
    proc = loop.spawn()
    agent_pid = running_agent(loop, "001")
    os.kill(proc.pid, signal.SIGKILL)
    waiting.communicate(proc, timeout=30)
    # The crash left the item in_progress (bookkeeping) and the agent's work in the tree.
    assert loop.items()["001"]["status"] == "in_progress"
    wait_for(lambda: gone(agent_pid), timeout=30)
    stopped = run_forge("preflight", cwd=loop.root)
    assert stopped.returncode == 1 and "wip.txt" in stopped.stderr
    assert ".forge/backlog.json" not in stopped.stderr  # the mark is the runner's own
    reconciled = run_forge("reconcile", "--json", "--discard", "item-001",
                           "--confirm-discard", cwd=loop.root)
    assert reconciled.returncode == 0, reconciled.stderr
    before = loop.subjects()
    result = loop.run("--iterations", "1")
    assert result.returncode == 0, result.stderr
    manifests = list((loop.root / ".forge" / "proc").glob("*.manifest.json"))
    states = sorted(json.loads(m.read_text())["state"] for m in manifests)
    assert states == ["exited", "lost_on_restore"]
    lost = [e for e in loop.events() if e["type"] == "process_lost"]
    assert len(lost) == 1 and lost[0]["itemId"] == "001"
    assert loop.items()["001"]["status"] == "done"
    new = loop.subjects()[: len(loop.subjects()) - len(before)]
    assert new == ["[forge] 001: Base module", "[forge] 001: back to pending (process lost)"]
    assert "lost when a run crashed" in loop.items()["001"]["notes"]


def test_json_summary_and_ndjson_stream(loop: Loop) -> None:
    loop.plan({"001": {"signal": "FORGE_DONE"}, "002": {"signal": "FORGE_DONE"},
               "003": {"signal": "FORGE_DONE"}})
    result = loop.run("--json", "--iterations", "1")
    summary = json.loads(result.stdout)
    assert (summary["status"], summary["exitCode"], result.returncode) == (
        "iterations_complete", 0, 0)
    assert summary["state"]["completedItems"] == ["001"]
    said = loop.run("--iterations", "1")  # the text words it; --json keeps the identifier
    assert ("iteration limit reached: this run 1 done, 0 need a human, 0 blocked, 0 deferred"
            in said.stdout.splitlines()) and "iterations_complete" not in said.stdout
    result = loop.run("--ndjson")
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events == loop.events()
    stop = run_forge("loop", "stop", "--json", cwd=loop.root)
    assert (stop.returncode, json.loads(stop.stdout)) == (1, {"requested": False})


def test_force_launches_on_a_dirty_tree_and_leaves_that_work_alone(loop: Loop) -> None:
    (loop.root / "mine.txt").write_text("operator's work\n")
    (loop.root / "README.md").write_text("operator edit\n")
    loop.plan({"001": {"signal": "FORGE_DONE", "files": {"base.py": "b\n"}},
               "003": {"signal": "FORGE_BLOCKED: later", "files": {"tmp.txt": "t\n"}}})
    result = loop.run("--force", "--iterations", "3")
    assert result.returncode == 5, result.stderr  # 001, 002 done; 003 blocked
    for rev in ("HEAD", "HEAD~1", "HEAD~2"):
        assert not {"mine.txt", "README.md"} & set(loop.files_of(rev))
    assert (loop.root / "mine.txt").read_text() == "operator's work\n"
    assert (loop.root / "README.md").read_text() == "operator edit\n"
    stash = git("stash", "show", "--include-untracked", "--name-only",
                abandoned(loop.root, "003")[-1], cwd=loop.root).split()
    assert stash == ["tmp.txt"]


def test_an_agent_s_edit_left_uncommitted_is_never_reported_plainly_done(loop: Loop) -> None:
    # --force leaves the operator's changed README.md alone; 001's agent edits it too
    (loop.root / "README.md").write_text("operator edit\n")
    loop.plan({"001": {"signal": "FORGE_DONE",
                       "files": {"README.md": "operator edit\nagent edit\n", "new.py": "n\n"}}})
    result = loop.run("--force", "--iterations", "2")
    assert result.returncode == 0, result.stderr
    assert "README.md" not in loop.files_of("HEAD~1") and "new.py" in loop.files_of("HEAD~1")
    why = "it had changes before the run (--force) and changed again during this attempt"
    said = f"README.md ({why}) stays uncommitted in"
    finished = next(line for line in result.stdout.splitlines() if line.startswith("  001 done"))
    assert ", but not all of it: " + said in finished
    assert f"  001  done, but {said} {loop.root}" in result.stdout.splitlines()
    # 002's agent left README.md alone: plainly done
    assert next(line for line in result.stdout.splitlines()
                if line.startswith("  002 done")).count("not all") == 0
    completed = {e["itemId"]: e for e in loop.events() if e["type"] == "item_completed"}
    assert completed["001"]["uncommitted"] == [{"path": "README.md", "why": why}]
    assert completed["001"]["uncommittedIn"] == str(loop.root)
    assert "uncommitted" not in completed["002"]
    assert (loop.root / "README.md").read_text() == "operator edit\nagent edit\n"


def test_an_agent_that_commits_a_file_changed_before_the_run_leaves_nothing_behind(
        loop: Loop) -> None:
    (loop.root / "README.md").write_text("operator edit\n")
    loop.plan({"001": {"signal": "FORGE_DONE", "files": {"README.md": "both\n"},
                       "git": [["commit", "-qam", "the agent's own commit"]]}})
    result = loop.run("--force", "--iterations", "1")
    assert result.returncode == 0, result.stderr
    assert "not all of it" not in result.stdout  # nothing is left: git status is clean
    assert git("status", "--porcelain", cwd=loop.root) == ""


def test_a_later_item_s_edit_inside_a_path_left_earlier_is_said(loop: Loop) -> None:
    # 001 makes a nested repository (never committed); 002 writes inside it
    loop.plan({"001": {"signal": "FORGE_DONE", "git": [["init", "-q", "sub"]],
                       "files": {"sub/f": "one\n", "a.py": "a\n"}},
               "002": {"signal": "FORGE_DONE", "files": {"sub/g": "two\n", "b.py": "b\n"}}})
    result = loop.run("--iterations", "2")
    assert result.returncode == 0, result.stderr
    completed = {e["itemId"]: e for e in loop.events() if e["type"] == "item_completed"}
    assert [entry["path"] for entry in completed["001"]["uncommitted"]] == ["sub"]
    left = completed["002"]["uncommitted"]
    assert [entry["path"] for entry in left] == ["sub"]
    assert left[0]["why"].startswith("an earlier item left it uncommitted (")
    assert any(line.startswith("  002 done: ") and "not all of it: sub (an earlier item" in line
               for line in result.stdout.splitlines()), result.stdout


def test_an_external_runner_loop_is_started_after_the_pre_launch_check(
    git_repo: Path, tmp_path: Path
) -> None:
    log = tmp_path / "runner.log"
    runner = tmp_path / "rauf"
    runner.write_text(f"#!{sys.executable}\nimport sys, pathlib\n"
                      f"pathlib.Path({str(log)!r}).write_text(' '.join(sys.argv[1:]))\n"
                      "sys.exit(5)\n")
    runner.chmod(0o755)
    (git_repo / ".forge.yaml").write_text(
        f"loopRunner:\n  bin: {runner}\n  runCommand: '{{bin}} run . --backlog {{backlogDir}}'\n")
    git("add", ".forge.yaml", cwd=git_repo)
    git("commit", "-qm", "external runner", cwd=git_repo)
    result = run_forge("loop", "run", cwd=git_repo)
    assert result.returncode == 5, result.stderr  # the runner's own status
    assert log.read_text() == "run . --backlog .forge"
    log.unlink()
    (git_repo / "stray.txt").write_text("x")
    refused = run_forge("loop", "run", cwd=git_repo)
    assert refused.returncode == 2 and "uncommitted changes" in refused.stderr
    assert not log.exists()  # never started on a dirty tree
    wrong = run_forge("loop", "run", "--agent", "x", "--force", cwd=git_repo)
    assert wrong.returncode == 2 and wrong.stderr.startswith("Error: --agent is for the embedded")


def test_a_crash_and_a_timeout_are_deferred_with_different_reasons(loop: Loop) -> None:
    loop.plan({"001": {"signal": "", "exit": 1,
                       "stderr": "Traceback (most recent call last):\n  ...\n"
                                 "RuntimeError: model overloaded\n\n"},
               "003": {"signal": "FORGE_DONE", "sleep": 60}})
    result = loop.run("--retries", "0", "--timeout", "0.03", "--iterations", "2")
    assert result.returncode in (0, 5), result.stderr
    items = loop.items()
    assert items["001"]["blockedReason"] == (
        "exit 1: RuntimeError: model overloaded — deferred after 1 attempt")
    assert items["003"]["blockedReason"] == "timed out after 1.8 seconds — deferred after 1 attempt"
    topology = json.loads(run_forge("backlog", "topology", "--cluster", "--json",
                                    cwd=loop.root).stdout)
    assert [cluster["memberIds"] for cluster in topology["clusters"]] == [["001"], ["003"]]


@pytest.mark.parametrize("step", [
    {"signal": "FORGE_DONE", "split_signal": True},       # stderr inside the signal line
    {"signal": "FORGE_DONE", "stderr_after": 1 << 20},    # 1 MiB of stderr after it
])
def test_the_signal_is_read_from_stdout_whatever_stderr_does(loop: Loop, step: dict) -> None:
    loop.plan({"001": step})
    result = loop.run("--iterations", "1", "--retries", "0")
    assert result.returncode == 0, result.stderr
    assert loop.items()["001"]["status"] == "done"
    assert len(list(loop.log.glob("001-*.txt"))) == 1  # read the first time: no retry


def test_the_signal_is_read_as_markdown_writes_it(loop: Loop) -> None:
    loop.plan({"001": {"signal": "Done: the base module is in place.\n\n**FORGE_DONE**",
                       "files": {"base.py": "base\n"}},
               "002": {"signal": "- `FORGE_DONE`."},
               "003": {"signal": "I would have printed FORGE_DONE once it worked.\n"
                                 "**FORGE_BLOCKED:** the mirror refuses the upload"}})
    result = loop.run("--retries", "0")
    assert result.returncode == 5, result.stderr
    items = loop.items()
    assert items["001"]["status"] == items["002"]["status"] == "done"
    assert (items["003"]["status"], items["003"]["blockedReason"]) == (
        "blocked", "the mirror refuses the upload")
    assert not items["003"].get("deferred")
    assert len(list(loop.log.glob("*.txt"))) == 3  # each read the first time: no retry


def test_a_reader_that_goes_away_stops_the_run_like_loop_stop(loop: Loop) -> None:
    loop.plan({"001": {"signal": "FORGE_DONE", "sleep": 30}})
    process = loop.spawn("--ndjson")
    first = waiting.readline(process, 30)
    assert json.loads(first)["type"] == "loop_started"
    process.stdout.close()  # `| head -1`: the reader is gone
    # The next event the loop writes finds the pipe closed and stops the run.
    code = waiting.wait_process(process, 60)
    assert code == 130
    state = loop.state()
    assert state["status"] == "stopped"
    assert loop.items()["001"]["status"] == "pending"
    assert not run_forge("status", "--json", cwd=loop.root).stdout.count('"running"')


def test_the_summary_counts_the_whole_backlog_and_says_what_waits(loop: Loop) -> None:
    loop.plan({"001": {"signal": "FORGE_NEEDS_HUMAN: Which database?"}})
    assert loop.run("--iterations", "1").returncode == 0
    first = loop.items()["001"]
    assert first["blockedAt"].endswith("Z")
    result = loop.run()  # 003 is done; 001 still waits from the earlier run; 002 behind it
    assert result.returncode == 5, result.stderr
    assert result.stdout.splitlines()[-3:] == [
        "complete: this run 1 done, 0 need a human, 0 blocked, 0 deferred",
        "backlog: 3 items — 1 done, 1 pending, 1 waiting on a decision",
        f"  001  needs a human since {first['blockedAt']}: Which database?"]
    assert result.stderr == "run git forge recover to answer them\n"
    document = json.loads(loop.run("--json").stdout)
    assert document["waiting"] == [{"id": "001", "kind": "needs-human",
                                    "since": first["blockedAt"], "reason": "Which database?"}]
    assert document["backlogSummary"]["needsHuman"] == 1


def test_a_blocked_item_s_last_attempt_outlives_prune(loop: Loop) -> None:
    """What a human will read (the blocked attempt's output) is kept whatever the
    run's age; a done item's process from an old run is pruned."""
    (loop.root / ".forge.yaml").write_text("supervisor:\n  keepRuns: 1\n")
    git("add", ".forge.yaml", cwd=loop.root)
    git("commit", "-qm", "keep one run", cwd=loop.root)
    loop.plan({"001": {"signal": "FORGE_DONE"},
               "002": {"signal": "FORGE_BLOCKED: the API is down"}})
    first = loop.run("--iterations", "2")
    assert first.returncode in (0, 5), first.stderr
    spawned = {e["itemId"]: e["handle"] for e in loop.events() if e["type"] == "llm_spawned"}
    proc = loop.root / ".forge" / "proc"
    assert (proc / f"{spawned['002']}.keep").exists()
    assert not (proc / f"{spawned['001']}.keep").exists()
    loop.plan({"003": {"signal": "FORGE_DONE"}})
    second = loop.run()  # a new run: the first one is now older than keepRuns
    assert second.returncode == 5, second.stderr
    pruned = run_forge("proc", "prune", cwd=loop.root)
    assert pruned.returncode == 0, pruned.stderr
    assert (proc / f"{spawned['002']}.manifest.json").exists()
    assert not (proc / f"{spawned['001']}.manifest.json").exists()
    shown = run_forge("proc", "output", spawned["002"], cwd=loop.root)
    assert "FORGE_BLOCKED: the API is down" in shown.stdout
