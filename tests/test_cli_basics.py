"""The command line's conventions: version, help, usage errors, pipes, git dispatch."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import waiting
from helpers import forge_argv, run_forge, snapshot

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
    """As git does: `git` alone, or with only its own options (`git --no-pager`), prints
    its usage on stdout and exits 1."""
    git_alone = waiting.run(["git", "--no-pager"], cwd=tmp_path, capture_output=True,
                            text=True)
    assert (git_alone.returncode, git_alone.stderr) == (1, "")
    assert git_alone.stdout.startswith("usage: git ")
    result = run_forge(cwd=tmp_path)
    assert (result.returncode, result.stderr) == (1, "")
    assert result.stdout.startswith("usage: git forge")
    for command in ("loop", "recover", "reconcile", "preflight", "demo"):
        assert f"    {command}" in result.stdout
    for argv in (["forge"], ["forge", "--no-color"]):  # through git, as a user types it
        through_git = waiting.run(["git", *argv], cwd=tmp_path, capture_output=True,
                                  text=True)
        assert (through_git.returncode, through_git.stderr) == (1, ""), argv
        assert through_git.stdout == result.stdout


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


def test_an_unknown_command_names_the_most_similar_one_as_git_does(tmp_path: Path) -> None:
    result = run_forge("staus", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [
        "Error: 'staus' is not a git forge command. See 'git forge help'.", "",
        "The most similar command is", "\tstatus"]
    nested = run_forge("backlog", "lst", cwd=tmp_path)
    assert nested.returncode == 2 and nested.stderr.splitlines() == [
        "Error: 'lst' is not a git forge backlog command. See 'git forge help backlog'.", "",
        "The most similar command is", "\tlist"]
    several = run_forge("rec", cwd=tmp_path).stderr.splitlines()
    assert several[2:] == ["The most similar commands are", "\treconcile", "\trecover"]


def test_an_unknown_option_is_named_and_points_at_the_help_that_lists_the_options(
        tmp_path: Path) -> None:
    """Before a command, an unknown option is named (not "a command is required", and
    ``--version`` does not hide it); after one, the error points at that command's
    help."""
    for args, line in (
        (["--bogus"], "Error: unknown option: --bogus (see 'git forge -h')"),
        (["--bogus", "--version"], "Error: unknown option: --bogus (see 'git forge -h')"),
        (["--no-color", "--bogus", "status"],
         "Error: unknown option: --bogus (see 'git forge -h')"),
        (["backlog", "list", "--bogus"],
         "Error: unrecognized arguments: --bogus (see 'git forge backlog list -h')"),
        (["backlog", "--bogus", "list"],
         "Error: unrecognized arguments: --bogus (see 'git forge backlog list -h')"),
        (["proc", "list", "extra"],
         "Error: unrecognized arguments: extra (see 'git forge proc list -h')"),
    ):
        result = run_forge(*args, cwd=tmp_path)
        assert (result.returncode, result.stdout, result.stderr) == (2, "", line + "\n"), args
    # a unique prefix of a global option is still that option, as argparse takes it
    assert run_forge("--vers", cwd=tmp_path).stdout.startswith("git-forge version ")
    assert run_forge("--no-col", "help", cwd=tmp_path).returncode == 0


def test_the_overview_lists_the_commands_in_the_order_a_user_needs_them(
        tmp_path: Path) -> None:
    """Setting up, running, looking, recovering first; version and help last (it opened
    with version and decision, and put loop and recover low)."""
    overview = run_forge("help", cwd=tmp_path).stdout
    listed = [line.split()[0] for line in overview.split("COMMAND\n", 1)[1].split(
        "\noptions:", 1)[0].splitlines() if line.startswith("    ") and line[4] != " "]
    assert listed[:8] == ["init", "loop", "status", "watch", "recover", "reconcile",
                          "backlog", "decision"]
    assert listed[-2:] == ["version", "help"] and len(listed) == len(set(listed)) == 17


def test_help_prints_the_overview_or_a_commands_help(tmp_path: Path) -> None:
    overview = run_forge("help", cwd=tmp_path)
    assert overview.returncode == 0 and overview.stderr == ""
    assert overview.stdout == run_forge("-h", cwd=tmp_path).stdout
    assert "    help " in overview.stdout
    verb = run_forge("help", "loop", "run", cwd=tmp_path)
    assert verb.returncode == 0
    assert verb.stdout == run_forge("loop", "run", "-h", cwd=tmp_path).stdout
    assert verb.stdout.startswith("usage: git forge loop run")
    typo = run_forge("help", "lop", cwd=tmp_path)
    assert typo.returncode == 2 and typo.stdout == ""
    assert typo.stderr.splitlines()[0] == (
        "Error: 'lop' is not a git forge command. See 'git forge help'.")
    assert typo.stderr.splitlines()[-1] == "\tloop"


def test_a_file_that_cannot_be_read_is_named_in_words(git_repo: Path) -> None:
    assert run_forge("init", cwd=git_repo).returncode == 0
    (git_repo / "answers").mkdir()
    before = snapshot(git_repo)
    for args, line in (
        (["recover", "--answers", "missing.yaml"],
         "Error: cannot read answers file missing.yaml: no such file"),
        (["recover", "--answers", "answers"], "Error: cannot read answers file answers: "
                                              "is a directory"),
        (["backlog", "topology", "--items-json", "gone.json"],
         "Error: cannot read gone.json: no such file"),
    ):
        result = run_forge(*args, cwd=git_repo)
        assert (result.returncode, result.stdout, result.stderr) == (2, "", line + "\n"), args
    assert snapshot(git_repo) == before  # nothing written


def test_an_error_quoting_a_line_break_is_still_one_line(git_repo: Path) -> None:
    """What an error quotes — an id, a parser's message — may hold line breaks; they
    are shown escaped, so no text can end the error early or forge a second one."""
    assert run_forge("init", cwd=git_repo).returncode == 0
    (git_repo / "answers.yaml").write_text(": x\n")
    before = snapshot(git_repo)
    for args, line in (
        (["backlog", "show", "001\nError: a forged second line"],
         "Error: Item not found: 001\\nError: a forged second line"),
        (["backlog", "show", "a\rb"], "Error: Item not found: a\\rb"),
        (["recover", "--answers", "answers.yaml"],  # pyyaml's message runs over 4 lines
         "Error: answers file answers.yaml is neither JSON nor YAML: line 1: "
         "expected <block end>, but found ':'"),
    ):
        result = run_forge(*args, cwd=git_repo)
        assert (result.returncode, result.stdout, result.stderr) == (2, "", line + "\n"), args
    assert snapshot(git_repo) == before


def test_os_errors_in_words() -> None:
    import errno

    from git_forge.errors import os_error_text

    def failure(call) -> OSError:
        try:
            call()
        except OSError as exc:
            return exc
        raise AssertionError("no error")

    assert os_error_text(failure(lambda: open("/nonexistent/x"))) == "no such file"
    assert os_error_text(failure(lambda: open("/"))) == "is a directory"
    assert os_error_text(OSError(errno.ENOSPC, "No space left on device")) == (
        "no space left on device")
    # an errno without words of ours: the system's, lower-cased, never "[Errno …]"
    assert os_error_text(OSError(errno.EBUSY, "Device or resource busy")) == (
        "device or resource busy")


def test_a_command_named_first_gets_the_same_parser_built_alone() -> None:
    """Building only the named command's parser (no other command module is
    imported) must change nothing a user can see: the same help, for the command and
    each of its sub-commands, and the same parse."""
    from git_forge.cli.parser import COMMAND_MODULES, build_parser, command_parser, commands_for

    whole = build_parser(prog="git forge")
    for name in COMMAND_MODULES:
        assert commands_for([name, "--no-color"]) == (name,)
        assert commands_for(["--no-color", name]) == commands_for(["--no-col", name]) == (name,)
        alone = build_parser(prog="git forge", commands=(name,))
        pending = [[name]]
        while pending:
            words = pending.pop()
            ours, theirs = command_parser(alone, words), command_parser(whole, words)
            assert ours.format_help() == theirs.format_help(), words
            for action in ours._actions:
                if isinstance(action, argparse._SubParsersAction):
                    pending += [[*words, word] for word in action.choices]


def test_the_overview_lists_every_command_without_loading_any() -> None:
    """With no command named (``git forge``, ``-h``, ``help``, a mistyped word), every
    command is listed by its line alone, its module not loaded: the same overview as
    the whole tree's, and the same nearest commands for a mistyped one."""
    from git_forge.cli.parser import (
        UnknownCommand,
        build_parser,
        commands_for,
        parse_command_line,
    )

    for argv in ([], ["-h"], ["--no-color"], ["staus"], ["--version", "status"]):
        assert commands_for(argv) == (), argv
    listed = build_parser(prog="git forge", commands=(), listed=True)
    assert listed.format_help() == build_parser(prog="git forge").format_help()
    with pytest.raises(UnknownCommand) as mistyped:
        parse_command_line(listed, ["staus"])
    assert mistyped.value.hint[-1] == "\tstatus"


