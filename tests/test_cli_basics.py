"""The command line's conventions: version, help, usage errors, pipes, git dispatch."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import waiting
from helpers import forge_argv, run_forge

from git_forge import __version__


def test_version(tmp_path: Path) -> None:
    assert json.loads(run_forge("version", "--json", cwd=tmp_path).stdout) == {
        "version": __version__}
    assert run_forge("--version", cwd=tmp_path).stdout == f"git-forge version {__version__}\n"


def test_git_dispatches_to_git_forge(tmp_path: Path) -> None:
    result = waiting.run(["git", "forge", "version", "--json"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert json.loads(result.stdout) == {"version": __version__}


def test_bare_command_prints_the_overview(tmp_path: Path) -> None:
    result = run_forge(cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith("usage: git forge")
    for command in ("loop", "recover", "reconcile", "preflight", "demo"):
        assert f"    {command}" in result.stdout


def test_usage_errors_are_one_line_and_exit_2(tmp_path: Path) -> None:
    for args in (["no-such-command"], ["loop", "run", "--iterations", "x"],
                 ["backlog", "list", "--status", "bogus"]):
        result = run_forge(*args, cwd=tmp_path)
        assert result.returncode == 2 and result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: ")


def test_a_closed_pipe_is_not_an_error(git_repo: Path) -> None:
    run_forge("init", cwd=git_repo)
    backlog = git_repo / ".forge" / "backlog.json"
    document = json.loads(backlog.read_text())
    document["items"] = [
        {"id": f"{n:04d}", "type": "feature", "priority": 2, "title": f"item {n} " + "x" * 200,
         "description": "", "acceptanceCriteria": [], "status": "pending", "completedAt": None,
         "needsHuman": False, "deferred": False, "dependsOn": [], "notes": ""}
        for n in range(1, 2001)]
    backlog.write_text(json.dumps(document))  # far more than a pipe buffer holds
    proc = subprocess.Popen(forge_argv() + ["backlog", "list", "--json"], cwd=git_repo,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    waiting.within(proc, lambda: proc.stdout.read(1))
    proc.stdout.close()
    _, err = waiting.communicate(proc)
    assert b"Traceback" not in err and b"BrokenPipe" not in err
    assert proc.returncode == 0, err
