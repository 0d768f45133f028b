"""Hostile input never costs git-forge more than a bounded share: a YAML
document built to explode (a "billion laughs" alias bomb in ``.forge.yaml``, the
user config or an answers file) is refused at its first anchor — one ``Error:``
line, exit 2, files unchanged, in well under a second where expanding it took
minutes.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from builders import backlog_repo
from helpers import git, run_forge, snapshot

# --- YAML built to explode: refused at its first anchor -------------------------------------

#: Nine levels of nine aliases: 387 420 489 strings once expanded.
BILLION_LAUGHS = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{name}: &{name} [{', '.join([f'*{below}'] * 9)}]"
       for below, name in zip("abcdefgh", "bcdefghi", strict=True)]) + "\n"
REFUSAL = "line 1: YAML anchors and aliases are not allowed"
#: Seconds a refusal may take: expanding the bomb took 25 s to minutes.
REFUSAL_DEADLINE = 10.0


def assert_refused(result: subprocess.CompletedProcess, path: Path) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == f"Error: {path}: {REFUSAL}\n"


@pytest.mark.parametrize("command", [("status",), ("loop", "run", "--agent", "true"),
                                     ("backlog", "list")])
def test_a_cloned_forge_yaml_bomb_is_refused_at_once(tmp_path: Path,
                                                     command: tuple[str, ...]) -> None:
    origin = backlog_repo(tmp_path / "origin", "First")
    (origin / ".forge.yaml").write_text(BILLION_LAUGHS)
    git("add", ".forge.yaml", cwd=origin)
    git("commit", "-q", "-m", "config", cwd=origin)
    clone = tmp_path / "clone"
    git("clone", "-q", str(origin), str(clone), cwd=tmp_path)
    before = snapshot(clone, skip_git=False)
    result = run_forge(*command, cwd=clone, timeout=REFUSAL_DEADLINE)
    assert_refused(result, clone / ".forge.yaml")
    assert snapshot(clone, skip_git=False) == before


def test_a_user_config_bomb_is_refused_at_once(git_repo: Path, isolated_env: Path) -> None:
    assert run_forge("init", cwd=git_repo).returncode == 0
    user_config = isolated_env / ".config" / "git-forge" / "config.yaml"
    user_config.parent.mkdir(parents=True)
    user_config.write_text(BILLION_LAUGHS)
    before = snapshot(git_repo, skip_git=False)
    result = run_forge("loop", "run", "--agent", "true", cwd=git_repo,
                       timeout=REFUSAL_DEADLINE)
    assert_refused(result, user_config)
    assert snapshot(git_repo, skip_git=False) == before
    assert user_config.read_text() == BILLION_LAUGHS


def test_an_answers_file_bomb_is_refused_at_once(git_repo: Path, tmp_path: Path) -> None:
    assert run_forge("init", cwd=git_repo).returncode == 0
    git("add", "-A", cwd=git_repo)
    git("commit", "-q", "-m", "backlog", cwd=git_repo)
    answers = tmp_path / "answers.yaml"
    answers.write_text(BILLION_LAUGHS)
    before = snapshot(git_repo, skip_git=False)
    result = run_forge("recover", "--answers", str(answers), cwd=git_repo,
                       timeout=REFUSAL_DEADLINE)
    assert_refused(result, answers)
    assert snapshot(git_repo, skip_git=False) == before


@pytest.mark.parametrize(("text", "line"), [
    ("loop:\n  agent: &name codex\n", 2),  # an anchor alone
    ("base: {x: 1}\nother:\n  <<: *base\n", 3),  # a merge key is an alias
    ("- &a [1]\n- *a\n", 1),
    ("--- &top\nkey: value\n", 1),
])
def test_any_anchor_or_alias_is_refused_with_its_line(text: str, line: int) -> None:
    from git_forge.parsing import DocumentTooComplex, load_yaml

    with pytest.raises(DocumentTooComplex) as refused:
        load_yaml(text, "c.yaml")
    assert refused.value.message == \
        f"c.yaml: line {line}: YAML anchors and aliases are not allowed"
    assert refused.value.exit_code == 2