def test_help_names_a_command_and_builds_only_that_one(tmp_path: Path) -> None:
    """``git forge help backlog answer`` prints what ``git forge backlog answer -h``
    prints, and ``git forge help`` the overview, as ``git forge -h`` does."""
    for help_words, own in ((["help", "backlog", "answer"], ["backlog", "answer", "-h"]),
                            (["help"], ["-h"]), (["help", "help"], ["help", "-h"])):
        asked, direct = run_forge(*help_words, cwd=tmp_path), run_forge(*own, cwd=tmp_path)
        assert (asked.returncode, direct.returncode) == (0, 0), asked.stderr
        assert asked.stdout == direct.stdout and asked.stdout.startswith("usage: git forge")


#: A child that gives every command of the tree one more flag, as a change to a command
#: adds one, and a handler that says what reached it, and generates the plain command
#: lines' table again (``tools/generate_docs.py``, as that change must: the committed
#: table is checked against the parser), then runs each command line it reads from
#: stdin (a JSON list of words) through ``main``: one JSON line per run, [words, exit
#: code, stdout, stderr].
NEW_FLAG_EVERYWHERE = r"""
import argparse, contextlib, io, json, sys
sys.path.insert(0, sys.argv[1])  # the tests' directory
from helpers import load_generator
from git_forge.cli import args as cli_args, main as cli_main, parser as cli_parser

built = cli_parser.build_parser

def reached(args):
    print("reached", args.new_flag)
    return 0

def with_a_new_flag(*args, **kwargs):
    root = built(*args, **kwargs)
    pending = [root]
    while pending:
        parser = pending.pop()
        verbs = [action.choices for action in parser._actions
                 if isinstance(action, argparse._SubParsersAction)]
        if verbs:
            pending += verbs[0].values()
        else:
            parser.add_argument("--new-flag", action="store_true")
            parser.set_defaults(func=reached)
    return root

cli_parser.build_parser = with_a_new_flag
table = {}
exec(load_generator().command_lines_module(), table)
cli_args.COMMAND_LINES = table["COMMAND_LINES"]
for line in sys.stdin:
    words = json.loads(line)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli_main.main(words)
        except SystemExit as exc:  # --help
            code = exc.code
    print(json.dumps([words, code, out.getvalue(), err.getvalue()]))
"""


