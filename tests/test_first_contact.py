"""What a new user meets first: the same refusal for the same condition in every
command, a bad agent found before any item is taken, a corrupt backlog called
corrupt."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import git, run_forge, snapshot

#: Commands that act on a project (a git work tree), as a user would type them.
PROJECT_COMMANDS = [
    ["init"], ["status"], ["backlog", "list"], ["backlog", "add", "--title", "x"],
    ["backlog", "topology"], ["preflight"], ["proc", "list"], ["recover"], ["reconcile"],
    ["loop", "run", "--agent", "true"], ["loop", "stop"], ["hooks", "status"],
    ["hooks", "install"],
]


@pytest.mark.parametrize("where", ["outside", "bare"])
def test_every_command_refuses_the_same_way_without_a_work_tree(tmp_path: Path,
                                                                where: str) -> None:
    if where == "outside":
        directory = tmp_path / "outside"
        directory.mkdir()
        message = f"Error: not a git repository (or any of the parent directories): {directory}"
    else:
        directory = tmp_path / "bare.git"
        git("init", "-q", "--bare", str(directory), cwd=tmp_path)
        message = (f"Error: {directory} is a bare repository (or a git dir): git forge needs "
                   "a work tree")
    before = snapshot(tmp_path, skip_git=False)
    for argv in PROJECT_COMMANDS:
        result = run_forge(*argv, cwd=directory)
        assert (result.returncode, result.stderr.splitlines(), result.stdout) == (
            2, [message], ""), argv
    assert snapshot(tmp_path, skip_git=False) == before


@pytest.fixture
def project(git_repo: Path) -> Path:
    assert run_forge("init", cwd=git_repo).returncode == 0
    assert run_forge("backlog", "add", "--title", "first", cwd=git_repo).returncode == 0
    git("add", "-A", cwd=git_repo)
    git("commit", "-qm", "backlog", cwd=git_repo)
    return git_repo


def test_a_detached_head_is_refused_by_the_hook_as_by_the_loop(project: Path) -> None:
    git("checkout", "-q", "--detach", cwd=project)
    loop = run_forge("loop", "run", "--agent", "true", cwd=project)
    assert (loop.returncode, loop.stderr) == (
        2, "Error: HEAD is detached; check out a branch first\n")
    preflight = run_forge("preflight", cwd=project)  # clean tree: refused all the same
    assert (preflight.returncode, preflight.stderr) == (
        1, "STOP: HEAD is detached; check out a branch first\n")
    assert json.loads(run_forge("preflight", "--json", cwd=project).stdout)["reason"] == (
        "HEAD is detached; check out a branch first")


def test_an_unborn_branch_is_refused_by_the_hook_as_by_the_loop(git_repo: Path) -> None:
    git("checkout", "-q", "--orphan", "fresh", cwd=git_repo)
    git("rm", "-rqf", ".", cwd=git_repo)
    preflight = run_forge("preflight", cwd=git_repo)
    assert (preflight.returncode, preflight.stderr) == (
        1, "STOP: the branch has no commit yet (unborn); commit something first\n")


@pytest.mark.parametrize(("agent", "message"), [
    ("no-such-binary -p", "agent command not found: no-such-binary"),
    ("./missing/agent", "agent command not found: ./missing/agent"),
    ("./adir", "agent command is a directory: ./adir"),
    ("./not-executable.sh", "agent command is not executable: ./not-executable.sh"),
])
def test_a_bad_agent_is_refused_before_any_item_is_taken(project: Path, agent: str,
                                                         message: str) -> None:
    (project / "adir").mkdir()
    (project / "not-executable.sh").write_text("#!/bin/sh\necho FORGE_DONE\n")
    git("add", "-A", cwd=project)
    git("commit", "-qm", "files", cwd=project)
    before = snapshot(project, skip_git=False)
    result = run_forge("loop", "run", "--agent", agent, cwd=project)
    assert (result.returncode, result.stderr) == (2, f"Error: {message}\n")
    assert snapshot(project, skip_git=False) == before  # no item taken, no state written


def test_a_good_agent_on_path_and_by_path_is_accepted(project: Path) -> None:
    result = run_forge("loop", "run", "--agent", f"{sys.executable} -c print('FORGE_DONE')",
                       "--iterations", "1", cwd=project)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("content", [b"{not json", b'{"items": 3}'])
def test_a_corrupt_backlog_is_called_corrupt_never_stranded_work(project: Path,
                                                                 content: bytes) -> None:
    backlog = project / ".forge" / "backlog.json"
    backlog.write_bytes(content)
    preflight = run_forge("preflight", cwd=project)
    assert preflight.returncode == 1
    lines = preflight.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("STOP: .forge/backlog.json is corrupt (")
    assert lines[0].endswith("repair it, or restore it with "
                             "git checkout HEAD -- .forge/backlog.json")
    assert "stranded" not in preflight.stderr and "previous" not in preflight.stderr
    loop = run_forge("loop", "run", "--agent", "true", cwd=project)
    assert loop.returncode == 2 and "is corrupt" in loop.stderr
    before = snapshot(project, skip_git=False)
    commit = run_forge("reconcile", "--commit", "unattributed", cwd=project)
    assert commit.returncode == 2 and commit.stdout == ""  # refused before any report
    assert commit.stderr.splitlines() == [
        "Error: refusing to commit .forge/backlog.json: it is corrupt ("
        + commit.stderr.split("it is corrupt (", 1)[1].rstrip("\n")]
    assert snapshot(project, skip_git=False) == before
    assert backlog.read_bytes() == content


def test_loop_agent_set_as_the_no_agent_error_says_is_told_to_be_committed(
        project: Path) -> None:
    """The "no agent" error asks for loop.agent in .forge.yaml; the edit that follows is
    the operator's configuration, and the refusal it meets says to commit it."""
    refused = run_forge("loop", "run", cwd=project)
    assert (refused.returncode, refused.stderr) == (
        2, "Error: no agent to run: pass --agent claude (or codex, or an agent command line), "
           "or set loop.agent in .forge.yaml and commit it\n")
    config = project / ".forge.yaml"
    config.write_text(config.read_text() + f"loop:\n  agent: {sys.executable} agent.py\n")
    (project / "agent.py").write_text("print('FORGE_DONE')\n")
    git("add", "agent.py", cwd=project)
    git("commit", "-qm", "agent", cwd=project)
    note = ("  note: .forge.yaml is git-forge's configuration: commit it (git add .forge.yaml "
            "&& git commit -m 'Configure git-forge'), then launch")
    before = snapshot(project, skip_git=False)
    for command in (["loop", "run"], ["preflight"]):
        result = run_forge(*command, cwd=project)
        assert result.returncode in (1, 2) and result.stderr.splitlines() == [
            "Error: the working tree has uncommitted changes; commit or stash them first:",
            "   M .forge.yaml", note], command
    # after a run, the same edit STOPs the launch as work the run did not make: said too
    (project / ".forge" / "state.json").write_text(json.dumps(
        {"status": "complete", "runId": "run-1", "startedAt": "2026-11-29T10:11:12Z"}))
    stop = run_forge("preflight", cwd=project)
    assert stop.returncode == 1 and stop.stderr.startswith("STOP:")
    assert note in stop.stderr.splitlines()
    (project / ".forge" / "state.json").unlink()
    assert snapshot(project, skip_git=False) == before
    git("add", ".forge.yaml", cwd=project)
    git("commit", "-qm", "Configure git-forge", cwd=project)
    ran = run_forge("loop", "run", cwd=project)
    assert ran.returncode == 0, ran.stderr


