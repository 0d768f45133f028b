"""An agent's stream is untrusted: what it says never becomes an option of the
retry's command line, a limit that lies never restarts the agent forever nor
crashes a later run, and a number that is not one never reaches a JSON file.

The faithful fakes (``fake_agents``) are first on PATH and write the hostile
streams; each start records its argv. Real repositories, real processes."""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import test_agent_loop
import waiting
from agent_streams import claude_init, claude_result, codex_thread, codex_turn_completed
from helpers import git, snapshot
from test_agent_loop import Project, _stamp

from git_forge.agents.classify import Verdict, classify
from git_forge.agents.profiles import PROFILES
from git_forge.agents.receipt import Receipt, Totals
from git_forge.agents.streams import ClaudeStream, CodexStream, session_problem
from git_forge.cli.output import json_text
from git_forge.errors import StoreError
from git_forge.jsonenc import dumps_indented
from git_forge.jsonfile import dumps_json, write_json
from git_forge.loop.journal import Journal
from git_forge.supervisor.config import SupervisorConfig
from git_forge.supervisor.lifecycle import ProcessError
from git_forge.supervisor.manifest import ManifestStore
from git_forge.supervisor.process import PreparedProcess
from git_forge.supervisor.supervisor import Supervisor

#: The agent-loop tests' project: a committed backlog, fake agents first on PATH.
project = test_agent_loop.project

CLAUDE_FRESH = ["claude", "-p", "--output-format", "stream-json", "--verbose"]
CODEX_FRESH = ["codex", "exec", "--json", "-"]


def _configure(project: Project, text: str) -> None:
    """``.forge.yaml`` holds ``text``, committed (a run refuses a dirty tree)."""
    (project.root / ".forge.yaml").write_text(text)
    git("commit", "-q", "-m", "config", ".forge.yaml", cwd=project.root)


def _no_item_in_progress(project: Project) -> None:
    assert [i for i, item in project.items().items() if item["status"] == "in_progress"] == []


# --- agent-controlled text never becomes an option ---------------------------------------


@pytest.mark.parametrize("session", [
    "--dangerously-skip-permissions", "-p", "a b", "a\0b", "a\nb", "$(touch x)", "a/b", "é",
    "x" * 129, "x" * 300 * 1024, "..", ".", "latest", "LATEST", "3", "007"])
def test_a_session_id_of_any_other_shape_is_refused(session: str) -> None:
    assert session_problem(session) is not None
    for profile in PROFILES.values():
        with pytest.raises(ValueError):
            profile.argv([profile.name], session=session)


def test_a_usable_session_id_is_one_token_or_a_positional() -> None:
    uuid = "98c2057b-69da-4aaa-b964-4c44d5d37d57"
    for usable in (uuid, "th-001-0", "a.b:c_d", "x" * 128):
        assert session_problem(usable) is None
    assert PROFILES["claude"].argv(["claude"], ["--model", "m"], session=uuid) == [
        *CLAUDE_FRESH, "--model", "m", f"--resume={uuid}"]
    assert PROFILES["codex"].argv(["codex"], ["--model", "m"], session=uuid) == [
        "codex", "exec", "--json", "--model", "m", "resume", uuid, "-"]


@pytest.mark.parametrize(("agent", "hostile"), [
    ("claude", "--dangerously-skip-permissions"),
    ("codex", "--dangerously-bypass-approvals-and-sandbox"),
    ("claude", "a\0b"),
    ("codex", "a\0b"),
    ("claude", "x" * 300 * 1024),
])
def test_a_hostile_session_id_is_never_resumed_the_retry_starts_fresh(
        project: Project, agent: str, hostile: str) -> None:
    if agent == "claude":
        project.fakes.plan({"001": [{"do": "is_error", "session": hostile}, {"do": "done"}]})
    else:
        project.fakes.plan({"001": [{"do": "not_logged_in", "thread": hostile},
                                    {"do": "done"}]})
    result = project.run("--agent", agent, "--iterations", "2")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    first, second = project.fakes.starts("001")
    assert second["argv"] == (CLAUDE_FRESH if agent == "claude" else CODEX_FRESH)
    assert project.items()["001"]["status"] == "done"
    _no_item_in_progress(project)
    refused = project.events("agent_report_refused")[0]
    assert refused["itemId"] == "001"
    assert "a retry starts a fresh session" in refused["refused"]["sessionId"]
    receipts = [event["receipt"] for event in project.events("llm_exited")]
    assert [(r["sessionId"], r["resumed"]) for r in receipts][0] == (None, None)
    journal = project.root / ".forge" / "events.ndjson"
    assert journal.stat().st_size < 64 * 1024  # a 300 KiB id is not kept, nor quoted whole