def test_every_command_line_is_read_by_the_commands_parser(tmp_path: Path) -> None:
    """One argument model: whatever a command's parser declares reaches its handler.
    A flag added to any command is there when the command is run plain (`git forge
    backlog list`, which a reader of its own once answered without it) and in its
    --help; a command that needs an argument is the parser's usage error."""
    from git_forge.cli.parser import build_parser

    groups: list[list[str]] = []
    leaves: list[list[str]] = []
    pending: list[tuple[list[str], argparse.ArgumentParser]] = [([], build_parser())]
    while pending:
        words, parser = pending.pop()
        verbs = [action.choices for action in parser._actions
                 if isinstance(action, argparse._SubParsersAction)]
        if words:
            (groups if verbs else leaves).append(words)
        if verbs:
            pending += [([*words, name], sub) for name, sub in verbs[0].items()]
    assert {"status", "preflight", "backlog list", "decision list"} <= {
        " ".join(words) for words in leaves}
    runs = [command for words in groups + leaves for command in (words, [*words, "--help"])]
    child = waiting.run([sys.executable, "-c", NEW_FLAG_EVERYWHERE, str(Path(__file__).parent)],
                        cwd=tmp_path,
                        input="".join(json.dumps(words) + "\n" for words in runs),
                        capture_output=True, text=True)
    assert child.returncode == 0, child.stderr
    results = [json.loads(line) for line in child.stdout.splitlines()]
    assert [words for words, *_ in results] == runs
    reached = []
    for words, code, out, err in results:
        if words[-1] == "--help":
            command = " ".join(words[:-1])
            assert (code, err) == (0, ""), words
            assert re.match(rf"usage: git forge {command}\s", out), words
            assert ("--new-flag" in out) == (words[:-1] in leaves), words
        elif code == 0:
            assert (out, err) == ("reached False\n", ""), words
            reached.append(" ".join(words))
        else:
            assert (code, out) == (2, ""), words
            assert err.startswith("Error: the following arguments are required: "), words
            assert err.count("\n") == 1, words
    assert {"status", "preflight", "backlog list", "decision list"} <= set(reached)


