"""Claude Code and Codex under the loop, end to end: the faithful fakes
(``fake_agents``) first on PATH, real repositories, real processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import waiting
from builders import backlog_repo
from fake_agents import FakeAgents
from helpers import PtySession, forge_argv, git, run_forge, snapshot
from templates import Templates


def build_backlog(root: Path) -> None:
    """Three independent items, 001 first."""
    backlog_repo(root, ("--title", "First", "--priority", "1"),
                 ("--title", "Second", "--priority", "2"),
                 ("--title", "Third", "--priority", "3"))


class Project:
    def __init__(self, root: Path, fakes: FakeAgents) -> None:
        self.root, self.fakes = root, fakes
        self.spawned: list[subprocess.Popen] = []

    @property
    def env(self) -> dict[str, str]:
        return self.fakes.env

    def run(self, *args: str, timeout: float = waiting.PROCESS_TIMEOUT
            ) -> subprocess.CompletedProcess:
        return run_forge("loop", "run", *args, cwd=self.root, env=self.env, timeout=timeout)

    def forge(self, *args: str) -> subprocess.CompletedProcess:
        return run_forge(*args, cwd=self.root, env=self.env)

    def spawn(self, *args: str) -> subprocess.Popen:
        proc = subprocess.Popen(forge_argv() + ["loop", "run", *args], cwd=self.root,
                                env={**os.environ, **self.env}, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.spawned.append(proc)
        return proc

    def items(self) -> dict[str, dict]:
        document = json.loads((self.root / ".forge" / "backlog.json").read_text())
        return {item["id"]: item for item in document["items"]}

    def state(self) -> dict:
        return json.loads((self.root / ".forge" / "state.json").read_text())

    def events(self, kind: str | None = None) -> list[dict]:
        lines = (self.root / ".forge" / "events.ndjson").read_text().splitlines()
        events = [json.loads(line) for line in lines]
        return [event for event in events if kind is None or event["type"] == kind]

    def manifests(self) -> list[dict]:
        found = (self.root / ".forge" / "proc").glob("*.manifest.json")
        return sorted((json.loads(path.read_text()) for path in found),
                      key=lambda manifest: manifest["created_at"])


@pytest.fixture
def project(templates: Templates, tmp_path: Path) -> Iterator[Project]:
    root = templates.copy("agent-backlog", build_backlog, tmp_path / "repo")
    made = Project(root, FakeAgents(tmp_path))
    yield made
    for proc in made.spawned:
        if proc.poll() is None:
            waiting.kill_tree(proc.pid)
            waiting.communicate(proc, timeout=10)


# --- profiles, the signal, --follow, git forge agents ----------------------------------------


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_the_signal_is_read_from_the_result_text(project: Project, agent: str) -> None:
    project.fakes.plan({"001": {"do": "done", "files": {"one.py": "1\n"}},
                        "002": {"do": "done", "signal": "FORGE_BLOCKED: needs a schema"},
                        "003": {"do": "done", "signal": "FORGE_NEEDS_HUMAN: which port?",
                                "say": "FORGE_DONE said mid-stream is not the signal"}})
    result = project.run("--agent", agent, "--agent-arg=--model", "--agent-arg", "m1")
    assert result.returncode == 5, result.stderr
    items = project.items()
    assert items["001"]["status"] == "done"
    assert (items["002"]["status"], items["002"]["blockedReason"]) == ("blocked",
                                                                       "needs a schema")
    assert items["003"]["needsHuman"] and items["003"]["blockedReason"] == "which port?"
    assert "one.py" in git("show", "--name-only", "--format=", "HEAD~2", cwd=project.root)
    start = project.fakes.starts("001")[0]
    if agent == "claude":
        assert start["argv"] == ["claude", "-p", "--output-format", "stream-json", "--verbose",
                                 "--model", "m1"]
    else:
        assert start["argv"] == ["codex", "exec", "--json", "--model", "m1", "-"]
    assert "First" in start["prompt"]  # the prompt came on stdin


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_the_result_text_s_signal_may_be_markdown(project: Project, agent: str) -> None:
    project.fakes.plan({"001": {"do": "done", "signal": "All set.\n\n`FORGE_DONE`"},
                        "002": {"do": "done", "signal": "**FORGE_NEEDS_HUMAN:** which port?"},
                        "003": {"do": "done", "signal": "I will print FORGE_DONE when done."}})
    result = project.run("--agent", agent, "--retries", "0")
    assert result.returncode == 5, result.stderr
    items = project.items()
    assert items["001"]["status"] == "done"
    assert items["002"]["needsHuman"] and items["002"]["blockedReason"] == "which port?"
    assert items["003"]["deferred"]  # a signal mid-prose is no signal


def test_follow_shows_the_assistant_text_not_json(project: Project) -> None:
    project.fakes.plan({"001": {"do": "done", "say": "Reading the module now."}})
    result = project.run("--agent", "claude", "--follow", "--iterations", "1")
    assert result.returncode == 0, result.stderr
    assert "  | Reading the module now." in result.stdout
    assert '"type"' not in result.stdout and "session_id" not in result.stdout


def test_config_selects_the_profile_and_its_args(project: Project) -> None:
    (project.root / ".forge.yaml").write_text(
        "loop:\n  agent: codex\n  agentArgs: [--sandbox, workspace-write, -c, 'model=\"o3\"']\n")
    git("add", ".forge.yaml", cwd=project.root)
    git("commit", "-q", "-m", "config", cwd=project.root)
    assert project.run("--iterations", "1").returncode == 0
    assert project.fakes.starts("001")[0]["argv"] == [
        "codex", "exec", "--json", "--sandbox", "workspace-write", "-c", 'model="o3"', "-"]
    started = project.events("loop_started")[0]
    assert started["profile"] == "codex" and started["agent"][-1] == "-"


@pytest.mark.parametrize(("line", "instead"), [
    ("claude -p --permission-mode acceptEdits",
     "--agent claude --agent-arg=--permission-mode --agent-arg=acceptEdits "
     "(in .forge.yaml: loop.agent: claude, loop.agentArgs: [--permission-mode, acceptEdits])"),
    ("codex exec --json --sandbox workspace-write -",
     "--agent codex --agent-arg=--sandbox --agent-arg=workspace-write "
     "(in .forge.yaml: loop.agent: codex, loop.agentArgs: [--sandbox, workspace-write])"),
])
def test_a_plain_claude_or_codex_command_line_is_warned_of_and_still_runs(
        project: Project, line: str, instead: str) -> None:
    result = project.run("--agent", line, "--iterations", "1")
    assert result.returncode == 0, result.stderr
    name = line.split()[0]
    assert result.stderr.splitlines() == [
        f"warning: the agent command line '{line}' runs {name} as a plain program: git-forge "
        f"reads no cost, waits out no usage limit and resumes no session; its {name} profile "
        f"does: {instead}"]
    assert project.fakes.starts("001")[0]["argv"] == line.split()  # run as given
    quiet = project.run("--agent", name, "--iterations", "1")  # the profile itself: no word
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_a_max_cost_the_agent_reports_no_cost_for_is_said_at_the_start(
        project: Project) -> None:
    for agent, why in (("codex", "codex reports tokens, not what they cost"),
                       ("./agent.sh", "the agent is a plain command line, which reports no "
                                      "cost")):
        if agent == "./agent.sh":
            (project.root / "agent.sh").write_text("#!/bin/sh\necho FORGE_DONE\n")
            (project.root / "agent.sh").chmod(0o755)
            git("add", "agent.sh", cwd=project.root)
            git("commit", "-q", "-m", "agent", cwd=project.root)
        result = project.run("--agent", agent, "--max-cost", "0.001", "--iterations", "1")
        assert result.returncode == 0, result.stderr
        assert result.stderr == f"warning: --max-cost $0.001 cannot stop this run: {why}\n"
    claude = project.run("--agent", "claude", "--max-cost", "100", "--iterations", "1")
    assert claude.returncode == 0 and claude.stderr == ""  # Claude Code reports its cost


def test_agents_lists_profiles_path_and_version(project: Project) -> None:
    listed = json.loads(project.forge("agents", "--json").stdout)
    by_name = {entry["name"]: entry for entry in listed}
    assert by_name["claude"]["path"] == str(project.fakes.bin / "claude")
    assert by_name["claude"]["version"] == "2.0.31"
    assert by_name["claude"]["versionText"] == "2.0.31 (Claude Code)"
    assert by_name["codex"]["version"] == "0.46.0"
    assert by_name["codex"]["versionStatus"] == "older"  # the fakes print old versions
    assert by_name["generic"]["binary"] is None
    plain = project.forge("agents")
    assert plain.returncode == 0 and "claude (2.0.31; older than" in plain.stdout
    missing = run_forge("agents", cwd=project.root, env={"PATH": "/nonexistent"})
    assert "claude: not on PATH" in missing.stdout


# --- receipts ---------------------------------------------------------------------------------


def test_receipts_per_iteration_summed_per_item_and_run(project: Project) -> None:
    usage = {"input_tokens": 100, "cache_read_input_tokens": 10, "output_tokens": 40}
    project.fakes.plan({"001": [{"do": "is_error", "text": "API Error: Overloaded"},
                                {"do": "done", "cost": 0.25, "tokens": usage}],
                        "002": {"do": "done", "cost": 0.5, "tokens": usage}})
    result = project.run("--agent", "claude", "--iterations", "3", "--json")
    assert result.returncode == 0, result.stderr
    exited = project.events("llm_exited")
    assert [event["receipt"]["sessionId"] for event in exited] == [
        "sess-001-0", "sess-001-1", "sess-002-0"]
    assert exited[1]["receipt"]["resumed"] == "sess-001-0"  # the retry resumed the session
    assert exited[2]["receipt"]["resumed"] is None  # never across items
    assert exited[1]["receipt"]["tokens"] == {"input": 100, "output": 40, "cached": 10}
    assert exited[1]["receipt"]["costUsd"] == 0.25 and exited[1]["receipt"]["turns"] == 3
    manifests = project.manifests()
    assert [m["receipt"] for m in manifests] == [e["receipt"] for e in exited]
    summary = json.loads(result.stdout)
    costs = summary["costs"]
    assert costs["run"]["attempts"] == 3 and costs["run"]["costUsd"] == 0.75
    assert costs["items"]["001"]["attempts"] == 2 and costs["items"]["001"]["costUsd"] == 0.25
    status = json.loads(project.forge("status", "--json").stdout)
    assert status["costs"]["run"]["costUsd"] == 0.75
    assert status["costs"]["items"]["002"]["tokens"]["input"] == 100
    text = project.forge("status").stdout
    assert "3 attempts, 1.4k tokens in / 730 out, $0.75 in the last run" in text


def test_codex_reports_tokens_and_never_a_cost(project: Project) -> None:
    project.fakes.plan({"001": {"do": "done", "exit": 1,
                                "tokens": {"input": 500, "cached": 100, "output": 50}}})
    result = project.run("--agent", "codex", "--iterations", "1", "--json")
    assert result.returncode == 0, result.stderr
    assert project.items()["001"]["status"] == "done"  # exit 1 after turn.completed: done
    receipt = project.events("llm_exited")[0]["receipt"]
    assert receipt["exitCode"] == 1 and receipt["sessionId"] == "th-001-0"
    assert receipt["tokens"] == {"input": 500, "output": 50, "cached": 100}
    assert receipt["costUsd"] is None
    assert json.loads(result.stdout)["costs"]["run"]["costUsd"] is None


def test_recover_questions_say_what_an_item_cost_so_far(project: Project) -> None:
    project.fakes.plan({"001": [{"do": "is_error", "text": "API Error: Overloaded", "cost": 0.1},
                                {"do": "done", "cost": 0.3,
                                 "signal": "FORGE_NEEDS_HUMAN: which database?"}]})
    assert project.run("--agent", "claude", "--iterations", "2").returncode == 0
    plan = project.forge("recover", "--plan", "--json")
    document = json.loads(plan.stdout)
    question = next(q for q in document["questions"] if "001" in q["itemIds"])
    assert question["spent"] == {"001": "2 attempts, 2.4k tokens in / 1.3k out, $0.40"}
    assert "Spent so far: 2 attempts, 2.4k tokens in / 1.3k out, $0.40" in question["text"]


# --- the circuit breaker ----------------------------------------------------------------------


def test_a_broken_agent_trips_the_breaker_and_leaves_the_backlog_as_it_was(
        project: Project) -> None:
    project.fakes.plan({item: {"do": "not_logged_in"} for item in ("001", "002", "003")})
    backlog = project.root / ".forge" / "backlog.json"
    before, head = backlog.read_bytes(), git("rev-parse", "HEAD", cwd=project.root)
    result = project.run("--agent", "codex")
    assert result.returncode == 1, result.stderr
    assert len(project.fakes.starts("001")) == 3 and not project.fakes.starts("002")
    assert "failed 3 times in a row the same way (exit 1: not logged in)" in result.stderr
    assert "stderr: ERROR: unexpected status 401 Unauthorized" in result.stderr
    assert backlog.read_bytes() == before
    assert git("rev-parse", "HEAD", cwd=project.root) == head
    assert git("status", "--porcelain", cwd=project.root) == ""
    state = project.state()
    assert state["status"] == "error" and "not logged in" in state["error"]
    tripped = project.events("circuit_breaker")[0]
    assert tripped["signature"] == "exit 1: not logged in" and tripped["itemIds"] == ["001"]


def test_the_breaker_counts_across_items_and_undoes_their_deferrals(project: Project) -> None:
    project.fakes.plan({item: {"do": "is_error"} for item in ("001", "002", "003")})
    backlog = project.root / ".forge" / "backlog.json"
    before = backlog.read_bytes()
    result = project.run("--agent", "claude", "--retries", "0")
    assert result.returncode == 1, result.stderr
    assert "(exit 0: API Error: Rate limit reached)" in result.stderr
    assert "items 001, 002, 003 back to pending" in result.stderr
    assert backlog.read_bytes() == before  # the deferrals of 001 and 002 undone
    subjects = git("log", "--format=%s", cwd=project.root).splitlines()
    assert subjects[0] == "[forge] 001, 002, 003: back to pending (circuit breaker)"
    assert git("diff", "HEAD~3", "HEAD", "--", ".forge/backlog.json", cwd=project.root) == ""


def test_one_failing_item_is_deferred_and_the_others_get_their_turn(project: Project) -> None:
    project.fakes.plan({"001": {"do": "is_error"}})  # the defaults: 3 attempts, breaker at 3
    result = project.run("--agent", "claude")
    assert result.returncode == 5, result.stderr
    assert not project.events("circuit_breaker")
    assert len(project.fakes.starts("001")) == 3
    items = project.items()
    assert items["001"]["deferred"]
    assert items["001"]["blockedReason"].startswith("exit 0: API Error: Rate limit reached")
    assert items["002"]["status"] == items["003"]["status"] == "done"


def test_the_same_failure_on_a_second_item_trips_the_breaker(project: Project) -> None:
    project.fakes.plan({item: {"do": "is_error"} for item in ("001", "002", "003")})
    backlog = project.root / ".forge" / "backlog.json"
    before = backlog.read_bytes()
    result = project.run("--agent", "claude")
    assert result.returncode == 1, result.stderr
    assert "failed 4 times in a row the same way (exit 0: API Error: Rate limit reached)" in (
        result.stderr)
    assert "items 001, 002 back to pending" in result.stderr
    assert len(project.fakes.starts("001")) == 3 and len(project.fakes.starts("002")) == 1
    assert not project.fakes.starts("003")
    assert backlog.read_bytes() == before  # 001's deferral undone
    assert project.events("circuit_breaker")[0]["itemIds"] == ["001", "002"]


def test_a_plain_agent_failing_the_same_way_on_two_items_trips_the_breaker(
        project: Project, tmp_path: Path) -> None:
    """A plain command line's failure has no classified kind: its exit code and last
    error line are its signature, an address in it aside."""
    agent = tmp_path / "overloaded.sh"
    agent.write_text("#!/bin/sh\ncat >/dev/null\necho working\n"
                     "echo \"Traceback (pid $$)\" >&2\n"
                     "echo \"RuntimeError:  model overloaded, see https://x.test/$$\" >&2\n"
                     "exit 1\n")
    agent.chmod(0o755)
    before = (project.root / ".forge" / "backlog.json").read_bytes()
    result = project.run("--agent", str(agent))
    assert result.returncode == 1, result.stderr
    assert ("failed 4 times in a row the same way (exit 1: RuntimeError: model overloaded, "
            "see <address>)") in result.stderr
    assert "items 001, 002 back to pending" in result.stderr
    assert (project.root / ".forge" / "backlog.json").read_bytes() == before
    assert project.events("circuit_breaker")[0]["itemIds"] == ["001", "002"]


def test_a_plain_agent_failing_differently_per_item_does_not_trip_the_breaker(
        project: Project, tmp_path: Path) -> None:
    agent = tmp_path / "tests.sh"
    agent.write_text("#!/bin/sh\ncat >/dev/null\n"
                     "echo \"error: test_$FORGE_ITEM_ID failed\" >&2\nexit 1\n")
    agent.chmod(0o755)
    result = project.run("--agent", str(agent), "--retries", "0")
    assert result.returncode == 5, result.stderr
    assert not project.events("circuit_breaker")
    assert all(item["deferred"] for item in project.items().values())


def test_a_success_between_two_items_failing_alike_starts_the_count_again(
        project: Project) -> None:
    project.fakes.plan({"001": {"do": "is_error"}, "002": {"do": "done"},
                        "003": {"do": "is_error"}})
    result = project.run("--agent", "claude")
    assert result.returncode == 5, result.stderr
    assert not project.events("circuit_breaker")
    items = project.items()
    assert items["001"]["deferred"] and items["003"]["deferred"]
    assert items["002"]["status"] == "done"


def test_different_failures_do_not_trip_the_breaker(project: Project) -> None:
    project.fakes.plan({"001": [{"do": "not_logged_in"}, {"do": "is_error"},
                                {"do": "not_logged_in"}]})
    result = project.run("--agent", "claude", "--iterations", "3")
    assert result.returncode == 0, result.stderr
    assert project.items()["001"]["deferred"]
    assert project.items()["001"]["blockedReason"].startswith("exit 1: not logged in")
    assert not project.events("circuit_breaker")


# --- usage limits -----------------------------------------------------------------------------


def _stamp(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_a_usage_limit_is_waited_out_then_the_same_item_resumes(project: Project) -> None:
    project.fakes.plan({"001": [{"do": "rejected", "resets_in": 2}, {"do": "done"}]})
    session = PtySession("loop", "run", "--agent", "claude", "--iterations", "1",
                         "--retries", "0", cwd=project.root, env=project.env)
    session.expect("waiting for the agent's usage limit until")
    session.expect("waiting for the usage limit to lift — 0:0")  # the countdown, on a terminal
    assert session.finish() == 0  # the limited attempt counted for nothing
    assert "this run 1 done" in session.text
    assert project.items()["001"]["status"] == "done"
    wait = project.events("usage_limit_wait")[0]
    assert wait["itemId"] == "001" and wait["source"] == "agent"
    assert "until " + wait["until"] in session.text
    second = project.events("llm_spawned")[1]
    assert _stamp(second["timestamp"]) >= _stamp(wait["until"])
    starts = project.fakes.starts("001")
    assert starts[1]["argv"][-1] == "--resume=sess-001-0"
    assert project.events("llm_exited")[1]["receipt"]["resumed"] == "sess-001-0"
    assert project.state()["waitingUntil"] is None


def test_a_limit_wait_survives_sigkill_and_the_next_run_waits_too(project: Project) -> None:
    project.fakes.plan({"001": [{"do": "rejected", "resets_in": 4}, {"do": "done"}]})
    first = project.spawn("--agent", "claude")
    state = project.root / ".forge" / "state.json"
    waiting.wait_for(lambda: state.exists() and json.loads(state.read_text()).get("waitingUntil"),
                     timeout=30, what="the first run to record its wait")
    until = _stamp(json.loads(state.read_text())["waitingUntil"])
    os.kill(first.pid, signal.SIGKILL)
    waiting.communicate(first, timeout=10)
    assert project.items()["001"]["status"] == "pending"
    result = project.run("--agent", "claude", "--iterations", "1")
    assert result.returncode == 0, result.stderr
    recorded = project.events("usage_limit_wait")[0]
    assert recorded["source"] == "recorded" and _stamp(recorded["until"]) == until
    spawned = project.events("llm_spawned")[0]
    assert _stamp(spawned["timestamp"]) >= until  # it started no agent before the limit lifted
    assert project.items()["001"]["status"] == "done"


def test_the_work_of_an_item_waiting_out_a_limit_is_its_own_after_sigkill(
        project: Project) -> None:
    """Killed during the wait, the run leaves the attempt's changes in the tree for
    the retry: state.json names the item they are the work of."""
    project.fakes.plan({"001": {"do": "rejected", "resets_in": 120, "files": {"x.txt": "x\n"}}})
    first = project.spawn("--agent", "claude")
    state = project.root / ".forge" / "state.json"
    waiting.wait_for(lambda: state.exists() and json.loads(state.read_text()).get("waitingUntil"),
                     timeout=30, what="the run to record its wait")
    os.kill(first.pid, signal.SIGKILL)
    waiting.communicate(first, timeout=10)
    assert git("status", "--porcelain", "--", "x.txt", cwd=project.root) == "?? x.txt\n"
    assert project.state()["currentItem"] == "001" and project.state()["runningItems"] == []
    result = project.run("--agent", "claude")
    assert result.returncode == 2, result.stderr
    assert "STOP: a previous git-forge run left work in the tree." in result.stderr
    assert "item in flight: 001" in result.stderr
    assert "did not make" not in result.stderr
    plan = json.loads(project.forge("reconcile", "--json").stdout)
    groups = [(group["kind"], group["itemId"], [p["path"] for p in group["paths"]])
              for group in plan["groups"]]
    assert ("item", "001", ["x.txt"]) in groups


def test_on_limit_stop_ends_the_run_with_exit_4_and_when_to_come_back(
        project: Project) -> None:
    lisbon = ZoneInfo("Europe/Lisbon")
    ahead = (datetime.now(lisbon) + timedelta(hours=2)).replace(second=0, microsecond=0)
    clock = f"{ahead.hour % 12 or 12}:{ahead.minute:02d}{'pm' if ahead.hour >= 12 else 'am'}"
    project.fakes.plan({"001": {"do": "limit_text",
                                "message": f"You've hit your limit · resets {clock} "
                                           "(Europe/Lisbon)"}})
    result = project.run("--agent", "claude", "--on-limit", "stop")
    assert result.returncode == 4, result.stderr
    until = project.state()["waitingUntil"]
    # Told to the minute: the limit lifts when that minute has ended.
    assert _stamp(until).astimezone(lisbon) == ahead + timedelta(minutes=1)
    assert f"it lifts at {until}: come back then" in result.stderr
    assert project.items()["001"]["status"] == "pending"
    assert project.state()["status"] == "stopped"
    again = project.run("--agent", "claude", "--on-limit", "stop")  # still ahead: no agent
    assert again.returncode == 4 and f"lifts at {until}: come back then" in again.stderr
    assert len(project.fakes.starts("001")) == 1
    assert project.state()["waitingUntil"] == until


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_a_limit_no_clock_lifts_stops_with_exit_4(project: Project, agent: str) -> None:
    project.fakes.plan({"001": {"do": "admin_disabled"}})
    result = project.run("--agent", agent)
    assert result.returncode == 4, result.stderr
    assert "disabled by your admin" in result.stderr
    assert len(project.fakes.starts("001")) == 1 and not project.events("usage_limit_wait")
    assert project.items()["001"]["status"] == "pending"


def test_a_limit_without_a_time_waits_the_configured_default(project: Project) -> None:
    (project.root / ".forge.yaml").write_text("loop:\n  limitWait: 0.02\n")
    git("add", ".forge.yaml", cwd=project.root)
    git("commit", "-q", "-m", "config", cwd=project.root)
    project.fakes.plan({"001": [{"do": "limit_text", "message": "You've hit your usage limit."},
                                {"do": "done"}]})
    result = project.run("--agent", "codex", "--iterations", "1")
    assert result.returncode == 0, result.stderr
    wait = project.events("usage_limit_wait")[0]
    assert "no time given: waiting loop.limitWait, 1.2 seconds" in wait["reason"]
    assert project.fakes.starts("001")[1]["argv"][-3:] == ["resume", "th-001-0", "-"]


def test_loop_stop_ends_a_limit_wait_at_once(project: Project) -> None:
    project.fakes.plan({"001": {"do": "rejected", "resets_in": 600}})
    proc = project.spawn("--agent", "claude")
    state = project.root / ".forge" / "state.json"
    waiting.wait_for(lambda: state.exists() and json.loads(state.read_text()).get("waitingUntil"),
                     timeout=30, what="the run to start waiting")
    deadline = waiting.Deadline(10)
    assert project.forge("loop", "stop").returncode == 0
    out, err = waiting.communicate(proc, timeout=10)
    assert proc.returncode == 130, err
    assert not deadline.passed
    assert project.state()["status"] == "stopped" and project.state()["waitingUntil"]
    assert project.items()["001"]["status"] == "pending"
    assert "to lift —" not in out and "\x1b" not in out  # no countdown off a terminal


# --- backstops --------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", ["claude", "generic"])
def test_an_agent_silent_past_the_idle_timeout_is_ended(project: Project, agent: str) -> None:
    project.fakes.plan({"001": {"do": "hang", "seconds": 300}, "002": {"do": "done"}})
    command = "claude" if agent == "claude" else f"{project.fakes.bin / 'codex'} exec --json -"
    deadline = waiting.Deadline(30)
    result = project.run("--agent", command, "--idle-timeout", "0.02", "--retries", "0",
                         "--iterations", "2")
    assert result.returncode == 0, result.stderr
    assert not deadline.passed
    item = project.items()["001"]
    assert item["deferred"] and item["blockedReason"].startswith("idle for 1.2 seconds")
    exited = project.events("llm_exited")
    assert exited[0]["state"] in ("terminated", "killed")
    assert exited[1]["state"] == "exited"  # 002 talked, ended by itself
    if agent == "claude":
        assert project.items()["002"]["status"] == "done"


def test_an_agent_that_keeps_talking_is_not_idle(project: Project) -> None:
    project.fakes.plan({"001": {"do": "silent_then_done", "seconds": 0.3}})
    result = project.run("--agent", "claude", "--idle-timeout", "0.05", "--iterations", "1")
    assert result.returncode == 0, result.stderr
    assert project.items()["001"]["status"] == "done"


def test_max_cost_starts_no_iteration_past_it(project: Project) -> None:
    project.fakes.plan({item: {"do": "done", "cost": 0.5} for item in ("001", "002", "003")})
    result = project.run("--agent", "claude", "--max-cost", "0.9", "--json")
    assert result.returncode == 4, result.stderr
    summary = json.loads(result.stdout)
    assert "cost $1.00, reaching --max-cost $0.90" in summary["message"]
    items = project.items()
    assert [items[i]["status"] for i in ("001", "002", "003")] == ["done", "done", "pending"]
    assert not project.fakes.starts("003")
    assert project.events("max_cost_reached")[0]["costUsd"] == 1.0


def test_max_tokens_stops_an_agent_that_reports_no_cost(project: Project) -> None:
    # Codex reports tokens, not what they cost: the token cap stops its run.
    project.fakes.plan({item: {"do": "done"} for item in ("001", "002", "003")})
    result = project.run("--agent", "codex", "--max-tokens", "3000", "--json")
    assert result.returncode == 4, result.stderr
    summary = json.loads(result.stdout)
    items = project.items()
    done = [i for i in ("001", "002", "003") if items[i]["status"] == "done"]
    used = project.events("max_tokens_reached")[0]["tokens"]
    assert used >= 3000 and len(done) < 3 and not project.fakes.starts("003")
    assert f"used {used:,} tokens, reaching --max-tokens 3,000" in summary["message"]
    assert summary["costs"]["run"]["costUsd"] is None  # never an invented price


def test_max_duration_starts_nothing_once_the_run_is_that_old(project: Project) -> None:
    project.fakes.plan({"001": {"do": "silent_then_done", "seconds": 1.5},
                        "002": {"do": "done"}, "003": {"do": "done"}})
    result = project.run("--agent", "claude", "--max-duration", "0.02", "--parallel", "1")
    assert result.returncode == 4, result.stderr
    items = project.items()
    assert items["001"]["status"] == "done"  # the running agent finished its work
    assert [items[i]["status"] for i in ("002", "003")] == ["pending", "pending"]
    (reached,) = project.events("max_duration_reached")
    assert reached["maxDurationMinutes"] == 0.02 and reached["minutes"] >= 0.02
    assert "reaching --max-duration 0.02 min" in result.stderr


def test_max_tokens_with_a_plain_command_line_is_said_at_the_start(project: Project) -> None:
    (project.root / "agent.sh").write_text("#!/bin/sh\necho FORGE_DONE\n")
    (project.root / "agent.sh").chmod(0o755)
    git("add", "agent.sh", cwd=project.root)
    git("commit", "-q", "-m", "agent", cwd=project.root)
    result = project.run("--agent", "./agent.sh", "--max-tokens", "10", "--iterations", "1")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ("warning: --max-tokens 10 cannot stop this run: the agent is a "
                             "plain command line, which reports no tokens\n")


def test_a_cap_below_a_cent_is_shown_with_its_digits(project: Project) -> None:
    project.fakes.plan({"001": {"do": "done", "cost": 0.0012}})
    result = project.run("--agent", "claude", "--max-cost", "0.001")
    assert result.returncode == 4, result.stderr
    assert "stopped: this run's agents cost $0.0012, reaching --max-cost $0.001 (1 attempt, " \
        in result.stderr  # it said $0.00 and $0.00
    assert result.stderr.rstrip("\n").endswith(", $0.0012)")
    assert "spent: 1 attempt, 1.2k tokens in / 650 out, $0.0012" in result.stdout


# --- resume -----------------------------------------------------------------------------------


def test_a_retry_after_an_idle_kill_resumes_the_session(project: Project) -> None:
    project.fakes.plan({"001": [{"do": "hang", "seconds": 300}, {"do": "done"}]})
    result = project.run("--agent", "codex", "--idle-timeout", "0.02", "--iterations", "2")
    assert result.returncode == 0, result.stderr
    first, second = project.fakes.starts("001")
    assert first["argv"] == ["codex", "exec", "--json", "-"]
    assert second["argv"] == ["codex", "exec", "--json", "resume", "th-001-0", "-"]
    receipts = [event["receipt"] for event in project.events("llm_exited")]
    assert [(r["sessionId"], r["resumed"]) for r in receipts] == [
        ("th-001-0", None), ("th-001-0", "th-001-0")]


def test_resume_sessions_off_starts_every_retry_afresh(project: Project) -> None:
    (project.root / ".forge.yaml").write_text("loop:\n  resumeSessions: false\n")
    git("add", ".forge.yaml", cwd=project.root)
    git("commit", "-q", "-m", "config", cwd=project.root)
    project.fakes.plan({"001": [{"do": "is_error"}, {"do": "done"}]})
    assert project.run("--agent", "claude", "--iterations", "2").returncode == 0
    assert not any(arg.startswith("--resume") for start in project.fakes.starts("001")
                   for arg in start["argv"])


# --- notify -----------------------------------------------------------------------------------

NOTIFIER = r'''
import json, pathlib, sys
event = json.loads(sys.stdin.read())
with open(sys.argv[1], "a") as out:
    out.write(json.dumps(event) + "\n")
sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
'''


def _notifier(project: Project, exit_code: int = 0) -> tuple[str, Path]:
    script = project.fakes.bin.parent / "notifier.py"
    script.write_text(NOTIFIER)
    received = project.fakes.bin.parent / "notified dir" / "events.ndjson"
    received.parent.mkdir(exist_ok=True)
    return (f"{sys.executable} {script} '{received}' {exit_code}", received)


def _received(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_notify_tells_once_per_event_even_across_runs(project: Project) -> None:
    command, received = _notifier(project)
    project.fakes.plan({"001": [{"do": "rejected", "resets_in": 4}, {"do": "done"}],
                        "002": {"do": "done", "signal": "FORGE_NEEDS_HUMAN: which port?"}})
    first = project.spawn("--agent", "claude", "--notify", command)
    waiting.wait_for(lambda: _received(received), timeout=30, what="the limit notification")
    os.kill(first.pid, signal.SIGKILL)
    waiting.communicate(first, timeout=10)
    result = project.run("--agent", "claude", "--notify", command)  # it waits, as before
    assert result.returncode == 5, result.stderr
    again = project.run("--agent", "claude", "--notify", command)  # 002 still waits
    assert again.returncode == 5, again.stderr
    events = _received(received)
    assert [event["event"] for event in events] == ["usage_limit_wait", "waiting_for_decision"]
    limit, decision = events
    assert limit["itemId"] == "001" and limit["until"] and limit["project"] == str(project.root)
    assert decision["itemIds"] == ["002"] and decision["items"][0]["reason"] == "which port?"
    assert json.loads((project.root / ".forge" / "notified.json").read_text())["sent"]


#: Rounds of Ctrl-C at a waiting loop, half of them a burst.
INTERRUPT_ROUNDS = 12
#: How long a burst of SIGINTs lasts, sent as fast as they go.
BURST_SECONDS = 0.02


def test_ctrl_c_always_stops_a_waiting_loop_run_through_git(project: Project) -> None:
    """``git forge loop run`` waiting out a usage limit on a terminal; SIGINT to its
    process group, as Ctrl-C sends it, twice in a row or in a burst: git forwards
    its own copy to git-forge each time, so the loop gets several at once. A handler
    that took the stop event's lock hung here on a signal landing inside the one
    before. Every round ends: git-forge stops the run (recorded as stopped), then
    git ends of the SIGINT, which a shell reports as 130; run without git, the loop
    exits 130 itself. The first round's agent meets the limit; the later rounds
    wait out the limit it recorded."""
    project.fakes.plan({"001": {"do": "rejected", "resets_in": 3600}})
    for number in range(INTERRUPT_ROUNDS):
        session = PtySession("loop", "run", "--agent", "claude", cwd=project.root,
                             env=project.env, through_git=True)
        session.expect("waiting for the usage limit to lift")
        os.killpg(session.pid, signal.SIGINT)
        os.killpg(session.pid, signal.SIGINT)
        burst = waiting.Deadline(BURST_SECONDS if number % 2 else 0)
        while not burst.passed:
            os.killpg(session.pid, signal.SIGINT)
        try:
            status = session.finish(timeout=10)
        except AssertionError as exc:
            raise AssertionError(f"round {number} of {INTERRUPT_ROUNDS}: {exc}") from None
        assert status == -signal.SIGINT, f"round {number}: {status}\n{session.text}"
        assert project.state()["status"] == "stopped", f"round {number}"
        assert project.events()[-1]["type"] == "loop_cancelled", f"round {number}"
    # git-forge's own exit code, which git does not pass on when it dies of the signal.
    session = PtySession("loop", "run", "--agent", "claude", cwd=project.root, env=project.env)
    session.expect("waiting for the usage limit to lift")
    os.killpg(session.pid, signal.SIGINT)
    os.killpg(session.pid, signal.SIGINT)
    assert session.finish(timeout=10) == 130, session.text
    assert "stopped: this run 0 done" in session.text
    assert len(project.fakes.starts("001")) == 1
    assert project.items()["001"]["status"] == "pending"


def test_a_failing_notifier_is_journaled_and_never_stops_the_loop(project: Project) -> None:
    command, received = _notifier(project, exit_code=3)
    project.fakes.plan({"001": {"do": "done", "signal": "FORGE_NEEDS_HUMAN: which port?"}})
    result = project.run("--agent", "claude", "--notify", command, "--pause-on-needs-human")
    assert result.returncode == 3, result.stderr
    assert _received(received)[0]["event"] == "paused_human"
    failed = project.events("notify_failed")[0]
    assert failed["event"] == "paused_human" and "exited 3" in failed["error"]
    missing = project.run("--agent", "claude", "--notify", "/nonexistent/notifier")
    assert missing.returncode == 5, missing.stderr  # 001 waits; nothing ran the notifier
    assert project.events("notify_failed")[0]["error"].startswith("/nonexistent/notifier")


def test_notify_on_the_breaker_and_on_a_stop(project: Project) -> None:
    command, received = _notifier(project)
    project.fakes.plan({"001": {"do": "not_logged_in"}})
    assert project.run("--agent", "claude", "--notify", command).returncode == 1
    tripped = _received(received)[-1]
    assert tripped["event"] == "circuit_breaker"
    assert tripped["signature"] == "exit 1: not logged in"
    project.fakes.plan({"001": {"do": "hang", "seconds": 300}})
    proc = project.spawn("--agent", "claude", "--notify", command)
    waiting.wait_for(lambda: project.fakes.starts("001")[3:], timeout=30,
                     what="the agent to start")
    assert project.forge("loop", "stop").returncode == 0
    waiting.communicate(proc, timeout=30)
    assert proc.returncode == 130
    assert _received(received)[-1]["event"] == "stopped"


# --- the real thing ---------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("claude") is None, reason="the claude CLI is not installed")
@pytest.mark.timeout(900)
def test_the_real_claude_without_credentials_trips_the_breaker(
        project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
                 "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"):
        monkeypatch.delenv(name, raising=False)
    result = run_forge("loop", "run", "--agent", "claude", "--timeout", "3",
                       cwd=project.root, timeout=800)  # the real PATH, an empty HOME
    assert result.returncode == 1, result.stdout + result.stderr
    assert "circuit breaker: the agent failed 3 times in a row the same way" in result.stderr
    assert len(project.events("llm_spawned")) <= 3
    assert all(item["status"] == "pending" for item in project.items().values())


def test_the_readme_commands_for_claude_and_codex_work_as_written(project: Project) -> None:
    from test_readme_flow import section_commands

    commands = section_commands("Running Claude Code, Codex, Gemini CLI, Qwen Code, "
                                "Copilot CLI and OpenCode")
    assert [words[:4] for words in commands] == [
        ["git", "forge", "agents"], *[["git", "forge", "loop", "run"]] * 6]
    # Gemini CLI and Qwen Code run for real in tests/test_real_agents.py: here, their lines
    # name their profiles with the flags a user gives them
    assert [words[4:] for words in commands[3:]] == [
        ["--agent", "gemini", "--agent-arg=--approval-mode=auto_edit"],
        ["--agent", "qwen", "--agent-arg=--yolo"],
        ["--agent", "copilot", "--agent-arg=--allow-all-tools"],
        ["--agent", "opencode", "--agent-arg=--auto"]]
    project.fakes.plan({"001": {"do": "done"}, "002": {"do": "done"}, "003": {"do": "done"}})
    listed = project.forge(*commands[0][2:])
    assert "claude (2.0.31;" in listed.stdout and "codex (0.46.0;" in listed.stdout
    first = project.run(*commands[1][4:], "--iterations", "1")
    assert first.returncode == 0, first.stderr
    assert project.fakes.starts("001")[0]["argv"][-2:] == ["--permission-mode", "acceptEdits"]
    second = project.run(*commands[2][4:])
    assert second.returncode == 0, second.stderr
    assert project.fakes.starts("002")[0]["argv"] == [
        "codex", "exec", "--json", "--sandbox", "workspace-write", "-"]
    assert "spent: 2 attempts" in second.stdout  # codex: tokens, no cost


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "config", "error"), [
    (["--on-limit", "later"], None, "argument --on-limit: invalid choice: 'later'"),
    (["--max-consecutive-failures", "0"], None, "--max-consecutive-failures must be at least 1"),
    (["--idle-timeout", "0"], None, "--idle-timeout must be a positive number of minutes"),
    (["--max-cost", "-1"], None, "--max-cost must be a number of US dollars, 0 or more"),
    (["--max-cost", "inf"], None, "--max-cost must be a number of US dollars, 0 or more"),
    (["--max-tokens", "0"], None, "--max-tokens must be at least 1"),
    (["--max-duration", "0"], None, "--max-duration must be a positive number of minutes"),
    ([], "loop:\n  timeoutMinutes: .nan\n", "timeoutMinutes must be a finite number (got nan)"),
    ([], "loop:\n  timeoutMinutes: .inf\n", "timeoutMinutes must be a finite number (got inf)"),
    ([], "loop:\n  maxCostUsd: .inf\n", "loop.maxCostUsd must be a finite number (got inf)"),
    ([], "supervisor:\n  graceSeconds: 1000000000\n",
     "supervisor.graceSeconds must be at most 1,000,000 (got 1000000000)"),
    ([], "loop:\n  onLimit: later\n",
     'loop.onLimit must be "wait" or "stop" or "fallback" (got "later")'),
    ([], "loop:\n  agentArgs: 5\n", "loop.agentArgs must be a list of strings (got 5)"),
    ([], "loop:\n  agentArgs: [--model, 5]\n", "loop.agentArgs must be a list of strings"),
    (["--notify", "'unclosed"], None, "cannot split the notify command line"),
])
def test_bad_agent_options_are_refused_and_change_nothing(
        project: Project, args: list[str], config: str | None, error: str) -> None:
    if config is not None:
        (project.root / ".forge.yaml").write_text(config)
    before = snapshot(project.root)
    result = project.run("--agent", "claude", *args)
    assert result.returncode == 2
    assert result.stderr.startswith("Error: ") and error in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert snapshot(project.root) == before and not project.fakes.starts("001")


def test_a_corrupt_receipts_ledger_is_refused_never_overwritten(project: Project) -> None:
    ledger = project.root / ".forge" / "receipts.json"
    ledger.write_text('{"items": ')
    before = snapshot(project.root)
    result = project.run("--agent", "claude")
    assert result.returncode == 2 and "receipts.json is corrupt" in result.stderr
    assert snapshot(project.root) == before and not project.fakes.starts("001")
    assert json.loads(project.forge("status", "--json").stdout)["costs"] is None
    # With an earlier run's sums to fold into it, the fold refuses it, before any step.
    (project.root / ".forge" / "run").mkdir()
    (project.root / ".forge" / "run" / "receipts.json").write_text(
        '{"schemaVersion":"1","runId":"20250101T000000Z-abcdef","folded":false,'
        '"totals":{"attempts":1},"items":{"001":{"attempts":1}}}\n')
    before = snapshot(project.root)
    result = project.run("--agent", "claude")
    assert result.returncode == 2 and "receipts.json is corrupt" in result.stderr
    assert snapshot(project.root) == before and not project.fakes.starts("001")


# --- the same with items in parallel ----------------------------------------------------------


def test_parallel_runs_add_up_receipts(project: Project) -> None:
    usage = {"input_tokens": 100, "cache_read_input_tokens": 10, "output_tokens": 40}
    project.fakes.plan({item: {"do": "done", "cost": 0.25, "tokens": usage,
                               "files": {f"{item}.py": "x\n"}} for item in ("001", "002", "003")})
    result = project.run("--agent", "claude", "--parallel", "2", "--json")
    assert result.returncode == 0, result.stderr
    assert {item["status"] for item in project.items().values()} == {"done"}
    status = json.loads(project.forge("status", "--json").stdout)
    assert status["costs"]["run"]["attempts"] == 3
    assert status["costs"]["run"]["costUsd"] == 0.75
    assert len(project.events("llm_exited")) == 3
    assert all(event["receipt"]["costUsd"] == 0.25 for event in project.events("llm_exited"))


def test_parallel_runs_trip_the_breaker(project: Project) -> None:
    project.fakes.plan({item: {"do": "not_logged_in"} for item in ("001", "002", "003")})
    result = project.run("--agent", "codex", "--parallel", "2")
    assert result.returncode == 1, result.stderr
    assert "failed 3 times in a row the same way (exit 1: not logged in)" in result.stderr
    assert {item["status"] for item in project.items().values()} == {"pending"}
    assert not any(item.get("deferred") for item in project.items().values())
    assert project.state()["status"] == "error"
    assert project.events("circuit_breaker")
    starts = sum(len(project.fakes.starts(item)) for item in ("001", "002", "003"))
    assert starts <= 4  # the attempt that tripped it, and at most one running beside it


def test_parallel_runs_stop_at_a_usage_limit_with_on_limit_stop(project: Project) -> None:
    project.fakes.plan({"001": {"do": "limit_text",
                                "message": "You've hit your limit · resets 1pm (Europe/Lisbon)"},
                        "002": {"do": "done", "files": {"two.py": "2\n"}},
                        "003": {"do": "done", "files": {"three.py": "3\n"}}})
    result = project.run("--agent", "claude", "--parallel", "2", "--on-limit", "stop")
    assert result.returncode == 4, result.stderr
    assert "come back then" in result.stderr
    assert project.items()["001"]["status"] == "pending"
    assert project.state()["waitingUntil"]


def test_parallel_agents_that_met_one_limit_all_wait_it_out(project: Project) -> None:
    # Three agents meet the account's limit at once. The run waits it out on the first
    # report; the others are read after that wait, when the limit's end has passed —
    # but each was reported before it, so it is no "limit reported after its reset"
    # (a failed attempt, deferring its item here), only a limit that has lifted.
    step = [{"do": "rejected", "resets_in": 4}, {"do": "done"}]
    project.fakes.plan({item: [dict(each, files={f"{item}.py": "x\n"}) for each in step]
                        for item in ("001", "002", "003")})
    result = project.run("--agent", "claude", "--parallel", "3", "--retries", "0")
    assert result.returncode == 0, result.stderr
    assert {item["status"] for item in project.items().values()} == {"done"}
    assert "reported after its reset" not in result.stdout
    assert len(project.events("usage_limit_wait")) == 3


def _zone_where_it_is(clock: tuple[int, int, int]) -> tuple[str, timezone]:
    """A POSIX ``TZ`` in which it is ``clock`` (hour, minute, second) now, and its zone."""
    now = datetime.now(UTC)
    wanted = now.replace(hour=clock[0], minute=clock[1], second=clock[2], microsecond=0)
    ahead = round((wanted - now).total_seconds()) % 86400
    ahead -= 86400 if ahead > 43200 else 0
    hours, rest = divmod(abs(ahead), 3600)
    sign = "-" if ahead >= 0 else "+"  # POSIX counts west of Greenwich
    return (f"<FTZ>{sign}{hours:02d}:{rest // 60:02d}:{rest % 60:02d}",
            timezone(timedelta(seconds=ahead)))


def test_parallel_agents_limit_times_are_read_as_of_when_they_said_them(
        project: Project) -> None:
    # Codex says a limit that lifts today by the clock alone: "try again at 11:59 PM".
    # Two agents say so a few seconds before midnight; the run waits out the first
    # past midnight and only then reads the second, which is still today's 11:59 PM —
    # read as of midnight past, it was tomorrow's, a wait of a day.
    zone, offset = _zone_where_it_is((23, 59, 52))
    # A misread wait of a day is cut to 12 s (and said so in its reason).
    (project.root / ".forge.yaml").write_text("loop:\n  limitWaitMax: 0.2\n")
    git("commit", "-q", "-m", "config", ".forge.yaml", cwd=project.root)
    step = [{"do": "limit_text", "message": "You've hit your usage limit. Try again at 11:59 PM."},
            {"do": "done"}]
    project.fakes.plan({"001": [dict(each, files={"one.py": "1\n"}) for each in step],
                        "002": [dict(each, files={"two.py": "2\n"}) for each in step]})
    result = run_forge("loop", "run", "--agent", "codex", "--parallel", "2", "--iterations", "4",
                       cwd=project.root, env={**project.env, "TZ": zone})
    ended = [_stamp(each["timestamp"]).astimezone(offset) for each in project.events("llm_exited")]
    if ended[1].hour != 23:
        pytest.skip("the machine was too slow: its agents ended after midnight")
    assert result.returncode == 0, result.stderr
    assert {item["status"] for item in project.items().values()} == {"done"}
    waits = project.events("usage_limit_wait")
    assert len(waits) == 2 and not any("limitWaitMax" in wait["reason"] for wait in waits)
    midnight = ended[0].replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
    assert all(_stamp(wait["until"]) - midnight < timedelta(minutes=1) for wait in waits)


def test_parallel_runs_end_an_agent_silent_past_the_idle_timeout(project: Project) -> None:
    project.fakes.plan({"001": {"do": "hang", "seconds": 300},
                        "002": {"do": "done", "files": {"two.py": "2\n"}}})
    deadline = waiting.Deadline(30)
    result = project.run("--agent", "claude", "--parallel", "2", "--idle-timeout", "0.02",
                         "--retries", "0", "--iterations", "2")
    assert result.returncode == 0, result.stderr
    assert not deadline.passed
    item = project.items()["001"]
    assert item["deferred"] and item["blockedReason"].startswith("idle for 1.2 seconds")
    assert project.items()["002"]["status"] == "done"


@pytest.mark.parametrize("agent_args", [("--full-auto",), ("--sandbox", "workspace-write")])
def test_a_command_line_the_program_refuses_stops_the_run_at_once(
        project: Project, agent_args: tuple[str, ...]) -> None:
    # --full-auto is gone from Codex; exec's flags after `resume` are refused (the
    # fake says so as codex-cli 0.171.0 does: clap's usage text, exit 2).
    if agent_args[0] == "--sandbox":  # a fresh attempt takes it; its resumed retry must too
        project.fakes.plan({"001": [{"do": "done", "signal": "no signal yet"},
                                    {"do": "done"}]})
    backlog = project.root / ".forge" / "backlog.json"
    before = backlog.read_bytes()
    result = project.run("--agent", "codex", *(f"--agent-arg={arg}" for arg in agent_args),
                         "--iterations", "2")
    if agent_args[0] == "--sandbox":  # the flags go before `resume`: accepted
        assert result.returncode == 0, result.stderr
        assert project.fakes.starts("001")[1]["argv"] == [
            "codex", "exec", "--json", "--sandbox", "workspace-write", "resume", "th-001-0",
            "-"]
        return
    assert result.returncode == 2, result.stderr
    assert "the agent refused its command line (error: unexpected argument '--full-auto' " \
           "found)" in result.stderr
    assert "try '--help'" not in result.stderr  # its real error line, not its last
    assert len(project.events("llm_spawned")) == 1  # no retry, no other item
    assert backlog.read_bytes() == before  # the item is pending as it was
    assert project.events("agent_command_refused")[0]["itemId"] == "001"
    assert project.state()["status"] == "error"


@pytest.mark.parametrize("lines", [
    ("2026-12-04T12:38:49 ERROR: upstream returned HTTP 502",
     "2026-12-04T12:39:02.118Z ERROR: upstream returned HTTP 502"),
    ("12:38:49 upstream 502 from 10.0.0.4:8443", "12:41:07 upstream 502 from 10.0.0.17:8443"),
    ("error: request 3f2b8c1e-9a7d-4c2b-8e1f-0a9b8c7d6e5f failed",
     "error: request 0b1c2d3e-4f5a-4b6c-9d8e-7f6a5b4c3d2e failed"),
    ("error: trace 9f86d081884c7d65 failed", "error: trace 2c26b46b68ffc68f failed"),
])
def test_what_differs_between_attempts_of_one_failure_is_left_out_of_its_signature(
        lines: tuple[str, str]) -> None:
    """A log line's timestamp, an IP address and a request's id differ between attempts
    of the same failure: the circuit breaker compares the lines without them."""
    from git_forge.loop.iteration import AgentResult
    from git_forge.loop.signals import NO_SIGNAL

    first, second = (AgentResult("h", NO_SIGNAL, 1, "exited", False, "exit 1", error=line)
                     for line in lines)
    assert first.failure_signature() == second.failure_signature() is not None


def test_numbers_that_tell_failures_apart_stay_in_the_signature() -> None:
    from git_forge.loop.iteration import AgentResult
    from git_forge.loop.signals import NO_SIGNAL

    one, two = (AgentResult("h", NO_SIGNAL, 1, "exited", False, "exit 1",
                            error=f"FAILED tests/test_api.py::test_item_{n} - assert 1 == {n}")
                for n in (3, 4))
    assert one.failure_signature() != two.failure_signature()


def test_a_deferral_counts_the_attempts_of_earlier_runs_too(project: Project,
                                                           tmp_path: Path) -> None:
    """The run's retries bound its own attempts; an item tried in an earlier run too has
    had more, and its reason says so (the receipts' count)."""
    agent = tmp_path / "crashes.sh"
    agent.write_text("#!/bin/sh\ncat >/dev/null\necho \"error: the build tool crashed ($$)\" "
                     ">&2\nexit 1\n")  # each attempt its own words: no circuit breaker
    agent.chmod(0o755)
    first = project.run("--agent", str(agent), "--iterations", "1")
    assert project.items()["001"]["status"] == "pending", first.stdout + first.stderr
    second = project.run("--agent", str(agent))
    reason = project.items()["001"].get("blockedReason"), second.stdout + second.stderr
    assert reason[0] is not None and reason[0].startswith(
        "exit 1: error: the build tool crashed (") and reason[0].endswith(
        ") — deferred after 3 attempts in this run (4 in all)"), reason


# --- a fallback agent -------------------------------------------------------------------------


def test_a_limit_falls_back_to_the_other_agent_until_it_lifts(project: Project) -> None:
    # Claude Code's limit lifts in 4 s: 001's retry and 002 run on Codex meanwhile, then
    # 003 on Claude Code again
    project.fakes.plan({"001": [{"do": "rejected", "resets_in": 4}, {"do": "done"}],
                        "002": [{"do": "silent_then_done", "seconds": 5}],
                        "003": [{"do": "done"}]})
    result = project.run("--agent", "claude", "--on-limit", "fallback",
                         "--fallback-agent", "codex")
    assert result.returncode == 0, result.stderr
    items = project.items()
    assert [items[i]["status"] for i in ("001", "002", "003")] == ["done"] * 3
    agents = [(event["itemId"], event["receipt"].get("agent"))
              for event in project.events("llm_exited")]
    assert agents == [("001", "claude"), ("001", "codex"), ("002", "codex"), ("003", "claude")]
    (fell,) = project.events("agent_fallback")
    assert fell["agent"] == "codex" and fell["itemId"] == "001"
    assert not project.events("usage_limit_wait")  # nothing waited
    assert project.fakes.starts("001")[1]["argv"] == ["codex", "exec", "--json", "-"]
    assert "001 and the items after it run on codex until then" in result.stdout


def test_on_limit_fallback_needs_an_agent_to_fall_back_to(project: Project) -> None:
    before = (project.root / ".forge" / "backlog.json").read_bytes()
    result = project.run("--agent", "claude", "--on-limit", "fallback")
    assert result.returncode == 2
    assert result.stderr == ("Error: --on-limit fallback needs the agent to fall back to: "
                             "--fallback-agent (loop.fallbackAgent)\n")
    assert (project.root / ".forge" / "backlog.json").read_bytes() == before


def test_max_duration_bounds_a_usage_limit_wait(project: Project) -> None:
    project.fakes.plan({"001": [{"do": "rejected", "resets_in": 600}, {"do": "done"}]})
    deadline = waiting.Deadline(30)
    result = project.run("--agent", "claude", "--max-duration", "1")
    assert result.returncode == 4, result.stderr
    assert not deadline.passed  # it never began a ten-minute wait
    assert "after --max-duration 1 min ends the run" in result.stderr
    assert not project.events("usage_limit_wait")
    assert project.items()["001"]["status"] == "pending"
