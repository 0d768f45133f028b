"""Entry point of ``git-forge`` (and ``git forge``): build the parser, dispatch.

Every handler returns an exit code. Every ``ForgeError`` becomes one line
``Error: <message>`` on stderr with the error's exit code; argparse's own
usage errors take the same path (exit 2). Everything printed, a traceback
included, passes the terminal boundary (``cli.output``): stdout and stderr are
wrapped for the whole command.
"""

from __future__ import annotations

import os
import sys

from git_forge import __version__
from git_forge.errors import ForgeError, os_error_text
from git_forge.exit_codes import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_USAGE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from git_forge.cli.preflight import Probe

#: What ``git forge --version`` prints (argparse's ``version`` action prints the same).
VERSION_LINE = f"git-forge version {__version__}"

#: Commands whose plain command lines are read without a parser (``quick_args``,
#: ``quick_decision_list_args``): the words naming them. ``preflight`` runs before every
#: launch; ``status``, ``backlog list`` and ``decision list`` are what scripts, prompts
#: and the recovery procedure ask most often, and building a parser (argparse, with
#: ``gettext``, ``locale`` and ``shutil``) costs more than the rest of their answer.
QUICK_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("preflight",), ("status",), ("backlog", "list"), ("decision", "list"))


class QuickArgs:
    """A quick command's arguments from a plain command line: the attributes argparse
    would give (``path``, ``backlog``, ``json``, ``no_color``; ``status``, the
    ``backlog list`` filter, is never given on one), and what ``preflight``'s ``go``
    found (``probe``)."""

    __slots__ = ("path", "backlog", "json", "no_color", "status", "probe")

    def __init__(self, path: str, backlog: str | None, json: bool, no_color: bool) -> None:
        self.path, self.backlog, self.json, self.no_color = path, backlog, json, no_color
        self.status: str | None = None
        self.probe: Probe | None = None


class QuickDecisionListArgs:
    """``decision list``'s arguments from a plain command line, as argparse gives them."""

    __slots__ = ("backlog_dir", "state_dir", "config", "json", "unapplied", "no_color")

    def __init__(self, backlog_dir: str | None, state_dir: str | None, config: str | None,
                 json: bool, unapplied: bool, no_color: bool) -> None:
        self.backlog_dir, self.state_dir, self.config = backlog_dir, state_dir, config
        self.json, self.unapplied, self.no_color = json, unapplied, no_color


def plain_words(words: list[str], valued: tuple[str, ...], flags: tuple[str, ...], *,
                positional: bool) -> tuple[dict[str, str], set[str], str | None] | None:
    """``words`` read as a plain command line — each of the ``valued`` options at most
    once, as ``--name VALUE`` or ``--name=VALUE``, each of the ``flags`` at most once,
    and (when ``positional``) at most one word that is not an option — as (values,
    flags given, the positional word); else ``None``. A value is never empty and never
    begins with ``-``. Anything else (help, abbreviations, ``--``, a repeat, an empty
    word, every usage error) is argparse's to read, so its messages stay its own."""
    values: dict[str, str] = {}
    given: set[str] = set()
    word_given: str | None = None
    index = 0
    while index < len(words):
        word = words[index]
        name, equals, value = word.partition("=")
        if word in flags and word not in given:
            given.add(word)
        elif name in valued and name not in values:
            if not equals:
                if index + 1 >= len(words):
                    return None
                index += 1
                value = words[index]
            if value[:1] in ("-", ""):
                return None
            values[name] = value
        elif positional and word[:1] not in ("-", "") and word_given is None:
            word_given = word
        else:
            return None
        index += 1
    return values, given, word_given


def quick_args(words: list[str]) -> QuickArgs | None:
    """The arguments after a location-taking quick command's name (``preflight``,
    ``status``, ``backlog list``) when they take one of the plain shapes
    (``plain_words``): at most one ``PATH``, ``--backlog DIR``, ``--json``,
    ``--no-color``; else ``None``."""
    found = plain_words(words, ("--backlog",), ("--json", "--no-color"), positional=True)
    if found is None:
        return None
    values, given, path = found
    return QuickArgs("." if path is None else path, values.get("--backlog"),
                     "--json" in given, "--no-color" in given)


def quick_decision_list_args(words: list[str]) -> QuickDecisionListArgs | None:
    """``decision list``'s arguments when they take a plain shape (``plain_words``);
    else ``None``. An empty ``--state-dir ""`` (the backlog dir itself) is legal, and
    argparse's to read."""
    found = plain_words(words, ("--backlog-dir", "--state-dir", "--config"),
                        ("--json", "--unapplied", "--no-color"), positional=False)
    if found is None:
        return None
    values, given, _ = found
    return QuickDecisionListArgs(values.get("--backlog-dir"), values.get("--state-dir"),
                                 values.get("--config"), "--json" in given,
                                 "--unapplied" in given, "--no-color" in given)


