"""The command tree: ``build_parser`` and the rules every parser shares (usage
errors as ``UsageError``, git's "did you mean", ``--no-color`` anywhere, and the
commands whose parser is built alone).

Apart from ``cli.main`` so that a command that needs no parser (``--version``)
never imports argparse.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from typing import Any

from git_forge import __version__
from git_forge.errors import UsageError

#: Command-group modules under ``git_forge.cli``, in the order ``--help`` lists them: by
#: what a user does — set up, run, look, recover, the backlog and its decisions — then
#: the agents, the launch gate for other launchers, processes and settings, and the
#: rest (the demo, completion, the version, help).
COMMAND_MODULES: tuple[str, ...] = (
    "init",
    "loop",
    "status",
    "recover",
    "reconcile",
    "backlog",
    "decision",
    "agents",
    "preflight",
    "hooks",
    "proc",
    "config",
    "demo",
    "completion",
    "version",
    "help",
)

#: The commands that read the whole tree (a command's help, the completion scripts).
#: Every other one, named first on the command line, gets its parser built alone, and
#: imports no other command's module: one of the measured boundaries (ARCHITECTURE.md,
#: "What is measured, and where"). The parser built is the very subparser the whole
#: tree has (same ``prog``, so the same help and the same usage errors).
#: ``--version`` alone needs no command at all.
WHOLE_TREE_COMMANDS: frozenset[str] = frozenset({"help", "completion"})


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
    """Commands ``word`` may have meant: those it begins, in alphabetical order (``rec``
    → reconcile, recover), then the closest spellings (``staus`` → status)."""
    import difflib  # parser-tree boundary: a mistyped command alone needs it

    found = sorted(name for name in choices if len(word) >= 2 and name.startswith(word))
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


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[Any] | None:
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


#: The options ``git forge`` itself takes before a command.
GLOBAL_OPTIONS = frozenset({"-h", "--help", "--version", "--no-color"})


def parse_command_line(parser: argparse.ArgumentParser, argv: Sequence[str]
                       ) -> argparse.Namespace:
    """``parser.parse_args(argv)``, with git's words for what it does not know: an
    unknown option before the command is named (argparse would ask for a command, or
    let ``--version`` win), and an argument a command does not take points at that
    command's help, not the overview's."""
    for word in argv:
        if not word.startswith("-") or word == "--":
            break
        # a unique prefix of a long option is that option, as argparse takes it
        if word not in GLOBAL_OPTIONS and not (word.startswith("--") and len(
                [name for name in GLOBAL_OPTIONS if name.startswith(word)]) == 1):
            raise UsageError(f"unknown option: {word} (see '{parser.prog} -h')")
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        named = parser  # the deepest command the words before the first other one name
        for word in (word for word in argv if not word.startswith("-")):
            sub = _subparsers(named)
            if sub is None or word not in sub.choices:
                break
            named = sub.choices[word]
        raise UsageError(f"unrecognized arguments: {' '.join(unknown)} (see '{named.prog} -h')")
    return args


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


def _accept_no_color(subparsers: argparse._SubParsersAction[Any]) -> None:
    """``--no-color`` after any command too (``git forge status --no-color``), as
    git's own commands take it; hidden there, documented once at the top. Its
    default is SUPPRESS so a subcommand never overwrites the top-level flag."""
    for sub in subparsers.choices.values():
        sub.add_argument("--no-color", action="store_true", default=argparse.SUPPRESS,
                         help=argparse.SUPPRESS)
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):
                _accept_no_color(action)


def commands_for(argv: Sequence[str]) -> Sequence[str]:
    """Only a command's own parser when the command line names it first (but for
    the commands that read the whole tree)."""
    if list(argv) == ["--version"]:
        return ()
    if argv and argv[0] in COMMAND_MODULES and argv[0] not in WHOLE_TREE_COMMANDS:
        return (argv[0],)
    return COMMAND_MODULES