def test_a_hostile_session_id_never_touches_a_neighbouring_agent(project: Project) -> None:
    project.fakes.plan({"001": [{"do": "is_error", "session": "a\0b"},
                                {"do": "done", "files": {"one.py": "1\n"}}],
                        "002": {"do": "silent_then_done", "seconds": 2,
                                "files": {"two.py": "2\n"}}})
    result = project.run("--agent", "claude", "--parallel", "2", "--iterations", "3")
    assert result.returncode == 0, result.stderr
    assert project.items()["001"]["status"] == "done"
    assert project.items()["002"]["status"] == "done"
    _no_item_in_progress(project)
    assert project.fakes.starts("001")[1]["argv"] == CLAUDE_FRESH
    exited = {event["itemId"]: event for event in project.events("llm_exited")}
    assert exited["002"]["state"] == "exited" and exited["002"]["exitCode"] == 0


# --- a start that cannot be made fails alone --------------------------------------------


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[Supervisor]:
    made = Supervisor(SupervisorConfig(grace_seconds=0.3, drain_timeout_seconds=0.3),
                      ManifestStore(tmp_path / "proc"))
    yield made
    made.shutdown()


def _start(supervisor: Supervisor, argv: list[str]) -> str:
    return supervisor.start({"run_id": "run-1"}, {"item_id": "001", "iteration": 1},
                            PreparedProcess(argv, cwd="/"))


def test_an_argument_holding_nul_is_refused_before_anything_starts(
        supervisor: Supervisor, tmp_path: Path) -> None:
    neighbour = _start(supervisor, [sys.executable, "-c", "import time; time.sleep(1)"])
    with pytest.raises(ProcessError) as refused:
        PreparedProcess(["claude", "--resume", "a\0b"], cwd="/")
    assert refused.value.code == "invalid_arguments"
    # Handed straight to the watchdog all the same, it fails that start alone.
    assert supervisor._watchdog is not None
    alive = tmp_path / "probe.alive"
    with pytest.raises(Exception, match="could not start"):
        supervisor._watchdog.spawn(["true", "a\0b"], "/", dict(os.environ), stdin=False,
                                   alive_fd=os.open(alive, os.O_RDWR | os.O_CREAT),
                                   alive_path=str(alive), linger=0.3, leftover_grace=0.3,
                                   orphan_grace=0.3)
    manifest = supervisor.wait(neighbour, timeout=waiting.PROCESS_TIMEOUT)
    assert (manifest.state, manifest.result.exit_code) == ("exited", 0)
    after = supervisor.wait(_start(supervisor, ["true"]), timeout=waiting.PROCESS_TIMEOUT)
    assert (after.state, after.result.exit_code) == ("exited", 0)  # the watchdog serves on


def _feed(reader: ClaudeStream | CodexStream, *lines: str) -> None:
    reader.feed(("\n".join(lines) + "\n").encode())


def test_an_agent_that_cannot_start_leaves_its_item_pending(project: Project) -> None:
    # One argument beyond what exec takes (128 KiB): the start fails, the item is not taken.
    _configure(project, f"loop:\n  agentArgs: [{'x' * 200 * 1024}]\n")
    result = project.run("--agent", "claude")
    assert result.returncode != 0
    assert result.stderr.startswith("Error: could not start the agent")
    assert "Traceback" not in result.stderr
    assert project.items()["001"]["status"] == "pending"
    _no_item_in_progress(project)


