#!/usr/bin/env python3
"""Generate the man page, the shell completion scripts and the plain command lines'
table (``cli.args.read_plain``'s) from the argparse parser.

    python tools/generate_docs.py           # rewrite man/git-forge.1, completions/*
                                            # and git_forge/cli/command_lines.py
    python tools/generate_docs.py --check   # exit 1 and name the stale files

The outputs are committed (and shipped: the man page as wheel data, the scripts as
package data), so neither argparse-manpage nor shtab is a runtime dependency; the
test suite regenerates them in memory and fails when a committed file is stale.
The man page's extra sections (exit status, files, environment, examples) live in
``man/extra-sections.txt``; the completion scripts' hand-written parts (dynamic
values through ``git forge __complete``, the ``git forge`` entry point for git's
bash completion) in ``tools/completion/``.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from git_forge.cli.parser import _subparsers  # noqa: E402  (this tree's, found above)

MAN_PAGE = ROOT / "man" / "git-forge.1"
COMMAND_LINES = ROOT / "git_forge" / "cli" / "command_lines.py"
MAN_EXTRA = ROOT / "man" / "extra-sections.txt"
SNIPPETS = ROOT / "tools" / "completion"
COMPLETIONS = ROOT / "completions"
#: Shell → committed script (the names the package ships and installs).
SCRIPT_NAMES = {"bash": "git-forge.bash", "zsh": "_git-forge", "fish": "git-forge.fish"}

PROG = "git-forge"
#: Usage lines are wrapped at this width whatever the terminal generating them.
WIDTH = 80
MANUAL = "Git Forge Manual"
SUMMARY = "run coding-agent loops safely and recover them"

# --- the parser tree ---------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    """A fresh parser with every help formatter pinned to ``WIDTH`` columns (argparse
    otherwise wraps at the terminal's width, and the outputs would depend on it)."""
    from git_forge.cli.parser import build_parser

    root = build_parser(prog=PROG)
    for _, each in walk(root):
        each.formatter_class = functools.partial(argparse.HelpFormatter, width=WIDTH)
    return root


def walk(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every (command path, parser) of the tree, the root first (path ``()``)."""
    yield path, parser
    sub = _subparsers(parser)
    if sub is not None:
        for name, child in sub.choices.items():
            yield from walk(child, (*path, name))


def command_paths(parser: argparse.ArgumentParser) -> list[tuple[str, ...]]:
    """Every command and sub-verb (``("backlog", "answer")`` …), root excluded."""
    return [path for path, _ in walk(parser) if path]


# --- the man page ------------------------------------------------------------------------------


def man_page() -> str:
    """The roff source of git-forge(1)."""
    from argparse_manpage.manpage import Manpage

    from git_forge import __version__

    root = parser()
    # man/extra-sections.txt has the fuller DESCRIPTION; the one-liner is in NAME.
    root.description = None
    commands = _subparsers(root)
    for group in root._action_groups:
        if commands in group._group_actions:
            group.title = "commands"
    page = Manpage(root, _data={
        "project_name": PROG, "version": __version__, "manual_title": MANUAL,
        "description": SUMMARY, "include": str(MAN_EXTRA), "date": "-",
    }, format="single-commands-section")
    # No date in the header: the committed page must not change with the day it is built.
    page.date = ""
    return _roff_safe(str(page))


#: The requests the page uses; any other line starting with "." or "'" is text that
#: argparse wrapped onto the start of a line (".forge)") and must not be read as one.
_REQUESTS = frozenset({"TH", "SH", "SS", "TP", "PP", "RS", "RE", "nf", "fi", "B", "I", "BR",
                       "RB", "IR", "RI", "BI", "IB", "UR", "UE"})


#: Characters the help texts use, as glyphs every groff device (ascii too) can draw.
_GLYPHS = {"\u2192": "\\(->", "\u2026": "...", "\u2014": "\\(em", "\u2013": "\\(en",
           "\u2018": "\\(oq", "\u2019": "\\(cq", "\u201c": "\\(lq", "\u201d": "\\(rq",
           "\u2265": "\\(>=", "\u2264": "\\(<="}


def _roff_safe(page: str) -> str:
    """Escape text lines that roff would take for requests, and write every non-ASCII
    character as a roff glyph (``\\(->``, or ``\\[uXXXX]``): no ``preconv`` needed."""
    lines = []
    for line in page.splitlines():
        if line[:1] in (".", "'") and line[1:].split(" ", 1)[0] not in _REQUESTS:
            line = "\\&" + line
        lines.append("".join(c if ord(c) < 128 else _GLYPHS.get(c, f"\\[u{ord(c):04X}]")
                             for c in line))
    return "\n".join(lines) + "\n"


# --- the completion scripts --------------------------------------------------------------------

#: Dynamic values: kind of ``git forge __complete KIND`` → shell function names.
def _dynamic(kind: str) -> dict[str, str]:
    function = "_git_forge_" + kind.replace("-", "_")
    return {"bash": function, "zsh": function, "fish": f"(__git_forge_values {kind})"}


_DISCARDED = {"bash": "_git_forge_discarded", "zsh": "_git_forge_discarded",
              "fish": "(__git_forge_discarded)"}

#: (command path, option string or positional dest) → what completes its value.
#: ``*`` in a path matches any verb. Values not listed fall back to the shell's default.
VALUE_COMPLETIONS: dict[tuple[tuple[str, ...], str], dict[str, str] | str] = {
    (("backlog", "show"), "id"): _dynamic("items"),
    (("backlog", "edit"), "id"): _dynamic("items"),
    (("backlog", "done"), "ids"): _dynamic("items"),
    (("backlog", "drop"), "ids"): _dynamic("items"),
    (("backlog", "answer"), "id"): _dynamic("blocked"),
    (("backlog", "unblock"), "id"): _dynamic("blocked"),
    (("decision", "record"), "--item"): _dynamic("blocked"),
    (("decision", "apply"), "--item"): _dynamic("blocked"),
    (("decision", "revoke"), "item"): _dynamic("revocable"),
    (("decision", "*"), "--backlog-dir"): _dynamic("backlog-dirs"),
    (("decision", "*"), "--config"): "file",
    (("recover",), "--answer"): {"bash": "_git_forge_answers", "zsh": "_git_forge_answers",
                                 "fish": "(__git_forge_answers)"},
    (("recover",), "--defer"): _dynamic("answerable"),
    (("recover",), "--merge"): _dynamic("clusters"),
    (("recover",), "--answers"): "file",
    (("proc", "*"), "handle"): _dynamic("handles"),
    (("proc", "wait"), "handles"): _dynamic("handles"),
    (("reconcile",), "--restore"): _DISCARDED,
    (("backlog", "topology"), "--items-json"): "file",
    (("backlog", "topology"), "--config"): "file",
    (("loop", "run"), "--prompt-file"): "file",
    (("init",), "--backlog"): "directory",  # a new backlog dir may not exist yet
}
#: Options completed the same way wherever they appear (after ``VALUE_COMPLETIONS``).
OPTION_COMPLETIONS: dict[str, dict[str, str] | str] = {
    "--backlog": _dynamic("backlogs"),
}

#: Flags whose values are a closed list argparse does not know (validated in the handler).
def _static_choices() -> dict[tuple[tuple[str, ...], str], tuple[str, ...]]:
    from git_forge.backlog.model import ITEM_TYPES, PRIORITY_RANGE, STATUSES
    from git_forge.cli.backlog import _STATUS_FILTERS

    priorities = tuple(str(p) for p in PRIORITY_RANGE)
    commands = tuple(path[0] for path in command_paths(parser()) if len(path) == 1)
    return {
        (("help",), "command"): commands,
        (("backlog", "list"), "--status"): _STATUS_FILTERS,
        (("backlog", "edit"), "--status"): STATUSES,
        (("backlog", "add"), "--type"): ITEM_TYPES,
        (("backlog", "edit"), "--type"): ITEM_TYPES,
        (("backlog", "add"), "--priority"): priorities,
        (("backlog", "edit"), "--priority"): priorities,
    }


def _key(action: argparse.Action) -> str:
    return next((s for s in action.option_strings if s.startswith("--")), action.dest)


def _lookup(table: dict, path: tuple[str, ...], key: str):
    for (pattern, name), value in table.items():
        if name == key and len(pattern) == len(path) and all(
                p in ("*", q) for p, q in zip(pattern, path, strict=True)):
            return value
    return None


def _drop_optional_path(parser: argparse.ArgumentParser) -> None:
    """``backlog answer [PATH] ID TEXT``: while typing, an optional PATH cannot be told
    from the ID after it, so completion assumes it is left out (the common case) and
    completes the ID in first position."""
    positionals = [a for a in parser._actions
                   if not a.option_strings and not isinstance(a, argparse._SubParsersAction)]
    if len(positionals) > 1 and positionals[0].nargs == "?":
        dropped = positionals[0]
        parser._actions.remove(dropped)
        for group in parser._action_groups:
            if dropped in group._group_actions:
                group._group_actions.remove(dropped)


def completion_parser() -> argparse.ArgumentParser:
    """The parser as completion sees it: value completions attached (shtab's
    ``.complete``), closed value lists as choices, optional PATHs before IDs dropped."""
    import shtab

    root = parser()
    choices = _static_choices()
    for path, each in walk(root):
        _drop_optional_path(each)
        sub = _subparsers(each)
        if sub is not None:  # zsh and fish show a command's description: the short one
            for choice in sub._choices_actions:
                sub.choices[choice.dest].description = choice.help
        for action in each._actions:
            key = _key(action)
            how = _lookup(VALUE_COMPLETIONS, path, key) or OPTION_COMPLETIONS.get(key)
            if how is None and not action.option_strings and action.metavar == "PATH":
                how = "directory"
            if how == "file":
                action.complete = shtab.FILE  # type: ignore[attr-defined]
            elif how == "directory":
                action.complete = shtab.DIRECTORY  # type: ignore[attr-defined]
            elif how is not None:
                action.complete = how  # type: ignore[attr-defined]
            listed = _lookup(choices, path, key)
            if listed is not None:
                action.choices = listed
    return root


def _strip_shtab_header(text: str) -> str:
    """shtab's usage comment names install paths that are not ours: drop it (a zsh
    script keeps its ``#compdef`` line, which must stay first)."""
    lines = text.splitlines(keepends=True)
    keep = lines[:1] if lines and lines[0].startswith("#compdef") else []
    end = len(keep)
    while end < len(lines) and not lines[end].strip():
        end += 1
    while end < len(lines) and lines[end].startswith("#"):
        end += 1
    return "".join(keep) + "".join(lines[end:])


_HEADER = {
    "bash": """\
# bash completion for git-forge and `git forge` (with git's own bash completion loaded).
# Install: git forge completion bash > ~/.local/share/bash-completion/completions/git-forge
#   (or source this file from ~/.bashrc). pip also installs it, as
#   <prefix>/share/bash-completion/completions/git-forge.bash: bash-completion loads it
#   from there on first use for the /usr/local and ~/.local (--user) prefixes, and
#   (bash-completion 2.12 and later) for a virtual environment whose bin is on PATH.
""",
    "zsh": """\
# zsh completion for git-forge and `git forge` (zsh's _git calls _git-forge).
# Install: put this file, named _git-forge, in a directory of $fpath before compinit,
#   e.g. git forge completion zsh > ~/.zfunc/_git-forge with fpath=(~/.zfunc $fpath).
""",
    "fish": """\
# fish completion for git-forge.
# Install: git forge completion fish > ~/.config/fish/completions/git-forge.fish
# fish 3.6 does not pass `git forge <TAB>` on to it (fish issue 9457); with fish 3.6,
# this line in ~/.config/fish/config.fish does:
#   complete -c git -f -n "__fish_git_using_command forge" \\
#       -a "(__fish_git_complete_custom_command forge)"
""",
}
_GENERATED = ("# Generated from the argparse parser by tools/generate_docs.py (shtab); "
              "do not edit.\n")


def completion_script(shell: str) -> str:
    """The committed completion script for ``shell`` (bash, zsh or fish)."""
    import shtab

    extension = {"bash": "bash", "zsh": "zsh", "fish": "fish"}[shell]
    preamble = (SNIPPETS / f"preamble.{extension}").read_text("utf-8").rstrip("\n")
    body = _strip_shtab_header(shtab.complete(completion_parser(), shell=shell,
                                              preamble=preamble))
    if shell == "bash":
        # Replace shtab's registration with ours (git forge + git-forge, spacing).
        lines = body.rstrip("\n").splitlines()
        if lines and lines[-1].startswith("complete "):
            lines.pop()
        body = "\n".join(lines).rstrip("\n") + "\n" + \
            (SNIPPETS / "epilogue.bash").read_text("utf-8")
    head = ""
    if shell == "zsh":
        head, body = body.split("\n", 1)
        head += "\n"
    text = head + _HEADER[shell] + _GENERATED + "\n" + body.lstrip("\n")
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


# --- the plain command lines (cli.args.read_plain) ---------------------------------------------

_COMMAND_LINES_HEAD = '''\
"""The command lines ``cli.args.read_plain`` reads without argparse: per command,
what argparse gives when the line names nothing more, and its plain options.
Generated from the parser by ``tools/generate_docs.py``; do not edit."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypedDict

    class CommandLine(TypedDict):
        """One command: what ``cli.args.read_plain`` needs to read its plain lines."""

        #: ``module:function``, the handler the parser's ``set_defaults(func=…)`` names.
        handler: str
        #: Every ``dest`` argparse sets when the line names nothing more, with its value.
        defaults: dict[str, object]
        #: Option string → (its option, dest, value stored) for a ``store_true``,
        #: ``store_const`` …; an option is named by its first option string.
        flags: dict[str, tuple[str, str, object]]
        #: Option string → (its option, dest) for an option taking one untyped value.
        values: dict[str, tuple[str, str]]
        #: The positional arguments in order: (dest, whether it must be given).
        positionals: list[tuple[str, bool]]
        #: Options that must be on the line.
        required: list[str]
        #: Groups of options of which at most one may be on the line.
        exclusive: list[list[str]]

COMMAND_LINES: dict[tuple[str, ...], CommandLine] = '''


def _literal(value: object) -> bool:
    """Whether ``value`` is written back exactly by its ``repr`` (None, a bool, a
    number, a string, or a list or tuple of them)."""
    import ast

    try:
        return bool(ast.literal_eval(repr(value)) == value)
    except (ValueError, SyntaxError):
        return False


def _command_line(root: argparse.ArgumentParser, path: tuple[str, ...],
                  parser: argparse.ArgumentParser) -> dict | None:
    """The table's entry for the command ``path`` (``cli.command_lines.CommandLine``),
    or ``None`` for one whose positional arguments are not plain (``read_plain``
    leaves every line of it to argparse)."""
    from git_forge.cli.args import NO_COLOR
    from git_forge.cli.parser import parse_command_line

    flags: dict[str, tuple] = {}
    values: dict[str, tuple] = {}
    positionals: list[tuple[str, bool]] = []
    for action in parser._actions:
        if not action.option_strings:
            if action.nargs not in (None, "?") or action.type or action.choices:
                return None
            positionals.append((action.dest, action.nargs is None))
            continue
        if NO_COLOR in action.option_strings or isinstance(action, argparse._HelpAction):
            continue  # read_plain takes --no-color anywhere; -h is argparse's
        name = action.option_strings[0]
        for option in action.option_strings:
            if isinstance(action, argparse._StoreConstAction):  # store_true, … too
                flags[option] = (name, action.dest, action.const)
            elif (type(action) is argparse._StoreAction and action.nargs is None
                  and action.type is None and action.choices is None):
                values[option] = (name, action.dest)
    groups = parser._mutually_exclusive_groups
    if any(not action.option_strings for group in groups for action in group._group_actions):
        return None
    required = [action for action in parser._actions if action.option_strings and action.required]
    if any(group.required for group in groups) or any(
            action.option_strings[0] not in values for action in required):
        return None  # a line without the option is argparse's error: no defaults to take
    needed = [dest for dest, must in positionals if must]
    placeholders = [f"<{dest}>" for dest in needed]
    for action in required:
        placeholders += [action.option_strings[0], f"<{action.dest}>"]
    defaults = vars(parse_command_line(root, [*path, *placeholders]))
    for dest in needed + [action.dest for action in required]:
        del defaults[dest]
    func = defaults.pop("func")
    if not all(_literal(value) for value in defaults.values()):
        return None
    return {
        "handler": f"{func.__module__}:{func.__name__}",
        "defaults": defaults,
        "flags": flags,
        "values": values,
        "positionals": positionals,
        "required": [action.option_strings[0] for action in required],
        "exclusive": [[action.option_strings[0] for action in group._group_actions]
                      for group in groups],
    }


def command_lines_module() -> str:
    """``git_forge/cli/command_lines.py``: every command's entry, in the parser's order."""
    import pprint

    from git_forge.cli.parser import build_parser

    root = build_parser(prog="git forge")
    table = {}
    for path, parser in walk(root):
        if path and _subparsers(parser) is None:
            entry = _command_line(root, path, parser)
            if entry is not None:
                table[path] = entry
    text = _COMMAND_LINES_HEAD + "{\n"
    for path, entry in table.items():
        text += f"    {path!r}: {{\n"
        for key, value in entry.items():
            prefix = f"        {key!r}: "
            shown = pprint.pformat(value, width=99 - len(prefix), sort_dicts=False, compact=True)
            text += prefix + shown.replace("\n", "\n" + " " * len(prefix)) + ",\n"
        text += "    },\n"
    return text + "}\n"


# --- writing and checking ----------------------------------------------------------------------


def outputs() -> dict[Path, str]:
    """Every generated file and its expected content."""
    files = {MAN_PAGE: man_page(), COMMAND_LINES: command_lines_module()}
    for shell, name in SCRIPT_NAMES.items():
        files[COMPLETIONS / name] = completion_script(shell)
    return files


def stale() -> list[Path]:
    """Generated files whose committed content differs from what the parser gives."""
    return [path for path, text in outputs().items()
            if not path.is_file() or path.read_text("utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_argument("--check", action="store_true",
                     help="write nothing; exit 1 if a generated file is out of date")
    args = cli.parse_args(argv)
    from git_forge.atomic import atomic_write

    if args.check:
        out_of_date = stale()
        for path in out_of_date:
            print(f"out of date: {path.relative_to(ROOT)} "
                  "(run: python tools/generate_docs.py)", file=sys.stderr)
        return 1 if out_of_date else 0
    for path, text in outputs().items():
        if path.is_file() and path.read_text("utf-8") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text.encode("utf-8"))
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
