"""The command tree: ``build_parser`` and the rules every parser shares (usage
errors as ``UsageError``, git's "did you mean", ``--no-color`` anywhere), and which
command's module is loaded: the one the command line names, no other.

Apart from ``cli.main`` so that a command line that needs no parser never imports
argparse: ``--version``, a TAB, the hook's clean answer, and every plain line
(``cli.args.read_plain``).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from typing import Any

from git_forge import __version__
from git_forge.cli.args import NO_COLOR, Args
from git_forge.errors import UsageError

#: The commands — each a module under ``git_forge.cli`` — in the order ``--help`` lists them,
#: each with its line there: by what a user does — set up, run, look, recover, the backlog
#: and its decisions — then the agents, the launch gate for other launchers, processes and
#: settings, and the rest (the demo, completion, the version, help).
COMMANDS: dict[str, str] = {
    "init": 'create a backlog directory, its ignore rules and an example config',
    "loop": 'run the agent loop over the backlog, or stop it',
    "status": 'loop state, backlog summary, topology and lock liveness',
    "watch": 'a live view of a run: its agents, their last lines, the queue, costs',
    "recover": "answer a stopped run's questions and make the backlog resumable",
    "reconcile": 'decide what happens to stranded work in the tree',
    "backlog": 'list and change backlog items (rauf runner contract)',
    "decision": 'the decision record (forge-decisions.json)',
    "agents": 'list the agent profiles: command, binary on PATH, version',
    "preflight": "stop a launch while a prior run's work is stranded",
    "hooks": 'install the pre-launch hook for any launcher',
    "proc": 'supervised processes: state, output, stop',
    "config": 'show the effective configuration and where each value came from',
    "demo": 'watch the whole loop-and-recover lifecycle in a throwaway repository',
    "completion": 'print a shell completion script (bash, zsh or fish)',
    "version": 'print the version',
    "help": "show the overview, or a command's help",
}
COMMAND_MODULES: tuple[str, ...] = tuple(COMMANDS)


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

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        """An option's value written ``--title=--`` is the text ``--``, as git takes it:
        Python 3.11's argparse takes ``--`` out of it and hands the command an empty list."""
        if action.option_strings and arg_strings == ["--"] and action.nargs is None:
            value = self._get_value(action, "--")
            self._check_value(action, value)
            return value
        return super()._get_values(action, arg_strings)

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
GLOBAL_OPTIONS = frozenset({"-h", "--help", "--version", NO_COLOR})


def parse_command_line(parser: argparse.ArgumentParser, argv: Sequence[str]) -> Args:
    """``argv`` read by ``parser`` into an ``Args``, with git's words for what it does
    not know: an unknown option before the command is named (argparse would ask for a
    command, or let ``--version`` win), and an argument a command does not take points
    at that command's help, not the overview's."""
    for word in argv:
        if not word.startswith("-") or word == "--":
            break
        # a unique prefix of a long option is that option, as argparse takes it
        if word not in GLOBAL_OPTIONS and not (word.startswith("--") and len(
                [name for name in GLOBAL_OPTIONS if name.startswith(word)]) == 1):
            raise UsageError(f"unknown option: {word} (see '{parser.prog} -h')")
    args, unknown = parser.parse_known_args(argv, namespace=Args())
    if unknown:
        named = parser  # the deepest command the words before the first other one name
        for word in (word for word in argv if not word.startswith("-")):
            sub = _subparsers(named)
            if sub is None or word not in sub.choices:
                break
            named = sub.choices[word]
        raise UsageError(f"unrecognized arguments: {' '.join(unknown)} (see '{named.prog} -h')")
    return args


def build_parser(prog: str = "git-forge", commands: Sequence[str] = COMMAND_MODULES, *,
                 listed: bool = False) -> argparse.ArgumentParser:
    """The command tree with the named ``commands`` in full, each from its module (the
    man page and the completion generators call this with the defaults: all of them);
    ``listed``: every other command too, by its name and line alone, its module not
    loaded — what the overview and a mistyped command's nearest ones read. ``prog`` is
    set by ``main``."""
    parser = ForgeArgumentParser(
        prog=prog,
        description=(
            "Run autonomous coding-agent loops safely, and recover them without "
            "losing a decision or a line of work."
        ),
    )
    parser.add_argument("--version", action="version", version=f"git-forge version {__version__}")
    parser.add_argument(NO_COLOR, action="store_true", default=argparse.SUPPRESS,
                        help="never colour the output (also accepted after the command); "
                             "otherwise colour follows NO_COLOR, then git's color.forge or "
                             "color.ui")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name, line in COMMANDS.items():
        if name in commands:
            module = importlib.import_module(f"git_forge.cli.{name}")
            module.register(subparsers.add_parser(name, help=line))
        elif listed:
            subparsers.add_parser(name, help=line)
    _accept_no_color(subparsers)
    return parser


def _accept_no_color(subparsers: argparse._SubParsersAction[Any]) -> None:
    """``--no-color`` after any command too (``git forge status --no-color``), as
    git's own commands take it; hidden there, documented once at the top. Its
    default is SUPPRESS so a subcommand never overwrites the top-level flag."""
    for sub in subparsers.choices.values():
        sub.add_argument(NO_COLOR, action="store_true", default=argparse.SUPPRESS,
                         help=argparse.SUPPRESS)
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):
                _accept_no_color(action)


def commands_for(argv: Sequence[str]) -> Sequence[str]:
    """The command a command line names — its first word, ``--no-color`` (or a prefix
    of it, as argparse takes one) before it aside — as the one whose module is loaded
    and parser built (the parser-tree boundary, ARCHITECTURE.md); none when it names
    none: every command is then listed by its line alone (``build_parser(listed=True)``)."""
    words = list(argv)
    while words and len(words[0]) > 2 and NO_COLOR.startswith(words[0]):
        del words[0]
    return (words[0],) if words and words[0] in COMMANDS else ()
