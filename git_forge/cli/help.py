"""``git forge help [COMMAND [VERB]]`` — the overview, or one command's help.

``git help forge`` (and ``git forge --help``, which git turns into it) shows the
manual page; this is the short form on the terminal, as ``git-forge -h`` prints
it, for any depth of the command tree.
"""

from __future__ import annotations

from git_forge.cli.args import Args
from git_forge.cli.parser import build_parser, command_parser, commands_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Print the overview of every command, or the help of COMMAND (and "
        "VERB: git forge help backlog answer). The manual: git help forge.")
    parser.add_argument("command", nargs="*", metavar="COMMAND",
                        help="a command, and a verb of it")
    parser.set_defaults(func=run)


def run(args: Args) -> int:
    tree = build_parser(prog="git forge", commands=commands_for(args.command), listed=True)
    command_parser(tree, args.command).print_help()
    return 0