def main(argv: list[str] | None = None) -> int:
    """The command ``argv`` (default: the process's arguments) names, run: its exit
    code."""
    words = sys.argv[1:] if argv is None else argv
    if words == ["--version"]:  # the one command that needs neither a parser nor a guard
        try:  # unbuffered, the write itself fails; buffered, the flush
            sys.stdout.write(VERSION_LINE + "\n")
            sys.stdout.flush()
        except BrokenPipeError:  # a reader that went away: no error, as on every path
            _stdout_to_devnull()
        except OSError as exc:  # the text is git-forge's own: no guard needed
            _stdout_to_devnull()
            sys.stderr.write(f"Error: {_unwritable(exc)}\n")
            return EXIT_USAGE
        return 0
    quick: QuickArgs | QuickDecisionListArgs | None = None
    for command in QUICK_COMMANDS:
        if words[:len(command)] == list(command):
            rest = words[len(command):]
            quick = (quick_decision_list_args(rest) if command == ("decision", "list")
                     else quick_args(rest))
            break
    if isinstance(quick, QuickArgs) and words[0] == "preflight":
        # the pre-launch hook's clean tree prints nothing
        from git_forge.cli.preflight import go

        answer = go(quick)
        if answer is not None:
            return answer
    from git_forge.cli.output import guarded

    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = guarded(sys.stdout), guarded(sys.stderr)
    try:
        return _dispatch(words, quick)
    except Exception:  # a bug: its traceback still passes the terminal boundary
        import traceback

        traceback.print_exc()
        return EXIT_ERROR
    finally:
        sys.stdout, sys.stderr = streams


def _written(code: int) -> int:
    """``code``, once the command's answer has left stdout's buffer. An answer that
    cannot be written (a full disk) is the command's error, one ``Error:`` line and
    exit 2, rather than the interpreter's complaint at exit: what stays buffered is
    dropped, so that its last flush cannot fail a second time. A reader that went
    away (``| head``) is left to ``_dispatch``, as when it leaves mid-answer."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        _stdout_to_devnull()
        raise ForgeError(_unwritable(exc)) from None
    return code


def _unwritable(exc: OSError) -> str:
    return f"cannot write the output: {os_error_text(exc)}"


def _stdout_to_devnull() -> None:
    """Point stdout's descriptor at /dev/null: what is still buffered for a reader
    that went away, or a disk that is full, then flushes quietly at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _run_quick(command: str, quick: QuickArgs | QuickDecisionListArgs) -> int:
    """A quick command (``QUICK_COMMANDS``) run from its plain command line."""
    if isinstance(quick, QuickDecisionListArgs):
        from git_forge.cli.decision import run_list as decision_list

        return decision_list(quick)
    if command == "preflight":
        from git_forge.cli.preflight import run as preflight

        return preflight(quick)
    if command == "status":
        from git_forge.cli.status import run as status

        return status(quick)
    from git_forge.cli.backlog import run_list

    return run_list(quick)


def _dispatch(argv: list[str], quick: QuickArgs | QuickDecisionListArgs | None = None
              ) -> int:
    """Run the command ``argv`` names; ``quick`` is a quick command's arguments
    when its plain command line needed no parser."""
    if argv[:1] == ["__complete"]:
        # The completion scripts' fast path: no parser, no core imports (see cli.completion).
        from git_forge.cli.completion import complete_values

        return complete_values(argv[1:])
    try:
        from git_forge.cli.output import configure_color

        if quick is not None:
            configure_color(no_color=quick.no_color)
            return _written(_run_quick(argv[0], quick))
        from git_forge.cli.parser import build_parser, commands_for, parse_command_line

        parser = build_parser(prog="git forge", commands=commands_for(argv))
        if all(word == "--no-color" for word in argv):
            # like `git` alone (or `git --no-pager`): the overview on stdout, exit 1
            parser.print_help()
            return EXIT_ERROR
        args = parse_command_line(parser, argv)
        configure_color(no_color=getattr(args, "no_color", False))
        return _written(int(args.func(args)))
    except ForgeError as exc:
        from git_forge.cli.output import error
        from git_forge.cli.plain import plain

        error(plain(exc.message))
        for line in getattr(exc, "hint", ()):
            print(line, file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`git forge backlog list | head`): not an error.
        _stdout_to_devnull()
        return 0
    except OSError as exc:
        from git_forge.cli.output import error

        error(f"{exc.filename}: {os_error_text(exc)}" if exc.filename else os_error_text(exc))
        return EXIT_USAGE
