"""Colour as git decides it: color.forge / color.ui from every config source (git -c
included), --no-color before or after the command, NO_COLOR over everything, and a
terminal needed unless the setting is ``always``. Real terminals, real git."""

from __future__ import annotations

from pathlib import Path

import pytest
import waiting
from helpers import git, run_forge
from templates import Templates
from terminal_helpers import on_tty

SGR = b"\x1b["


def _build(base: Path) -> None:
    """A project whose list paints a status label."""
    base.mkdir()
    git("init", "-q", "-b", "main", cwd=base)
    assert run_forge("init", cwd=base).returncode == 0
    for title in ("one", "two"):
        run_forge("backlog", "add", "--title", title, cwd=base)
    for status in ("in_progress", "done"):
        assert run_forge("backlog", "edit", "001", "--status", status,
                         cwd=base).returncode == 0


@pytest.fixture
def project(templates: Templates, tmp_path: Path) -> Path:
    return templates.copy("colour", _build, tmp_path / "repo")


def coloured(project: Path, *args: str, env: dict | None = None,
             git_args: tuple[str, ...] | None = None) -> bool:
    code, output = on_tty(project, "backlog", "list", *args, env=env, git=git_args)
    assert code == 0 and b"one" in output, output
    return SGR in output


def test_a_terminal_is_coloured_by_default_and_through_git(project: Path) -> None:
    assert coloured(project)
    assert coloured(project, git_args=())  # `git forge backlog list`
    assert coloured(project, env={"TERM": "xterm"}, git_args=("-c", "color.ui=auto"))


def test_git_c_color_ui_off_is_honoured(project: Path) -> None:
    for value in ("never", "false", "off", "0", "NEVER"):
        assert not coloured(project, git_args=("-c", f"color.ui={value}")), value


def test_config_files_and_color_forge_are_honoured(project: Path) -> None:
    git("config", "color.ui", "never", cwd=project)
    assert not coloured(project)
    git("config", "color.forge", "auto", cwd=project)  # the command's own key wins
    assert coloured(project)
    assert not coloured(project, git_args=("-c", "color.forge=false"))


@pytest.mark.parametrize("args", [("--no-color",), ()])
def test_no_color_flag_before_or_after_the_command(project: Path, args: tuple) -> None:
    if args:  # after the command
        assert not coloured(project, *args)
    else:  # before it: `git forge --no-color backlog list`
        code, output = on_tty(project, "--no-color", "backlog", "list")
        assert code == 0 and b"one" in output and SGR not in output


def test_no_color_wins_over_color_ui_always(project: Path) -> None:
    assert not coloured(project, env={"NO_COLOR": "1"}, git_args=("-c", "color.ui=always"))
    assert not coloured(project, "--no-color", git_args=("-c", "color.ui=always"))


def test_always_colours_a_pipe_and_auto_does_not(project: Path) -> None:
    piped = ["git", "-c", "color.ui=always", "forge", "backlog", "list"]
    always = waiting.run(piped, cwd=project, capture_output=True, check=True)
    assert SGR in always.stdout
    plain = run_forge("backlog", "list", cwd=project)
    assert plain.returncode == 0 and "\x1b" not in plain.stdout
    dumb = on_tty(project, "backlog", "list", env={"TERM": "dumb"})[1]
    assert SGR not in dumb


def test_json_is_never_coloured(project: Path) -> None:
    code, output = on_tty(project, "backlog", "list", "--json",
                          git=("-c", "color.ui=always"))
    assert code == 0 and SGR not in output


def test_no_color_is_refused_nowhere_and_changes_nothing_else(project: Path) -> None:
    plain = run_forge("backlog", "list", cwd=project)
    flagged = run_forge("backlog", "list", "--no-color", cwd=project)
    assert (flagged.returncode, flagged.stdout) == (plain.returncode, plain.stdout)
    shown = run_forge("--no-color", "status", "--no-color", cwd=project)
    assert shown.returncode == 0, shown.stderr
