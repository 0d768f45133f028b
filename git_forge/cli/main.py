"""Entry point of ``git-forge`` (and ``git forge``): build the parser, dispatch.

Every handler returns an exit code. Every ``ForgeError`` becomes one line
``Error: <message>`` on stderr with the error's exit code; argparse's own
usage errors take the same path (exit 2). Everything printed, a traceback
included, passes the terminal boundary (``cli.output``): stdout and stderr are
wrapped for the whole command.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from git_forge import __version__
from git_forge.errors import ForgeError, UsageError
from git_forge.exit_codes import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_USAGE

#: Command-group modules under ``git_forge.cli``, in the order ``--help`` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "version",
    "decision",
    "init",
    "backlog",
    "status",
    "config",
    "reconcile",
    "preflight",
    "hooks",
    "proc",
    "loop",
    "recover",
    "demo",
    "completion",
    "help",
)

#: Commands on a hot path, whose parser ``main`` builds alone when the command
#: line starts with their name: ``preflight`` runs before every loop launch
#: (the pre-launch hook) and must cost about what ``git status`` costs, while
#: importing every command module to build the whole tree costs ~30 ms. The
#: parser built is the very subparser the whole tree has (same ``prog``, so the
#: same help and the same usage errors).
HOT_COMMANDS: frozenset[str] = frozenset({"preflight"})


class UnknownCommand(UsageError):
    """A word that names no command, said the way git says it: one ``Error:`` line,
    then the most similar commands (``hint``) on lines of their own."""

    def __init__(self, prog: str, word: str, choices: Sequence[str]) -> None:
        where = prog.split(" ", 2)[2:]  # "git forge backlog" → ["backlog"]
        help_command = " ".join(["git forge help", *where])
        super().__init__(f"'{word}' is not a {prog} command. See '{help_command}'.")
        similar = similar_commands(word, choices)
        self.hint = [] if not similar else [
            "", "The most similar command is" if len(similar) == 1 else
            "The most similar commands are", *(f"\t{name}" for name in similar)]


def similar_commands(word: str, choices: Sequence[str]) -> list[str]:
    """Commands ``word`` may have meant: those it begins (``rec`` → recover,
    reconcile), then the closest spellings (``staus`` → status)."""
    import difflib

    found = [name for name in choices if len(word) >= 2 and name.startswith(word)]
    found += [name for name in difflib.get_close_matches(word, choices, n=3, cutoff=0.6)
              if name not in found]
    return found


class ForgeArgumentParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are ordinary ``UsageError``s."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} -h')")

    def _check_value(self, action: argparse.Action, value: object) -> None:
        """An unknown command is refused naming the most similar ones."""
        if isinstance(action, argparse._SubParsersAction) and isinstance(value, str) and (
                value not in action.choices):
            raise UnknownCommand(self.prog, value, list(action.choices))
        super()._check_value(action, value)


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def command_parser(root: argparse.ArgumentParser, words: Sequence[str]
                   ) -> argparse.ArgumentParser:
    """The parser of the command ``words`` name (``["backlog", "answer"]``); an
    unknown word is an ``UnknownCommand``."""
    parser = root
    for word in words:
        sub = _subparsers(parser)
        if sub is None:
            raise UsageError(f"'{parser.prog}' has no sub-command '{word}'. "
                             f"See '{' '.join(['git forge help', *parser.prog.split()[2:]])}'.")
        if word not in sub.choices:
            raise UnknownCommand(parser.prog, word, list(sub.choices))
        parser = sub.choices[word]
    return parser


def build_parser(
    prog: str = "git-forge", commands: Sequence[str] = COMMAND_MODULES
) -> argparse.ArgumentParser:
    """The whole command tree (or the named command groups of it). ``prog`` is
    set by ``main``; the man page and the completion generators call this with
    the defaults."""
    parser = ForgeArgumentParser(
        prog=prog,
        description=(
            "Run autonomous coding-agent loops safely, and recover them without "
            "losing a decision or a line of work."
        ),
    )
    parser.add_argument("--version", action="version", version=f"git-forge version {__version__}")
    parser.add_argument("--no-color", action="store_true", default=argparse.SUPPRESS,
                        help="never colour the output (also accepted after the command); "
                             "otherwise colour follows NO_COLOR, then git's color.forge or "
                             "color.ui")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in commands:
        importlib.import_module(f"git_forge.cli.{name}").register(subparsers)
    _accept_no_color(subparsers)
    return parser


def _accept_no_color(subparsers: argparse._SubParsersAction) -> None:
    """``--no-color`` after any command too (``git forge status --no-color``), as
    git's own commands take it; hidden there, documented once at the top. Its
    default is SUPPRESS so a subcommand never overwrites the top-level flag."""
    for sub in subparsers.choices.values():
        sub.add_argument("--no-color", action="store_true", default=argparse.SUPPRESS,
                         help=argparse.SUPPRESS)
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):
                _accept_no_color(action)


def _commands_for(argv: Sequence[str]) -> Sequence[str]:
    """Only a hot command's own parser when the command line names it first."""
    if argv and argv[0] in HOT_COMMANDS:
        return (argv[0],)
    return COMMAND_MODULES


def main(argv: list[str] | None = None) -> int:
    from git_forge.cli.output import guarded

    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = guarded(sys.stdout), guarded(sys.stderr)
    try:
        return _dispatch(sys.argv[1:] if argv is None else argv)
    except Exception:  # a bug: its traceback still passes the terminal boundary
        import traceback

        traceback.print_exc()
        return EXIT_ERROR
    finally:
        sys.stdout, sys.stderr = streams


def _dispatch(argv: list[str]) -> int:
    if argv[:1] == ["__complete"]:
        # The completion scripts' fast path: no parser, no core imports (see cli.completion).
        from git_forge.cli.completion import complete_values

        return complete_values(argv[1:])
    try:
        parser = build_parser(prog="git forge", commands=_commands_for(argv))
        if not argv:  # like `git` alone: the overview, and a non-zero status
            parser.print_help()
            return EXIT_ERROR
        args = parser.parse_args(argv)
        from git_forge.cli.output import configure_color

        configure_color(no_color=getattr(args, "no_color", False))
        return int(args.func(args))
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
        # Point stdout at /dev/null so the interpreter's final flush stays quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as exc:
        from git_forge.cli.output import error
        from git_forge.errors import os_error_text

        error(f"{exc.filename}: {os_error_text(exc)}" if exc.filename else os_error_text(exc))
        return EXIT_USAGE