@pytest.mark.parametrize("locale_env", [{"LC_ALL": "C", "PYTHONUTF8": "0"},
                                        {"PYTHONIOENCODING": "ascii"},
                                        {"PYTHONIOENCODING": "latin-1"}],
                         ids=["C-locale", "ascii", "latin-1"])
def test_output_is_utf8_whatever_the_locale(git_repo: Path, locale_env: dict[str, str]) -> None:
    """As git writes the bytes it holds: a title no ASCII locale can encode is printed
    (not a traceback), ``--json`` is UTF-8 JSON, and a refusal is its one line."""
    title = "Café — ünïcode ✓"
    assert run_forge("init", cwd=git_repo).returncode == 0
    assert run_forge("backlog", "add", "--title", title, cwd=git_repo).returncode == 0

    def run(*args: str) -> subprocess.CompletedProcess:
        return waiting.run([*forge_argv(), *args], cwd=git_repo, capture_output=True,
                           env={**os.environ, **locale_env})

    listed = run("backlog", "list")
    assert (listed.returncode, listed.stderr) == (0, b"")
    assert title.encode("utf-8") in listed.stdout
    document = run("backlog", "list", "--json")
    assert json.loads(document.stdout.decode("utf-8"))[0]["title"] == title
    before = snapshot(git_repo)
    refused = run("backlog", "show", "é")
    assert refused.returncode == 2
    assert refused.stderr.decode("utf-8").startswith("Error: ")
    assert b"Traceback" not in refused.stderr
    if "LC_ALL" not in locale_env:  # under C, Python reads the argument's bytes as ASCII
        assert "é" in refused.stderr.decode("utf-8")
    assert snapshot(git_repo) == before


#: Starts ARGV from a directory it removes first, as a shell left in a deleted directory does.
_FROM_A_REMOVED_DIRECTORY = ("import os, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); "
                             "os.execv(sys.argv[2], sys.argv[2:])")


@pytest.mark.parametrize("args", [["status"], ["backlog", "list"], ["preflight"], ["init"]],
                         ids=" ".join)
def test_a_removed_current_directory_is_one_line(tmp_path: Path, args: list[str]) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    result = waiting.run([sys.executable, "-c", _FROM_A_REMOVED_DIRECTORY, str(gone),
                          *forge_argv(), *args], capture_output=True, text=True)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == ("Error: the current directory no longer exists; "
                             "change to one that does\n")


def test_a_tab_in_a_removed_directory_offers_nothing(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    result = waiting.run([sys.executable, "-c", _FROM_A_REMOVED_DIRECTORY, str(gone),
                          *forge_argv(), "__complete", "items"], capture_output=True, text=True)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