# --- limits that lie ----------------------------------------------------------------------


def test_a_limit_still_reported_after_its_reset_is_a_failure_then_a_deferral(
        project: Project) -> None:
    project.fakes.plan({"001": {"do": "rejected", "resets_in": -3600},
                        "002": {"do": "done"}})
    deadline = waiting.Deadline(30)
    result = project.run("--agent", "claude", "--retries", "1", "--iterations", "3",
                         "--max-consecutive-failures", "5")
    assert result.returncode == 0, result.stderr
    assert not deadline.passed and "Traceback" not in result.stderr
    assert len(project.fakes.starts("001")) == 3  # waited out once, then two failures
    assert len(project.events("usage_limit_wait")) == 1
    item = project.items()["001"]
    assert item["deferred"]
    assert item["blockedReason"].startswith("exit 1: usage limit reported after its reset")
    assert project.items()["002"]["status"] == "done"
    _no_item_in_progress(project)


def test_a_limit_that_keeps_being_reported_after_its_reset_trips_the_breaker(
        project: Project) -> None:
    project.fakes.plan({"001": {"do": "rejected", "resets_in": -3600}})
    deadline = waiting.Deadline(30)
    result = project.run("--agent", "claude", "--iterations", "50")
    assert result.returncode == 1, result.stderr
    assert not deadline.passed
    assert "(exit 1: usage limit reported after its reset)" in result.stderr
    assert len(project.fakes.starts("001")) == 4  # once waited out, three alike in a row
    assert project.items()["001"]["status"] == "pending"
    _no_item_in_progress(project)


@pytest.mark.parametrize(("agent", "message"), [
    ("claude", "You've hit your limit · try again at 9999-12-31 23:59"),
    ("codex", "You've hit your usage limit. Try again in 99999999999 days."),
    ("codex", "You've hit your usage limit. Try again at 9999-12-31T23:59:59-12:00."),
])
def test_a_limit_time_no_clock_can_reach_is_waited_at_most_the_ceiling(
        project: Project, agent: str, message: str) -> None:
    _configure(project, "loop:\n  limitWaitMax: 0.02\n")
    project.fakes.plan({"001": [{"do": "limit_text", "message": message}, {"do": "done"}]})
    deadline = waiting.Deadline(30)
    result = project.run("--agent", agent, "--iterations", "1")
    assert result.returncode == 0, result.stderr
    assert not deadline.passed and "Traceback" not in result.stderr
    wait = project.events("usage_limit_wait")[0]
    assert "waiting at most loop.limitWaitMax, 1.2 seconds" in wait["reason"]
    spawned = project.events("llm_spawned")
    assert _stamp(wait["until"]) - _stamp(spawned[0]["timestamp"]) < timedelta(seconds=30)
    assert project.items()["001"]["status"] == "done"
    assert project.state()["waitingUntil"] is None


def test_on_limit_stop_records_a_time_within_the_ceiling(project: Project) -> None:
    message = "You've hit your limit · try again at 9999-12-31 23:59"
    project.fakes.plan({"001": {"do": "limit_text", "message": message}})
    for _ in range(2):  # the second run reads what the first recorded
        result = project.run("--agent", "claude", "--on-limit", "stop")
        assert result.returncode == 4, result.stderr
        assert "Traceback" not in result.stderr
    until = _stamp(project.state()["waitingUntil"])
    assert until - datetime.now(UTC) <= timedelta(days=7)
    assert len(project.fakes.starts("001")) == 1
    _no_item_in_progress(project)


@pytest.mark.parametrize("recorded", [
    "9999-12-31T23:59:59Z", "9999-12-31T23:59:59-12:00", "2126-01-01T00:00:00Z", "not a time",
    "2026-13-45T99:99:99Z"])
