"""What a command line says: ``Args``, the one type every handler gets, and
``read_plain``, which reads the common command lines into it without argparse.

The parser (``cli.parser``, argparse, built from each command module's
``register``) is the one argument model: it reads every command line
``read_plain`` leaves to it (answers ``None`` for), and gives ``-h``, the usage
errors and the "did you mean". The table ``read_plain`` reads
(``cli.command_lines``) is generated from that same parser, as the man page and
the completion scripts are (``tools/generate_docs.py``; the test suite fails when
the committed table is stale). It holds, per command, what argparse gives when an
option is not on the line (its default, and the handler), and which option
strings are plain: a flag, or an option taking one value with no type and no
choices. ``read_plain`` reads a command line made only of those — the command's
words, its plain options spelled in full, its plain positional arguments before
any option, ``--no-color`` — and gives the ``Args`` argparse would; any other
word (``-h``, an abbreviation, a typed option, ``--``, a value that looks like
an option, one word too many) makes it answer ``None``, and argparse reads the
line. Why: building the parser costs more of a read command, and of the
pre-launch check, than their budgets leave (ARCHITECTURE.md, "What is measured,
and where").
"""

from __future__ import annotations

import importlib

from git_forge.cli.command_lines import COMMAND_LINES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from git_forge.cli.command_lines import CommandLine

#: The option every command takes, anywhere on the line (``cli.parser``).
NO_COLOR = "--no-color"


class Args:
    """A command line, read: each option and argument of the command it names as an
    attribute (its ``dest``), and ``func``, the handler. argparse parses into one
    (``parse_known_args(argv, namespace=Args())``), and so does ``read_plain``."""

    def __init__(self, **values: object) -> None:
        self.__dict__.update(values)

    if TYPE_CHECKING:  # any attribute, as argparse.Namespace has
        def __getattr__(self, name: str) -> Any: ...

        def __setattr__(self, name: str, value: Any) -> None: ...


def read_plain(words: list[str]) -> Args | None:
    """The ``Args`` argparse gives for ``words``, when they are a plain command line
    (module docstring); otherwise ``None``."""
    path: tuple[str, ...] = ()
    start = 0  # where the words after the command's own begin
    for index, word in enumerate(words):
        if any(key[:len(path) + 1] == (*path, word) for key in COMMAND_LINES):
            path, start = (*path, word), index + 1
        elif word != NO_COLOR:  # one before a command word is the parser above's
            break
    line = COMMAND_LINES.get(path)
    if line is None:
        return None
    values = _read_rest(line, words[start:])
    if values is None:
        return None
    defaults = {name: list(value) if isinstance(value, list) else value
                for name, value in line["defaults"].items()}
    module, function = line["handler"].split(":")
    handler = getattr(importlib.import_module(module), function)
    if NO_COLOR in words[:start]:
        values["no_color"] = True
    return Args(**{**defaults, **values, "func": handler})


def _read_rest(line: CommandLine, words: list[str]) -> dict[str, object] | None:
    """What ``words`` — the line after the command's words — set, by dest; ``None``
    for a word that is not plain, an option given twice, two of an exclusive group,
    or a required one missing."""
    leading = 0  # the positional words, all before the first option
    while leading < len(words) and not words[leading].startswith("-"):
        leading += 1
    found = _positionals(line["positionals"], words[:leading])
    if found is None:
        return None
    given: set[str] = set()  # options, by their first option string
    index = leading
    while index < len(words):
        word = words[index]
        index += 1
        option, equals, value = word.partition("=") if word.startswith("--") else (word, "", "")
        if not word.startswith("-"):
            return None  # a positional after an option: argparse's to place
        if word == NO_COLOR:
            name = word
            found["no_color"] = True
        elif option in line["flags"] and not equals:
            name, dest, stored = line["flags"][option]
            found[dest] = stored
        elif option in line["values"]:
            name, dest = line["values"][option]
            if not equals:
                if index == len(words) or words[index].startswith("-"):
                    return None
                value = words[index]
                index += 1
            found[dest] = value
        else:
            return None
        if name in given:
            return None
        given.add(name)
    if any(option not in given for option in line["required"]):
        return None
    if any(len(given.intersection(group)) > 1 for group in line["exclusive"]):
        return None
    return found


def _positionals(declared: list[tuple[str, bool]], words: list[str]
                 ) -> dict[str, object] | None:
    """The positional arguments ``words`` give, placed as argparse places them: each
    required one takes a word, and the optional ones (``nargs='?'``), from the left,
    the words left over; ``None`` when the words are too few or too many."""
    spare = len(words) - sum(required for _, required in declared)
    if spare < 0 or spare > sum(not required for _, required in declared):
        return None
    found: dict[str, object] = {}
    for dest, required in declared:
        if required or spare:
            spare -= not required
            found[dest] = words[len(found)]
    return found
