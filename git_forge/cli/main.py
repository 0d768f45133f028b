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
from git_forge.errors import ForgeError
from git_forge.exit_codes import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_USAGE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from git_forge.cli.preflight import QuickArgs

#: What ``git forge --version`` prints (argparse's ``version`` action prints the same).
VERSION_LINE = f"git-forge version {__version__}"


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    if words == ["--version"]:  # the one command that needs neither a parser nor a guard
        print(VERSION_LINE)
        return 0
    quick = None
    if words[:1] == ["preflight"]:  # the pre-launch hook's clean tree prints nothing
        from git_forge.cli.preflight import go, quick_args

        quick = quick_args(words[1:])
        answer = go(quick) if quick is not None else None
        if answer is not None:
            return answer
    from git_forge.cli.output import guarded

    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = guarded(sys.stdout), guarded(sys.stderr)
    try:
        return _dispatch(words) if quick is None else _dispatch(words, quick)
    except Exception:  # a bug: its traceback still passes the terminal boundary
        import traceback

        traceback.print_exc()
        return EXIT_ERROR
    finally:
        sys.stdout, sys.stderr = streams


def _dispatch(argv: list[str], quick: QuickArgs | None = None) -> int:
    """Run the command ``argv`` names; ``quick`` is ``preflight``'s arguments
    when its plain command line needed no parser."""
    if argv[:1] == ["__complete"]:
        # The completion scripts' fast path: no parser, no core imports (see cli.completion).
        from git_forge.cli.completion import complete_values

        return complete_values(argv[1:])
    try:
        from git_forge.cli.output import configure_color

        if quick is not None:
            from git_forge.cli.preflight import run as preflight

            configure_color(no_color=quick.no_color)
            return preflight(quick)
        from git_forge.cli.parser import build_parser, commands_for

        parser = build_parser(prog="git forge", commands=commands_for(argv))
        if not argv:  # like `git` alone: the overview, and a non-zero status
            parser.print_help()
            return EXIT_ERROR
        args = parser.parse_args(argv)
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
