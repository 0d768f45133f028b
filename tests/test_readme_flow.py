"""The README's own commands, run as a new user runs them — taken from README.md
itself, not from a copy, with a faithful stand-in for ``claude`` on PATH."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from helpers import PtySession, git

README = Path(__file__).resolve().parent.parent / "README.md"

#: Stands in for Claude Code run by its profile with the README's flags (``--agent claude
#: --agent-arg=--permission-mode --agent-arg=acceptEdits``): the prompt on stdin, the work
#: done in the tree, its stream-json with the signal at the end of the result's text.
FAKE_CLAUDE = r'''#!PYTHON
import os, pathlib, sys
sys.path.insert(0, TESTS)
import agent_streams as S
assert sys.argv[1:] == ["-p", "--output-format", "stream-json", "--verbose",
                        "--permission-mode", "acceptEdits"], sys.argv
prompt = sys.stdin.read()
item = os.environ["FORGE_ITEM_ID"]
print(S.claude_init("session-" + item, os.getcwd()))
if item == "001":
    pathlib.Path("login.html").write_text("<form method=post action=/login></form>\n")
    text = "Added the form.\n\nFORGE_DONE"
elif "human's answer" not in prompt:
    text = "FORGE_NEEDS_HUMAN: How long should 'remember me' last?"
else:
    assert "Your previous attempt asked:\n> How long should 'remember me' last?" in prompt
    answer = prompt.split("The human's answer:\n", 1)[1]
    pathlib.Path("remember.txt").write_text(answer.splitlines()[0] + "\n")
    text = "FORGE_DONE"
print(S.claude_result("session-" + item, text, cost=0.01))
'''

#: What the README calls the agent, in the quick start and here.
AGENT = ["--agent", "claude", "--agent-arg=--permission-mode", "--agent-arg=acceptEdits"]


def section_commands(heading: str) -> list[list[str]]:
    """The command lines of the first ``sh`` block under ``heading``, each split
    once (comments dropped) and cut at ``&&``."""
    text = README.read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}\n", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None, f"no sh block under {heading}"
    commands = []
    for line in block.group(1).splitlines():
        words = shlex.split(line, comments=True)
        while words:
            cut = words.index("&&") if "&&" in words else len(words)
            commands.append(words[:cut])
            words = words[cut + 1:]
    return commands


@pytest.fixture
def project(git_repo: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    import sys

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text(FAKE_CLAUDE.replace("PYTHON", sys.executable, 1).replace(
        "TESTS", repr(str(Path(__file__).resolve().parent)), 1))
    claude.chmod(0o755)
    return git_repo, {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def test_using_it_on_your_project_works_as_written(project) -> None:
    repo, env = project
    commands = section_commands("Using it on your project")
    assert [c[:3] for c in commands] == [
        ["git", "forge", "init"], ["git", "add", ".forge/backlog.json"], ["git", "commit", "-m"],
        ["git", "forge", "backlog"], ["git", "forge", "backlog"], ["git", "forge", "loop"],
        ["git", "forge", "recover"], ["git", "forge", "loop"]]
    codes = []
    for words in commands:
        if words[:3] == ["git", "forge", "recover"]:  # asked at a terminal, as a user would
            session = PtySession(*words[2:], cwd=repo, env=env)
            session.expect("Your decision")
            session.send("Thirty days")
            session.expect("Record it?")
            session.send("y")
            session.expect("recovery:")
            # its own answers are queued work, not stranded work: never said to be both
            assert "Stranded work" not in session.text, session.text
            session.send("")  # commit recover's own backlog change (the default)
            codes.append(session.finish())
            continue
        result = subprocess.run(words, cwd=repo, capture_output=True, text=True,
                                env={**os.environ, **env}, timeout=120)
        codes.append(result.returncode)
        assert result.returncode in (0, 5), (words, result.stdout, result.stderr)
        if words[2] == "loop":  # Claude Code's profile: its costs read, nothing to warn of
            assert words[3:] == ["run", *AGENT]
            assert re.search(r"^spent: \d attempts?, .*\$0\.0\d$", result.stdout, re.M)
            assert "warning" not in result.stderr
    # The first loop run ends with the question (exit 5); recover is safe to resume
    # from (exit 0); the second run finishes the work (exit 0).
    assert codes[5:] == [5, 0, 0], codes
    assert (repo / "login.html").exists()
    assert (repo / "remember.txt").read_text() == "Thirty days\n"
    assert git("status", "--porcelain", cwd=repo) == ""
    subjects = git("log", "--format=%s", cwd=repo).splitlines()
    assert "[forge] backlog: add 001, 002" in subjects  # the queued adds, committed first
    assert subjects[0] == "[forge] 002: Remember me"


def test_an_answer_leaves_a_launchable_tree(project) -> None:
    repo, env = project
    for words in section_commands("Using it on your project")[:6]:
        subprocess.run(words, cwd=repo, capture_output=True, env={**os.environ, **env},
                       timeout=120)
    answered = subprocess.run(["git", "forge", "backlog", "answer", "002", "Thirty days"],
                              cwd=repo, capture_output=True, text=True, timeout=60)
    assert answered.returncode == 0, answered.stderr
    assert git("status", "--porcelain", cwd=repo) == " M .forge/backlog.json\n"
    preflight = subprocess.run(["git", "forge", "preflight"], cwd=repo, capture_output=True,
                               text=True, timeout=60)
    assert (preflight.returncode, preflight.stderr) == (0, "")
    rerun = subprocess.run(["git", "forge", "loop", "run", *AGENT], cwd=repo,
                           capture_output=True, text=True, env={**os.environ, **env},
                           timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    assert git("log", "-2", "--format=%s", cwd=repo).splitlines() == [
        "[forge] 002: Remember me", "[forge] backlog: change 002"]


def test_the_readme_says_how_many_workers_the_suite_runs_on() -> None:
    """The README said two workers while pyproject.toml ran three."""
    import tomllib

    root = README.parent
    addopts = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["pytest"][
        "ini_options"]["addopts"]
    workers = int(re.search(r"-n (\d+)", addopts).group(1))  # type: ignore[union-attr]
    words = {2: "two", 3: "three", 4: "four"}[workers]
    text = " ".join(README.read_text(encoding="utf-8").split())
    assert f"The suite runs on {words} workers (pytest-xdist, `-n {workers}` in " \
        "`pyproject.toml`" in text
