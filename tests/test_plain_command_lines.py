"""The plain command lines (``cli.args.read_plain``): read without argparse from a table
generated from the parser, always to the very ``Args`` argparse gives, or not at all.

Every command of the table is tried with lines built from its own parser — each option,
each spelling of a value, positional words from none to one too many, ``--no-color``
before and after, and words only argparse may read — and each line read plainly is
compared with argparse's reading of it."""

from __future__ import annotations

import argparse
import itertools
import subprocess

import pytest
from helpers import forge_argv, load_generator

from git_forge.cli.args import Args, read_plain
from git_forge.cli.command_lines import COMMAND_LINES
from git_forge.cli.parser import build_parser, command_parser, parse_command_line
from git_forge.errors import UsageError

ROOT_PARSER = build_parser(prog="git forge")


def argparse_reading(words: list[str]) -> Args | UsageError:
    try:
        return parse_command_line(ROOT_PARSER, words)
    except UsageError as exc:
        return exc


def lines_of(path: tuple[str, ...]) -> tuple[list[list[str]], list[list[str]]]:
    """Command lines for the command ``path``: those ``read_plain`` must read, and
    others, each read plainly only if argparse reads it the same."""
    parser = command_parser(ROOT_PARSER, path)
    line = COMMAND_LINES[path]
    required = [word for option in line["required"] for word in (option, "given")]
    needed = [f"p{n}" for n, (_, must) in enumerate(line["positionals"]) if must]
    base = [*path, *needed, *required]
    plain = [base, ["--no-color", *base], [*base, "--no-color"]]
    for option in line["flags"]:
        plain.append([*base, option])
    for option in line["values"]:
        plain += [[*base, option, "v"], [*base, f"{option}=v w"], [*base, f"{option}="]]
    if line["flags"]:
        plain.append([*base, *line["flags"]])
    for count in range(len(line["positionals"]) + 2):
        words = [*path, *(f"w{n}" for n in range(count)), *required]
        plain.append(words)
    others = []
    for action in parser._actions:
        for option in action.option_strings:
            if option in ("-h", "--help"):
                continue
            others += [[*base, option], [*base, option, "v"], [*base, option, "-v"],
                       [*base, option[:4]], [*base, option, option], [*base, f"{option}=--"],
                       [*base, f"{option}=-v"], [*base, option, "--"]]
    others += [[*base, "--"], [*base, "--", "w"], [*base, "-"], [*base, "--nope"],
               [*path, *required, "--no-color", *needed], [*base, "w", "x", "y", "z"]]
    if line["flags"] or line["values"]:
        first = next(iter({**line["flags"], **line["values"]}))
        others.append([*path, first, *(["v"] if first in line["values"] else []), "w"])
    for group in line["exclusive"]:
        others.append([*base, *itertools.chain.from_iterable(
            [option] if option in line["flags"] else [option, "v"] for option in group)])
    return plain, others


@pytest.mark.parametrize("path", list(COMMAND_LINES), ids=" ".join)
def test_a_plain_line_is_read_as_argparse_reads_it(path: tuple[str, ...]) -> None:
    plain, others = lines_of(path)
    read = 0
    for words in plain + others:
        quick = read_plain(words)
        if quick is None:
            continue
        read += 1
        slow = argparse_reading(words)
        assert isinstance(slow, Args) and vars(quick) == vars(slow), words
    for words in plain[:3]:  # the command alone is read plainly: the table is used
        assert read_plain(words) is not None, words
    assert read >= len(plain) // 2


def test_a_line_argparse_refuses_is_never_read_plainly() -> None:
    refused = [words for path in COMMAND_LINES for words in lines_of(path)[1]
               if isinstance(argparse_reading(words), UsageError)]
    assert len(refused) > 100
    assert [words for words in refused if read_plain(words) is not None] == []


def test_the_committed_table_is_generated_from_the_current_parser() -> None:
    from pathlib import Path

    table = Path(__file__).resolve().parent.parent / "git_forge" / "cli" / "command_lines.py"
    assert table.read_text("utf-8") == load_generator().command_lines_module(), (
        "git_forge/cli/command_lines.py is out of date: run python tools/generate_docs.py")


def test_an_option_the_table_lacks_would_fail_that_comparison() -> None:
    """A flag added to a command's parser changes the table generated from it — so the
    committed table, until regenerated, fails the test above, rather than the command
    reading ``Args`` without the flag's attribute."""
    generator = load_generator()
    before = generator.command_lines_module()
    from git_forge.cli import backlog

    register = backlog.register

    def with_a_new_flag(parser: argparse.ArgumentParser) -> None:
        register(parser)
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        sub.choices["list"].add_argument("--newest-first", action="store_true")

    backlog.register = with_a_new_flag
    try:
        after = generator.command_lines_module()
    finally:
        backlog.register = register
    assert "'newest_first': False" in after and "'newest_first'" not in before


def test_commands_whose_lines_are_all_argparse_s() -> None:
    """A command with a positional list (``nargs='+'``), a typed positional, or a
    required choice between options has no entry: each of its lines goes to argparse."""
    for path in [("backlog", "done"), ("backlog", "drop"), ("proc", "wait"), ("help",),
                 ("completion",), ("decision", "record")]:
        assert path not in COMMAND_LINES
        assert read_plain([*path, "x"]) is None


def test_a_value_written_equals_dash_dash_is_that_text() -> None:
    """``--title=--`` is the title ``--``, read plainly or by argparse (an abbreviation
    makes it argparse's): Python 3.11's argparse alone would take ``--`` out of it and
    hand the command an empty list."""
    for words in (["backlog", "add", "--title=--"], ["backlog", "add", "--tit=--"],
                  ["status", "--backlog=--"], ["status", "--backl=--"]):
        slow = argparse_reading(words)
        assert isinstance(slow, Args), words
        assert "--" in vars(slow).values(), words
    assert vars(read_plain(["status", "--backlog=--"]) or Args())["backlog"] == "--"


@pytest.mark.parametrize("words", [["status"], ["status", "--json"],
                                   ["backlog", "show", "1", "--json"]])
def test_a_plain_line_runs_as_the_parsed_one(tmp_path, words) -> None:
    """The same command line, read plainly and with a word argparse must read, gives
    the same output and exit code."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run([*forge_argv(), "init", str(tmp_path)], check=True, capture_output=True)
    subprocess.run([*forge_argv(), "backlog", "add", str(tmp_path), "--title", "one"],
                   check=True, capture_output=True)

    def run(line: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*forge_argv(), *line], cwd=tmp_path, capture_output=True,
                              text=True, timeout=60)

    with_value = [*words, "--backlog", ".forge"]  # an option's value: still plain
    abbreviated = [*words, "--no-col"]  # an abbreviation: argparse reads the line
    assert read_plain(with_value) is not None and read_plain(abbreviated) is None
    outputs = {tuple(line): run(line) for line in (words, with_value, abbreviated)}
    assert len({(r.returncode, r.stdout, r.stderr) for r in outputs.values()}) == 1, outputs
    assert outputs[tuple(words)].returncode == 0
