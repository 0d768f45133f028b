"""Entry point of ``git-forge`` (and ``git forge``): read the command line, dispatch.

The hook's own line (``HOOK_WORDS``, as a process's own arguments) is answered
first: a clean answer ends the process at once (``os._exit(0)``). ``--version`` is
printed as it is. Every other line is read into ``Args`` — by ``cli.args.read_plain``
when it is plain, by the command's argparse parser otherwise — and its handler runs.
Every handler returns an exit code. Every ``ForgeError`` becomes one line
``Error: <message>`` on stderr with the error's exit code; argparse's own usage
errors take the same path (exit 2). Everything a command prints, a traceback
included, passes the terminal boundary (``cli.output``): stdout and stderr are
wrapped for the whole command.
"""

from __future__ import annotations

import codecs
import io
import os
import sys

from git_forge import __version__
from git_forge.errors import ForgeError, os_error_text
from git_forge.exit_codes import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_USAGE

#: What ``git forge --version`` prints (argparse's ``version`` action prints the same).
VERSION_LINE = f"git-forge version {__version__}"


def main(argv: list[str] | None = None) -> int:
    """The command ``argv`` (default: the process's arguments) names, run: its exit
    code."""
    words = sys.argv[1:] if argv is None else argv
    _closed_streams_to_devnull()
    _utf8_output()
    if argv is None:  # the process's own command line
        _absolute_git_paths()
        if words == HOOK_WORDS:
            try:
                clean = _clean_launch()
            except KeyboardInterrupt:
                return EXIT_INTERRUPTED
            if clean:
                # The pre-launch check's silent clean answer, what every launch asks:
                # nothing was written, so the process ends at once, without the
                # interpreter's teardown (ARCHITECTURE.md, "What is measured, and
                # where"). Any other answer is the command's, as every line is.
                os._exit(0)
    if words == ["--version"]:  # needs no command line read, nor a guard: its text is ours
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
    from git_forge.cli.output import guarded  # parser-tree boundary: --version needs none

    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = guarded(sys.stdout), guarded(sys.stderr)
    try:
        return _dispatch(words)
    except Exception:  # a bug: its traceback, as Python prints it, still passes the boundary
        sys.excepthook(*sys.exc_info())
        return EXIT_ERROR
    finally:
        sys.stdout, sys.stderr = streams


def _closed_streams_to_devnull() -> None:
    """A standard stream the caller closed (``git-forge >&-``), which Python leaves as
    ``None``, is /dev/null, as git treats it: the answer goes nowhere and the command
    runs as it would. Its descriptor is /dev/null too, so that no file git-forge opens
    takes its number, and no child writes into that file."""
    for number, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is not None:
            continue
        try:
            os.fstat(number)
        except OSError:  # closed: /dev/null in its place
            devnull = os.open(os.devnull, os.O_RDWR)
            if devnull != number:
                os.dup2(devnull, number)
                os.close(devnull)
            setattr(sys, name, open(number, "r" if number == 0 else "w", closefd=False,
                                    errors="backslashreplace"))
        else:
            setattr(sys, name, open(os.devnull, "r" if number == 0 else "w",
                                    errors="backslashreplace"))


def _utf8_output() -> None:
    """Standard output and error write UTF-8, whatever the locale says, as git writes
    the bytes it holds: a title or a path in an ASCII locale (``LC_ALL=C`` with
    ``PYTHONUTF8=0``, ``PYTHONIOENCODING=ascii``) is printed, not a traceback, and a
    ``--json`` document is UTF-8 JSON, as JSON is."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and codecs.lookup(stream.encoding).name != "utf-8":
            stream.reconfigure(encoding="utf-8", errors=stream.errors)


#: The variables that name a place for git which git reads from where it starts (its
#: ``GIT_INDEX_FILE``, say, it reads from the work tree's top, as git-forge runs it).
GIT_PATH_VARIABLES = ("GIT_DIR", "GIT_WORK_TREE")


def _absolute_git_paths() -> None:
    """Each relative ``GIT_PATH_VARIABLES`` made absolute from where the command starts,
    the place the operator's shell meant (``GIT_DIR=../.git git forge preflight``):
    git-forge runs git in the work tree's top (``git -C``), where git would read it
    from there. Joined, not normalized: ``link/..`` is where the link leads, as for
    git. Where the current directory is gone, they stay as they are."""
    try:
        here = os.getcwd()
    except OSError:
        return
    for name in GIT_PATH_VARIABLES:
        value = os.environ.get(name)
        if value and not os.path.isabs(value):
            os.environ[name] = os.path.join(here, value)


#: The pre-launch hook's command line (``data/pre-launch``), as launchers run it.
HOOK_WORDS = ["preflight"]


def _clean_launch() -> bool:
    """Whether the pre-launch check's first look finds the launch free to go, read
    before anything else — no command line, no output — for the hook's own line. A
    look that fails is no answer: the command then runs, and says why."""
    # parser-tree boundary: the clean pre-launch check reads no command line
    from git_forge.reconcile.launch_probe import probe

    try:
        return probe(".").clean
    except Exception:  # the command's own run meets it again, and words it
        return False


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


def _dispatch(argv: list[str]) -> int:
    """Run the command ``argv`` names: a plain command line is read from the table
    generated from the parser (``cli.args``), any other by the parser (only that
    command's, ``cli.parser``); its handler gets what was read, an ``Args``."""
    if argv[:1] == ["__complete"]:
        # parser-tree boundary: the completion scripts' fast path, no parser (cli.completion)
        from git_forge.cli.completion import complete_values

        return complete_values(argv[1:])
    try:
        # parser-tree boundary: --version reads no command line
        from git_forge.cli.args import NO_COLOR, read_plain
        from git_forge.cli.output import configure_color

        args = read_plain(argv)  # a plain command line needs no parser (cli.args)
        if args is None:
            # parser-tree boundary: only a command's own parser is built (cli.parser)
            from git_forge.cli.parser import build_parser, commands_for, parse_command_line

            named = commands_for(argv)
            parser = build_parser(prog="git forge", commands=named, listed=not named)
            if all(word == NO_COLOR for word in argv):
                # like `git` alone (or `git --no-pager`): the overview on stdout, exit 1
                parser.print_help()
                return EXIT_ERROR
            args = parse_command_line(parser, argv)
        configure_color(no_color=getattr(args, "no_color", False))
        return _written(int(args.func(args)))
    except ForgeError as exc:
        from git_forge.cli.output import error  # parser-tree boundary, as above
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
        from git_forge.cli.output import error  # parser-tree boundary, as above

        if exc.filename:
            error(f"{exc.filename}: {os_error_text(exc)}")
        elif _working_directory_gone():
            error("the current directory no longer exists; change to one that does")
        else:
            error(os_error_text(exc))
        return EXIT_USAGE


def _working_directory_gone() -> bool:
    """Whether the directory the command started in was removed (``os.getcwd`` fails
    on it: the error a path resolved against it raised names no file)."""
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    return False
