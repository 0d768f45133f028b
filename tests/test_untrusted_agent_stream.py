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
from pathlib import Path

import pytest
import waiting
from agent_streams import claude_init, claude_result, codex_thread, codex_turn_completed
from fake_agents import FakeAgents
from helpers import git
from templates import Templates
from test_agent_loop import Project, build_backlog

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

CLAUDE_FRESH = ["claude", "-p", "--output-format", "stream-json", "--verbose"]
CODEX_FRESH = ["codex", "exec", "--json", "-"]


@pytest.fixture
def project(templates: Templates, tmp_path: Path) -> Iterator[Project]:
    root = templates.copy("agent-backlog", build_backlog, tmp_path / "repo")
    made = Project(root, FakeAgents(tmp_path))
    yield made
    for proc in made.spawned:
        if proc.poll() is None:
            waiting.kill_tree(proc.pid)
            waiting.communicate(proc, timeout=10)


def _configure(project: Project, text: str) -> None:
    """``.forge.yaml`` holds ``text``, committed (a run refuses a dirty tree)."""
    (project.root / ".forge.yaml").write_text(text)
    git("commit", "-q", "-m", "config", ".forge.yaml", cwd=project.root)


def _no_item_in_progress(project: Project) -> None:
    assert [i for i, item in project.items().items() if item["status"] == "in_progress"] == []


# --- agent-controlled text never becomes an option ---------------------------------------


@pytest.mark.parametrize("session", [
    "--dangerously-skip-permissions", "-p", "a b", "a\0b", "a\nb", "$(touch x)", "a/b", "é",
    "x" * 129, "x" * 300 * 1024])
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
        *CLAUDE_FRESH, f"--resume={uuid}", "--model", "m"]
    assert PROFILES["codex"].argv(["codex"], ["--model", "m"], session=uuid) == [
        "codex", "exec", "resume", uuid, "--json", "--model", "m", "-"]


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
          codex_turn_completed(-9, 1, 7), codex_turn_completed(5, 1, 7))
    facts = codex.finish()
    assert (facts.input_tokens, facts.output_tokens) == (None, 21)  # one lie: no sum
    for cost in (float("nan"), float("inf"), -float("inf"), -0.5, 1e300):
        assert Receipt.from_json({"costUsd": cost}).cost_usd is None
        assert Totals.from_json({"costUsd": cost}).cost_usd is None


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
