"""``git forge completion bash|zsh|fish`` — print a shell completion script — and the
hidden ``git forge __complete KIND`` the scripts call for dynamic values.

The scripts are generated from the parser (``tools/generate_docs.py``), committed
under ``completions/`` and shipped in the package, so printing one needs no
generator. ``__complete`` is dispatched by ``main`` before any parser is built: it
runs on every TAB, whose budget is in ARCHITECTURE.md ("What is measured, and
where").
"""

from __future__ import annotations

import sys

from git_forge.cli.output import error
from git_forge.completion_values import candidate_rows

TYPE_CHECKING = False  # argparse, Args only for the checker: a TAB reads no command line
if TYPE_CHECKING:
    import argparse

    from git_forge.cli.args import Args

#: Shell → the script's file name (as installed: bash-completion, zsh fpath, fish).
SCRIPTS: dict[str, str] = {
    "bash": "git-forge.bash",
    "zsh": "_git-forge",
    "fish": "git-forge.fish",
}

#: The hidden fast path's name (``git forge __complete KIND``).
COMPLETE_COMMAND = "__complete"

def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Print the completion script for SHELL. bash's also completes "
        "`git forge` when git's bash completion is loaded; zsh's is the "
        "_git-forge function (zsh's _git uses it for `git forge`); fish's "
        "completes git-forge. Where to install them: EXAMPLES in git-forge(1).")
    parser.add_argument("shell", choices=tuple(SCRIPTS), metavar="SHELL",
                        help="bash, zsh or fish")
    parser.set_defaults(func=run)


def script(shell: str) -> str:
    """The completion script for ``shell``, as shipped in the package."""
    from importlib.resources import files  # common-case boundary: a TAB prints no script

    return (files("git_forge") / "data" / "completions" / SCRIPTS[shell]).read_text("utf-8")


def run(args: Args) -> int:
    sys.stdout.write(script(args.shell))
    return 0


def complete_values(argv: list[str]) -> int:
    """``__complete KIND [--backlog DIR] [--backlog-dir DIR] [--describe]``: one
    candidate per line (``VALUE<TAB>DESCRIPTION`` with ``--describe``). Exit 2 with one
    ``Error:`` line for a malformed call; an unreadable project simply has no candidates."""
    options: dict[str, str | None] = {"--backlog": None, "--backlog-dir": None}
    describe = False
    positional: list[str] = []
    words = iter(argv)
    for word in words:
        name, sep, value = word.partition("=")
        if name in options:
            options[name] = value if sep else next(words, None)
            if options[name] is None:
                error(f"{name} needs a value")
                return 2
        elif word == "--describe":
            describe = True
        else:
            positional.append(word)
    if len(positional) != 1:
        error(f"usage: git forge {COMPLETE_COMMAND} KIND [--backlog DIR] [--backlog-dir DIR] "
              "[--describe]")
        return 2
    try:
        rows = candidate_rows(positional[0], ".", backlog=options["--backlog"],
                              backlog_dir=options["--backlog-dir"])
    except ValueError as exc:
        error(str(exc))
        return 2
    except OSError:  # the current directory removed, say: a TAB prints nothing, ever
        rows = []
    lines = [f"{value}\t{text}" if describe and text else value for value, text in rows]
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")
    return 0