def test_a_recorded_wait_no_run_could_have_written_is_discarded(
        project: Project, recorded: str) -> None:
    project.fakes.plan({"001": {"do": "done"}, "002": {"do": "done"}})
    assert project.run("--agent", "claude", "--iterations", "1").returncode == 0
    state_file = project.root / ".forge" / "state.json"
    state = json.loads(state_file.read_text())
    state_file.write_text(json.dumps({**state, "waitingUntil": recorded}, indent=2))
    deadline = waiting.Deadline(30)
    result = project.run("--agent", "claude", "--iterations", "1")
    assert result.returncode == 0, result.stderr
    assert not deadline.passed and "Traceback" not in result.stderr
    discarded = project.events("usage_limit_discarded")[0]
    assert f"waitingUntil {recorded!r}" in discarded["reason"]
    assert not project.events("usage_limit_wait")
    assert project.items()["002"]["status"] == "done"
    assert project.state()["waitingUntil"] is None


# --- numbers from agents ------------------------------------------------------------------


def _not_json(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999: valid syntax, but no number JSON can mean
        raise ValueError(f"{text} is not a finite number")
    return value


def strict_json(text: str | bytes) -> object:
    """``json.loads`` refusing what Python accepts but JSON is not: NaN, infinities."""
    return json.loads(text, parse_constant=_not_json, parse_float=_finite)


def test_a_cost_or_count_that_is_not_one_is_unknown_and_said_so() -> None:
    reader = ClaudeStream()
    _feed(reader, claude_init("s"), claude_result("s", "FORGE_DONE", usage={
        "input_tokens": -1, "output_tokens": 10, "cache_read_input_tokens": 2.5})
        .replace('"total_cost_usd":0.0123', '"total_cost_usd":1e999'))
    facts = reader.finish()
    assert (facts.cost_usd, facts.input_tokens, facts.output_tokens, facts.cached_tokens) == (
        None, None, 10, None)
    assert set(facts.refused) == {"costUsd", "tokens.input", "tokens.cached"}
    assert "inf is not a cost: recorded as unknown" in facts.refused["costUsd"]
    codex = CodexStream()
    _feed(codex, codex_thread("th"), codex_turn_completed(5, 1, 7),
          codex_turn_completed(-9, 1, 14))
    facts = codex.finish()
    # The thread's totals so far: the last turn's lie is unknown, never the turn before's.
    assert (facts.input_tokens, facts.output_tokens) == (None, 14)
    for cost in (float("nan"), float("inf"), -float("inf"), -0.5, 1e300):
        assert Receipt.from_json({"costUsd": cost}).cost_usd is None
        assert Totals.from_json({"costUsd": cost}).cost_usd is None


@pytest.mark.parametrize("status", ["-5", "0", "42", "1000", "9" * 4000])
def test_an_api_error_status_that_is_no_http_status_is_not_the_failures_kind(
        status: str) -> None:
    """A failure's kind is a short phrase the circuit breaker compares and an item's
    reason quotes: a status no HTTP server sends (a 4,000-digit one became a reason of
    4,000 characters) is not read; the words decide."""
    reader = ClaudeStream()
    _feed(reader, claude_init("s"), claude_result("s", "API Error: Connection error.",
                                                  is_error=True)
          .replace('"is_error":true', f'"is_error":true,"api_error_status":{status}'))
    verdict = classify(reader.finish(), 1, "", structured=True)
    assert (verdict.verdict, verdict.kind) == (Verdict.FAILED, "API Error: Connection error")


@pytest.mark.parametrize("cost", [float("inf"), float("nan"), -float("inf")])
def test_a_cost_that_is_not_a_number_never_reaches_a_json_output(
        project: Project, cost: float) -> None:
    project.fakes.plan({"001": {"do": "done", "cost": cost,
                                "tokens": {"input_tokens": -5, "output_tokens": 7}}})
    for run in range(2):  # the second run sums the first into receipts.json
        result = project.run("--agent", "claude", "--iterations", "1", "--ndjson")
        assert result.returncode == 0, result.stderr
        for line in result.stdout.splitlines():
            strict_json(line)
        if run == 0:
            refused = project.events("agent_report_refused")[0]["refused"]
            assert set(refused) == {"costUsd", "tokens.input"}
            assert "recorded as unknown" in refused["costUsd"]
    state = project.root / ".forge"
    for line in (state / "events.ndjson").read_text().splitlines():
        strict_json(line)
    manifests = list((state / "proc").glob("*.manifest.json"))
    for document in (state / "receipts.json", state / "run" / "receipts.json",
                     state / "state.json", *manifests):
        strict_json(document.read_bytes())
    status = project.forge("status", "--json")
    assert status.returncode == 0, status.stderr
    costs = strict_json(status.stdout)["costs"]  # type: ignore[index]
    assert costs["items"]["001"]["costUsd"] is None
    assert costs["items"]["001"]["tokens"]["input"] == 0


def test_a_negative_cost_never_lifts_max_cost(project: Project) -> None:
    project.fakes.plan({"001": {"do": "done", "cost": -5.0}, "002": {"do": "done", "cost": 1.0},
                        "003": {"do": "done", "cost": 0.0}})
    result = project.run("--agent", "claude", "--max-cost", "1", "--json")
    assert result.returncode == 4, result.stderr
    assert "reaching --max-cost $1.00" in strict_json(result.stdout)["message"]  # type: ignore[index]
    assert not project.fakes.starts("003")
    assert project.items()["003"]["status"] == "pending"


def test_a_ledger_holding_infinity_is_read_as_unknown(project: Project) -> None:
    ledger = {"schemaVersion": "1", "items": {"001": {
        "attempts": 1, "durationMs": 5, "tokens": {"input": -3, "output": 1, "cached": 0},
        "costUsd": float("inf")}}, "runs": {}}
    (project.root / ".forge" / "receipts.json").write_text(json.dumps(ledger))
    status = project.forge("status", "--json")
    assert status.returncode == 0, status.stderr
    item = strict_json(status.stdout)["costs"]["items"]["001"]  # type: ignore[index]
    assert item["costUsd"] is None and item["tokens"]["input"] == 0


def test_a_backlog_holding_a_number_json_has_no_text_for_is_refused(project: Project) -> None:
    backlog = project.root / ".forge" / "backlog.json"
    document = json.loads(backlog.read_text())
    document["items"][0]["estimate"] = 0.5
    backlog.write_text(json.dumps(document, indent=2).replace("0.5", "1e999"))
    git("commit", "-q", "-m", "a backlog from a clone", ".forge/backlog.json", cwd=project.root)
    before = snapshot(project.root)
    for command in (("loop", "run", "--agent", "claude"), ("backlog", "list", "--json"),
                    ("status", "--json")):
        result = project.forge(*command)
        assert result.returncode == 2, (command, result.stderr)
        assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1
        assert "not finite" in result.stderr
    assert snapshot(project.root) == before
    assert not project.fakes.starts("001")


def test_every_json_writer_refuses_what_is_not_a_number(tmp_path: Path) -> None:
    for value in (float("nan"), float("inf"), -float("inf")):
        document = {"costUsd": value, "flat": [{"a": 1}]}
        for encode in (dumps_indented, json_text, lambda d: dumps_json(d, indent=None),
                       lambda d: json_text(d, indent=None)):
            with pytest.raises(ValueError):
                encode(document)
        target = tmp_path / "doc.json"
        target.write_bytes(b"{}\n")
        with pytest.raises(StoreError, match="refusing to write"):
            write_json(target, document)
        assert target.read_bytes() == b"{}\n"
        journal = Journal(tmp_path / "events.ndjson", tmp_path)
        with pytest.raises(ValueError):
            journal.append("x", costUsd=value)
        assert not (tmp_path / "events.ndjson").exists() or \
            (tmp_path / "events.ndjson").read_bytes() == b""
