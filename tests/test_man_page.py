"""git-forge(1): generated from the parser, in sync with it, complete, well-formed, and
installed by a plain wheel install where `git help forge` finds it."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import zipfile
from pathlib import Path

import pytest
import waiting
from helpers import load_generator

from git_forge import __version__

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "man" / "git-forge.1"
SECTIONS = ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS", "EXIT STATUS", "FILES",
            "ENVIRONMENT", "EXAMPLES", "SEE ALSO")


def roff_text(text: str) -> str:
    """Roff source as plain words: escapes and font changes removed."""
    text = re.sub(r"\\f[BIRP]|\\[,/&]|\\e", "", text)
    return text.replace("\\-", "-")


def page_source() -> str:
    return PAGE.read_text("utf-8")


def test_committed_page_is_generated_from_the_current_parser() -> None:
    assert page_source() == load_generator().man_page(), (
        "man/git-forge.1 is out of date: run python tools/generate_docs.py")


def test_generation_does_not_depend_on_the_terminal_width(monkeypatch) -> None:
    generator = load_generator()
    monkeypatch.setenv("COLUMNS", "40")
    narrow = generator.man_page()
    monkeypatch.setenv("COLUMNS", "250")
    assert generator.man_page() == narrow == page_source()


def test_header_has_the_version_and_no_build_date() -> None:
    header = page_source().splitlines()[0]
    assert header == f'.TH GIT\\-FORGE "1" "" "git\\-forge {__version__}" "Git Forge Manual"'


def test_page_has_every_section() -> None:
    lines = page_source().splitlines()
    # ".SH TITLE", or ".SH" alone with the title on the next line
    headings = [(line[4:] or lines[index + 1]).strip('"') for index, line in enumerate(lines)
                if line == ".SH" or line.startswith(".SH ")]
    for section in SECTIONS:
        assert section in headings, section


def test_every_command_and_verb_has_a_section_with_all_its_options() -> None:
    generator = load_generator()
    text = roff_text(page_source())
    parser = generator.parser()
    paths = generator.command_paths(parser)
    assert ("backlog", "answer") in paths and ("completion",) in paths
    for path, each in generator.walk(parser):
        if not path:
            continue
        heading = f".SS git-forge {' '.join(path)}\n"
        assert heading in text, path
        section = text.split(heading, 1)[1].split("\n.SS ", 1)[0]
        for action in each._actions:
            if action.help == argparse.SUPPRESS:  # hidden here, documented once (--no-color)
                continue
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert option in section, (path, option)


def _exit_codes(heading: str) -> set[int]:
    """The codes listed after ``.B git forge <command>`` in EXIT STATUS."""
    exit_status = page_source().split(".SH EXIT STATUS\n", 1)[1].split("\n.SH ", 1)[0]
    paragraph = exit_status.split(f".B {heading}\n", 1)[1].split("\n.TP", 1)[0]
    words = " ".join(roff_text(paragraph).split())
    return {int(code) for code in re.findall(r"(?:^|; )(\d+) ", words)}


def test_exit_status_lists_the_codes_the_commands_use() -> None:
    from git_forge import exit_codes
    from git_forge.exit_codes import EXIT_USAGE, PREFLIGHT_STOP, RECONCILE_TREE_DIRTY

    def constants(group: str) -> set[int]:
        return {value for name, value in vars(exit_codes).items()
                if name.startswith(group) and isinstance(value, int)}

    assert _exit_codes("git forge loop run") == constants("LOOP_")
    assert _exit_codes("git forge recover") == constants("RECOVER_") | {EXIT_USAGE}
    assert _exit_codes("git forge reconcile") == {0, RECONCILE_TREE_DIRTY}
    assert _exit_codes("git forge preflight") == {0, PREFLIGHT_STOP}


def test_files_and_environment_name_what_the_code_uses() -> None:
    from git_forge import layout

    text = roff_text(page_source())
    files = text.split(".SH FILES\n", 1)[1].split("\n.SH ", 1)[0]
    for name in (layout.BACKLOG_FILE, layout.STATE_FILE, layout.EVENTS_FILE,
                 layout.DECISIONS_FILE, layout.LOOP_LOCK_FILE, layout.LOOP_RUN_FILE,
                 layout.PROC_DIR + "/", layout.ARCHIVE_DIR + "/", layout.REPO_CONFIG,
                 layout.FEATURE_FORGE_CONFIG, layout.USER_CONFIG, "refs/forge/discarded/"):
        assert name in files, name
    environment = text.split(".SH ENVIRONMENT\n", 1)[1].split("\n.SH ", 1)[0]
    runner_source = (ROOT / "git_forge" / "loop" / "iteration.py").read_text("utf-8")
    for name in ("NO_COLOR", "GIT_DIR", "GIT_WORK_TREE", "GIT_AUTHOR_NAME",
                 "GIT_COMMITTER_EMAIL", "XDG_CONFIG_HOME", "FORGE_ITEM_ID", "FORGE_ITERATION",
                 "FORGE_RUN_ID"):
        assert name in environment, name
    for name in re.findall(r'"(FORGE_[A-Z_]+)":', runner_source):  # every variable an agent gets
        assert name in environment, name


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_page_renders_without_a_single_roff_warning() -> None:
    result = waiting.run(["groff", "-man", "-ww", "-z", "-Tutf8", str(PAGE)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    ascii_device = waiting.run(["groff", "-man", "-ww", "-z", "-Tascii", str(PAGE)],
                                  capture_output=True, text=True, timeout=60)
    assert ascii_device.stderr == ""


def test_generator_check_mode_reports_no_stale_file() -> None:
    result = waiting.run([sys.executable, str(ROOT / "tools" / "generate_docs.py"), "--check"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""


# --- installed by a wheel ------------------------------------------------------------------------


def build_wheel(source: Path, out: Path) -> Path:
    """A wheel of this checkout, built as pip builds it (isolated build environment)."""
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
        ".ruff_cache", "tests", "benchmarks"))
    result = waiting.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps",
                             "-q", "-w", str(out)], capture_output=True, text=True, timeout=300)
    if result.returncode != 0 and "No matching distribution" in result.stderr:
        pytest.skip("the build backend cannot be installed here (no package index)")
    assert result.returncode == 0, result.stderr
    (wheel,) = out.glob("git_forge-*.whl")
    return wheel


# Builds a wheel and an editable install in isolated build environments, and installs
# them into a new virtual environment: seconds when pip's cache is warm, minutes when it
# is cold.
@pytest.mark.timeout(700)
def test_every_install_in_any_order_puts_the_page_where_git_help_forge_finds_it(
        tmp_path: Path) -> None:
    source = tmp_path / "src"
    wheel = build_wheel(source, tmp_path / "dist")
    data = f"git_forge-{__version__}.data/data/share/"
    shipped = {
        data + "man/man1/git-forge.1": ROOT / "man" / "git-forge.1",
        data + "bash-completion/completions/git-forge.bash": ROOT / "completions" /
        "git-forge.bash",
        data + "zsh/site-functions/_git-forge": ROOT / "completions" / "_git-forge",
        data + "fish/vendor_completions.d/git-forge.fish": ROOT / "completions" /
        "git-forge.fish",
        "git_forge/data/completions/git-forge.bash": ROOT / "completions" / "git-forge.bash",
        "git_forge/data/completions/_git-forge": ROOT / "completions" / "_git-forge",
        "git_forge/data/completions/git-forge.fish": ROOT / "completions" / "git-forge.fish",
    }
    with zipfile.ZipFile(wheel) as archive:
        for name, source_file in shipped.items():
            assert archive.read(name) == source_file.read_bytes(), name  # contents, not symlinks

    # A fresh virtual environment (never this one: installing git-forge here would
    # replace the checkout's own install), filled by this environment's pip.
    prefix = tmp_path / "venv"
    waiting.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True,
                   timeout=120)

    def install(*what: str) -> None:
        done = waiting.run([sys.executable, "-m", "pip", "--python", str(prefix / "bin" /
                            "python"), "install", "-q", "--no-deps", *what],
                           capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr

    install("--no-index", str(wheel))
    page = prefix / "share" / "man" / "man1" / "git-forge.1"
    assert page.read_bytes() == PAGE.read_bytes()
    # The launcher, not a generated console script: nothing but git-forge's own code
    # (no `re`) is imported before `--version` answers.
    launcher = prefix / "bin" / "git-forge"
    assert launcher.read_text().startswith(f"#!{prefix / 'bin'}/python")
    started = waiting.run([str(launcher), "--version"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}, timeout=60)
    assert started.stdout == f"git-forge version {__version__}\n", started.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in started.stderr.splitlines()}
    assert "git_forge.cli.main" in imported and "re" not in imported
    if shutil.which("man") is None:
        pytest.skip("man is not installed: the page is installed, `git help forge` not tried")
    assert_help_is_the_page(prefix, tmp_path)
    # The README's set-up commands in that order: the development install (editable)
    # over the plain one, which pip removes first, page included — then the other way.
    install("-e", str(source))
    assert page.read_bytes() == PAGE.read_bytes()
    assert_help_is_the_page(prefix, tmp_path)
    install("--no-index", str(wheel))
    assert_help_is_the_page(prefix, tmp_path)


def assert_help_is_the_page(prefix: Path, home: Path) -> None:
    """``git help forge`` and ``git forge --help`` show the page installed under
    ``prefix``: man derives its search path from PATH (<prefix>/bin ->
    <prefix>/share/man), and git turns both into `man git-forge`."""
    env = {"HOME": str(home), "PATH": f"{prefix / 'bin'}{os.pathsep}{os.environ['PATH']}",
           "MANPAGER": "cat", "PAGER": "cat", "MANWIDTH": "80", "LANG": "C.UTF-8"}
    found = waiting.run(["man", "-w", "git-forge"], env=env, capture_output=True, text=True,
                           timeout=60)
    assert found.stdout.strip() == str(prefix / "share" / "man" / "man1" / "git-forge.1")
    for argv in (["git", "help", "forge"], ["git", "forge", "--help"]):
        shown = waiting.run(argv, env=env, cwd=home, capture_output=True, text=True,
                               timeout=60)
        assert shown.returncode == 0, shown.stderr
        assert "git-forge - run coding-agent loops safely and recover them" in shown.stdout
        assert "EXIT STATUS" in shown.stdout


def test_the_global_no_color_is_documented_once_in_options() -> None:
    options = roff_text(page_source()).split(".SH OPTIONS\n", 1)[1].split("\n.SH ", 1)[0]
    assert "--no-color" in options and "color.ui" in options
