"""``git forge init``: scaffold, ignore rules checked by git itself, never overwrite."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import waiting
from helpers import git, run_forge, snapshot

STATE_FILES = ["state.json", "events.ndjson", "forge-decisions.json", "loop.lock",
               "backlog.json.lock", "loop.run", "proc/abc.manifest.json",
               "proc/abc.spool/0001", "archive/events-1.ndjson", ".backlog.json.x1.tmp"]


def _touch(base: Path, names: list[str]) -> None:
    for name in names:
        path = base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")


def test_init_scaffolds_and_keeps_state_untracked(git_repo: Path) -> None:
    result = run_forge("init", cwd=git_repo)
    assert result.returncode == 0, result.stderr
    command = ("git add .forge/backlog.json .forge/.gitignore .forge.yaml && "
               "git commit -m 'Add git-forge backlog'")
    assert result.stdout.splitlines()[-1] == f"  {command}"
    document = json.loads((git_repo / ".forge" / "backlog.json").read_text())
    assert document == {"schemaVersion": "1", "project": "repo", "description": "",
                        "items": []}
    assert git("log", "--oneline", cwd=git_repo).count("\n") == 1  # nothing committed

    _touch(git_repo / ".forge", STATE_FILES)
    porcelain = git("status", "--porcelain", "-uall", cwd=git_repo).splitlines()
    assert sorted(porcelain) == ["?? .forge.yaml", "?? .forge/.gitignore",
                                 "?? .forge/backlog.json"]
    for name in STATE_FILES:
        git("check-ignore", "-q", f".forge/{name}", cwd=git_repo)
    for tracked in (".forge/backlog.json", ".forge/.gitignore"):
        probe = waiting.run(["git", "check-ignore", "-q", tracked], cwd=git_repo)
        assert probe.returncode == 1, tracked  # 1 = not ignored
    ignored = run_forge("init", "--json", cwd=git_repo)  # idempotent, and a data command
    assert json.loads(ignored.stdout) == {
        "created": [], "updated": [], "commit": None, "ignored": {},
        "kept": [".forge/backlog.json", ".forge/.gitignore", ".forge.yaml"]}

    git("add", ".forge/backlog.json", ".forge/.gitignore", ".forge.yaml", cwd=git_repo)
    git("commit", "-q", "-m", "backlog", cwd=git_repo)
    assert git("status", "--porcelain", "-uall", cwd=git_repo) == ""
    # The config written is valid and the backlog usable straight away.
    assert run_forge("backlog", "list", "--json", cwd=git_repo).stdout == "[]\n"


def test_init_never_overwrites(git_repo: Path) -> None:
    backlog = git_repo / ".forge"
    backlog.mkdir()
    (backlog / "backlog.json").write_text('{"items": []}')
    (backlog / ".gitignore").write_text("custom-rule")
    (git_repo / ".forge.yaml").write_text("loop:\n  retries: 3\n")
    result = run_forge("init", cwd=git_repo)
    assert result.returncode == 0, result.stderr
    assert (backlog / "backlog.json").read_text() == '{"items": []}'
    assert (git_repo / ".forge.yaml").read_text() == "loop:\n  retries: 3\n"
    rules = (backlog / ".gitignore").read_text()
    assert rules.startswith("custom-rule\n") and "/state.json" in rules
    assert "updated .forge/.gitignore" in result.stdout
    assert "git add .forge/.gitignore &&" in result.stdout


def test_init_with_a_separate_backlog_dir(git_repo: Path) -> None:
    result = run_forge("init", "--backlog", "specs/feature-x", cwd=git_repo)
    assert result.returncode == 0, result.stderr
    backlog = git_repo / "specs" / "feature-x"
    assert (backlog / "backlog.json").is_file()
    assert (backlog / ".forge").is_dir()  # the state dir, separate here
    assert "State files go in specs/feature-x/.forge/ (ignored by git)." in result.stdout
    # The generated config points later commands at the chosen backlog.
    assert 'backlog: "specs/feature-x"' in (git_repo / ".forge.yaml").read_text()
    _touch(backlog, [f".forge/{name}" for name in STATE_FILES] + ["backlog.json.lock"])
    porcelain = sorted(git("status", "--porcelain", "-uall", cwd=git_repo).splitlines())
    assert porcelain == ["?? .forge.yaml", "?? specs/feature-x/.gitignore",
                         "?? specs/feature-x/backlog.json"]
    assert run_forge("backlog", "add", "--title", "first", cwd=git_repo).stdout == "001\n"
    assert json.loads((backlog / "backlog.json").read_text())["items"][0]["id"] == "001"


def test_init_refuses_without_a_work_tree(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    bare = tmp_path / "bare.git"
    git("init", "-q", "--bare", str(bare), cwd=tmp_path)
    before = snapshot(tmp_path, skip_git=False)
    for where, message in (
        (outside, f"Error: not a git repository (or any of the parent directories): {outside}"),
        (bare, f"Error: {bare} is a bare repository (or a git dir): git forge needs a work "
               "tree"),
    ):
        result = run_forge("init", cwd=where)
        assert (result.returncode, result.stderr.splitlines()) == (2, [message])
    assert snapshot(tmp_path, skip_git=False) == before  # nothing written, not even in git


def test_a_backlog_dir_that_is_not_one_of_the_work_trees_own_is_refused(
        git_repo: Path, tmp_path: Path) -> None:
    """The root (init's ``*.lock`` rule would hide every lock file of the project),
    ``.git``, or a directory outside the work tree (the loop commits backlog.json):
    refused by init and by every command, before anything is written."""
    (git_repo / ".gitignore").write_text("node_modules/\n")
    (tmp_path / "elsewhere").mkdir()
    (git_repo / "away").symlink_to(tmp_path / "elsewhere")
    before = snapshot(git_repo, skip_git=False), snapshot(tmp_path / "elsewhere")
    root = git_repo.resolve()
    for backlog, message in (
        ("", f"the backlog dir {root} is the work tree's root: it needs a directory of "
             "its own (the default is .forge)"),
        (".", f"the backlog dir {root} is the work tree's root"),
        (".git", f"the backlog dir {root / '.git'} is inside .git"),
        (".git/forge", f"the backlog dir {root / '.git' / 'forge'} is inside .git"),
        ("../outside", "is outside the work tree"),
        (str(tmp_path / "elsewhere"), "is outside the work tree"),
        ("away", f"the backlog dir {root / 'away'} is outside the work tree"),
    ):
        for args in (["init"], ["backlog", "add", "--title", "x"], ["status"]):
            result = run_forge(*args, "--backlog", backlog, cwd=git_repo)
            assert result.returncode == 2 and result.stdout == "", (args, backlog)
            assert result.stderr.startswith("Error: ") and message in result.stderr, (
                args, backlog, result.stderr)
            assert len(result.stderr.splitlines()) == 1
    assert (snapshot(git_repo, skip_git=False), snapshot(tmp_path / "elsewhere")) == before
    assert not (git_repo.parent / "outside").exists()


def test_init_from_a_subdirectory_prints_commands_that_work_there(git_repo: Path) -> None:
    sub = git_repo / "src" / "deep"
    sub.mkdir(parents=True)
    result = run_forge("init", cwd=sub)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "Initialized git-forge backlog in ../../.forge/"
    assert "  created ../../.forge/backlog.json" in result.stdout.splitlines()
    command = result.stdout.splitlines()[-1].strip()
    assert command == ("git add ../../.forge/backlog.json ../../.forge/.gitignore "
                       "../../.forge.yaml && git commit -m 'Add git-forge backlog'")
    for part in command.split(" && "):
        git(*shlex.split(part)[1:], cwd=sub)  # as typed where the user stands
    assert git("status", "--porcelain", cwd=git_repo) == ""


def test_init_under_a_feature_forge_config_ignores_the_rauf_state_dir(git_repo: Path) -> None:
    (git_repo / "forge.config.json").write_text('{"loopRunner": {"bin": "embedded"}}')
    result = run_forge("init", cwd=git_repo)
    assert result.returncode == 0, result.stderr
    assert (git_repo / ".forge" / ".rauf").is_dir()
    _touch(git_repo / ".forge", [f".rauf/{name}" for name in STATE_FILES]
           + ["backlog.json.lock"])
    porcelain = sorted(git("status", "--porcelain", "-uall", cwd=git_repo).splitlines())
    assert porcelain == ["?? .forge.yaml", "?? .forge/.gitignore", "?? .forge/backlog.json",
                         "?? forge.config.json"]


def test_the_example_config_suggests_the_agent_the_readme_does(git_repo: Path) -> None:
    """Claude Code by its profile (costs, limit waits, resumed sessions), with the same
    flags everywhere: the example .forge.yaml, uncommented, is the README's command."""
    import re

    import yaml

    assert run_forge("init", cwd=git_repo).returncode == 0
    example = (git_repo / ".forge.yaml").read_text()
    loop = re.search(r"^# loop:\n#   agent: .*\n#   agentArgs: .*\n", example, re.M)
    assert loop is not None, example
    uncommented = re.sub(r"^# ?", "", loop.group(), flags=re.M)
    assert yaml.safe_load(uncommented) == {
        "loop": {"agent": "claude", "agentArgs": ["--permission-mode", "acceptEdits"]}}
    (git_repo / ".forge.yaml").write_text(uncommented)
    shown = json.loads(run_forge("config", "--json", cwd=git_repo).stdout)
    assert "claude" in json.dumps(shown) and "acceptEdits" in json.dumps(shown)
    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text()
    page = (root / "man" / "git-forge.1").read_text().replace("\\-", "-")
    flags = "--agent claude --agent-arg=--permission-mode --agent-arg=acceptEdits"
    for text in (readme, page):
        assert flags in text
        # no command suggests a plain `claude …` or `codex …` line (the generic profile)
        assert not re.findall(r"^git forge .*--agent ['\"](?:claude|codex)\b", text, re.M)
    assert not [text for text in (example, readme, page) if "dangerously" in text]


def test_init_says_when_the_projects_ignore_rules_ignore_what_it_asks_to_commit(
        git_repo: Path) -> None:
    (git_repo / ".gitignore").write_text(".*\n!/.gitignore\n")
    git("add", ".gitignore", cwd=git_repo)
    git("commit", "-q", "-m", "ignore dot files", cwd=git_repo)
    result = run_forge("init", cwd=git_repo)
    assert result.returncode == 0, result.stderr
    command = ("git add -f .forge/backlog.json .forge/.gitignore .forge.yaml && "
               "git commit -m 'Add git-forge backlog'")
    assert result.stdout.splitlines()[-1] == f"  {command}"
    assert result.stderr == (
        "note: the project's ignore rules ignore .forge/backlog.json, .forge/.gitignore and "
        ".forge.yaml (.* in .gitignore, line 1): the command above adds them with git add "
        "-f; or let them through with lines at the end of .gitignore: !/.forge/ "
        "!/.forge.yaml\n")
    again = json.loads(run_forge("init", "--json", cwd=git_repo).stdout)
    assert again["commit"] is None and again["ignored"] == {}  # nothing made: nothing to say

    # Either way commits what init made, and leaves the state files out.
    for way in ("git add -f", "the lines"):
        clone = git_repo.parent / way.replace(" ", "-")
        git("clone", "-q", str(git_repo), str(clone), cwd=git_repo.parent)
        assert run_forge("init", cwd=clone).returncode == 0
        if way == "git add -f":
            for words in command.split(" && "):
                git(*shlex.split(words)[1:], cwd=clone)
        else:
            with open(clone / ".gitignore", "a") as rules:
                rules.write("!/.forge/\n!/.forge.yaml\n")
            git("add", ".gitignore", ".forge/backlog.json", ".forge/.gitignore", ".forge.yaml",
                cwd=clone)
            git("commit", "-q", "-m", "Add git-forge backlog", cwd=clone)
        assert {".forge/backlog.json", ".forge/.gitignore", ".forge.yaml"} <= set(
            git("ls-files", cwd=clone).splitlines())
        _touch(clone / ".forge", STATE_FILES)
        assert git("status", "--porcelain", "-uall", cwd=clone) == ""
