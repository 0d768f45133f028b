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
