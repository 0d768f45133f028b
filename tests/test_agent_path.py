"""The agent's program is found once, before any item is taken, and the same file
runs in every tree: a relative path (``--agent ../my-agent.sh``) is the repository
root's, serially and with three agents at once (each in its worktree, where the
same relative path names nothing); so are a verification gate's and the
notifier's. Real repositories, the installed ``git forge``, real processes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from builders import backlog_repo
from helpers import git, run_forge

AGENT = """#!/bin/sh
cat >/dev/null
echo "work of $FORGE_ITEM_ID" > "item-$FORGE_ITEM_ID.txt"
echo FORGE_DONE
"""


def _script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("parallel", [1, 3])
def test_a_relative_agent_path_runs_the_same_file_in_every_tree(tmp_path: Path,
                                                                parallel: int) -> None:
    root = backlog_repo(tmp_path / "repo", "One", "Two", "Three")
    _script(tmp_path / "my-agent.sh", AGENT)  # beside the repository, not in it
    result = run_forge("loop", "run", "--agent", "../my-agent.sh", "--parallel", str(parallel),
                       cwd=root)
    assert result.returncode == 0, result.stderr
    items = json.loads((root / ".forge" / "backlog.json").read_text())["items"]
    assert [each["status"] for each in items] == ["done"] * 3
    assert git("ls-files", "item-*.txt", cwd=root).split() == [
        "item-001.txt", "item-002.txt", "item-003.txt"]
    started = [json.loads(line) for line in
               (root / ".forge" / "events.ndjson").read_text().splitlines()]
    (agent,) = {tuple(event["agent"]) for event in started if event["type"] == "loop_started"}
    assert agent == ("../my-agent.sh",)  # as given; found from the root in every tree


def test_a_relative_gate_runs_in_each_worktree(tmp_path: Path) -> None:
    root = backlog_repo(tmp_path / "repo", "One", "Two")
    _script(tmp_path / "my-agent.sh", AGENT)
    gates = tmp_path / "gate-runs.txt"
    _script(tmp_path / "check.sh", f'#!/bin/sh\necho "$PWD" >> {gates}\n')
    (root / ".forge.yaml").write_text("loop:\n  verify: ../check.sh\n")
    git("add", ".forge.yaml", cwd=root)
    git("commit", "-q", "-m", "config", cwd=root)
    result = run_forge("loop", "run", "--agent", "../my-agent.sh", "--parallel", "2", cwd=root)
    assert result.returncode == 0, result.stderr
    ran = gates.read_text().splitlines()
    # the baseline on the starting tip, then each item's gate in its worktree
    assert sum("/.forge/worktrees/" in line for line in ran) == 2, ran


@pytest.mark.parametrize("parallel", [1, 3])
def test_an_agents_pwd_is_where_it_runs(tmp_path: Path, parallel: int) -> None:
    # a program that takes its directory from PWD (OpenCode does) works in its own tree,
    # not in the directory git forge was started from
    root = backlog_repo(tmp_path / "repo", "One", "Two", "Three")
    agent = _script(tmp_path / "agent.py", "#!/usr/bin/env python3\n"
                    "import os, sys\nsys.stdin.read()\n"
                    "item = os.environ['FORGE_ITEM_ID']\n"
                    "open(f'pwd-{item}.txt', 'w').write("
                    "str(os.environ['PWD'] == os.getcwd()) + '\\n')\n"
                    "print('FORGE_DONE')\n")
    result = run_forge("loop", "run", "--agent", str(agent), "--parallel", str(parallel),
                       cwd=root, env={"PWD": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    for item in ("001", "002", "003"):
        assert git("show", f"HEAD:pwd-{item}.txt", cwd=root) == "True\n"


def test_a_relative_path_entry_is_the_roots_wherever_the_run_starts(tmp_path: Path) -> None:
    root = backlog_repo(tmp_path / "repo", "One", "Two")
    _script(root / "tools" / "agent.sh", AGENT)
    (root / ".gitignore").write_text("tools/\n")
    git("add", ".gitignore", cwd=root)
    git("commit", "-q", "-m", "ignore", cwd=root)
    (root / "sub").mkdir()
    _script(root / "sub" / "tools" / "agent.sh", "#!/bin/sh\necho FORGE_BLOCKED: wrong one\n")
    (root / "sub" / ".gitignore").write_text("*\n")
    result = run_forge("loop", "run", "--agent", "agent.sh", "--parallel", "2",
                       cwd=root / "sub",
                       env={"PATH": f"tools{os.pathsep}{os.environ['PATH']}"})
    assert result.returncode == 0, result.stderr
    items = json.loads((root / ".forge" / "backlog.json").read_text())["items"]
    assert [each["status"] for each in items] == ["done", "done"]