def test_one_of_a_thing_is_said_in_the_singular_and_a_reason_once(project: Path) -> None:
    """``1 item``, ``1 iteration``, ``1 attempt``; a retry says why once (it said
    ``ended without a signal; no signal``)."""
    result = run_forge("loop", "run", "--agent", f"{sys.executable} -c pass",
                       "--iterations", "1", "--retries", "1", cwd=project)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].endswith(": up to 1 iteration")
    assert "  001 retry: ended without a signal; attempt 1 of 2" in lines
    assert lines[-1] == "backlog: 1 item — 0 done, 1 pending"
    status = run_forge("status", cwd=project).stdout.splitlines()
    assert "backlog:  1 item: 1 pending, 0 in progress, 0 blocked, 0 done" in status
    assert "spent:    1 attempt in the last run" in status


@pytest.mark.parametrize("made", ["nothing", "an empty backlog dir"])
def test_recover_where_init_never_ran_names_init_and_creates_nothing(git_repo: Path,
                                                                      made: str) -> None:
    """recover (and revoke, which takes its lock) refuse before the lock: it made
    .forge/recover.lock, and the failed pass suggested running recover again."""
    if made != "nothing":
        (git_repo / ".forge").mkdir()

    def everything() -> tuple:
        return (snapshot(git_repo, skip_git=False), sorted(
            str(path) for path in git_repo.rglob("*") if ".git" not in path.parts))

    before = everything()
    message = (f"Error: no backlog at {git_repo.resolve()}/.forge/backlog.json "
               "(git forge init sets one up)\n")
    for argv in (["recover"], ["recover", "--non-interactive"], ["recover", "--plan", "--json"],
                 ["recover", "--answer", "001=yes"], ["decision", "revoke", "001"]):
        result = run_forge(*argv, cwd=git_repo)
        assert (result.returncode, result.stdout, result.stderr) == (2, "", message), argv
        assert everything() == before, argv
