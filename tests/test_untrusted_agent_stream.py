"""An agent's stream is untrusted: what it says never becomes an option of the
retry's command line, a limit that lies never restarts the agent forever nor
crashes a later run, and a number that is not one never reaches a JSON file.

The faithful fakes (``fake_agents``) are first on PATH and write the hostile
streams; each start records its argv. Real repositories, real processes."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import waiting
from fake_agents import FakeAgents
from helpers import git
from templates import Templates
from test_agent_loop import Project, build_backlog

from git_forge.agents.profiles import PROFILES
from git_forge.agents.streams import session_problem
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


def test_an_agent_that_cannot_start_leaves_its_item_pending(project: Project) -> None:
    # One argument beyond what exec takes (128 KiB): the start fails, the item is not taken.
    _configure(project, f"loop:\n  agentArgs: [{'x' * 200 * 1024}]\n")
    result = project.run("--agent", "claude")
    assert result.returncode != 0
    assert result.stderr.startswith("Error: could not start the agent")
    assert "Traceback" not in result.stderr
    assert project.items()["001"]["status"] == "pending"
    _no_item_in_progress(project)
