"""The one way git-forge starts git: every git process goes through ``start_git``.

Each caller says in a comment why it goes through git rather than pygit2.
This module must not import pygit2: the pre-launch check (``fast_status``)
uses it and would pay for that import on every launch.

What every git started here shares:

* optional locks off (``GIT``): a ``git status`` otherwise holds the index's
  lock while it walks the tree (to write back a refreshed stat cache), and a
  commit, ``read-tree`` or ``update-index`` meanwhile — the loop's, in the main
  checkout or an item's worktree — fails on ``index.lock``: a read must never
  make a run fail. Commands that write still take the locks they need; git
  passes the setting on to the git processes it starts (hooks, ``worktree
  remove``'s own ``status``);
* the caller's environment, locale included, plus what the caller adds (a
  ``None`` value removes a variable): ``GIT_DIR``, ``git -c`` values
  (``GIT_CONFIG_PARAMETERS``) and the rest reach git as they would reach the
  operator's own git, and so do the filters and hooks git runs. Nothing here
  reads git's messages for their words, so they stay in the operator's
  language;
* an empty stdin unless the caller gives one;
* stdout kept whole (it is data), stderr only as its last
  ``capture.TAIL_BYTES`` (it only ever becomes a message: a hook or a filter
  may print without end);
* one error: git that cannot start, or that exits non-zero where the caller
  wants its output, is a ``GitError`` carrying git's stderr verbatim, exit
  code 1 — the machine failed, not the input.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Mapping, Sequence

from git_forge import capture
from git_forge.errors import os_error_text
from git_forge.tree.errors import GitError

#: Pathspecs built from real file names must never be read as globs or magic
#: (``*.txt``, ``:x``, ``[ab].txt`` are ordinary names here).
LITERAL_PATHSPECS = {"GIT_LITERAL_PATHSPECS": "1"}

#: How every git command here starts: with git's optional locks off (see the module).
GIT = ("git", "--no-optional-locks")
#: What git here reads of a tree a sandboxed agent wrote (``distrust_trees``): no
#: fsmonitor program, and nothing inside a nested repository (its own config, which
#: the agent wrote, would name programs git runs there — an fsmonitor, a filter).
_DISTRUSTED: tuple[str, ...] = ()


def distrust_trees(distrust: bool = True) -> None:
    """While ``distrust`` holds (a sandboxed run), every git command this process runs
    reads the trees as untrusted: ``core.fsmonitor`` off and nested repositories not
    looked inside (``diff.ignoreSubmodules=dirty``: a gitlink's commit is still
    seen). Given on the command line, they reach every git a command starts in turn."""
    global _DISTRUSTED
    _DISTRUSTED = (("-c", "core.fsmonitor=false", "-c", "diff.ignoreSubmodules=dirty")
                   if distrust else ())


def _merged_env(env: Mapping[str, str | None] | None) -> Mapping[str, str]:
    """The inherited environment plus ``env`` (a ``None`` value removes that name)."""
    if not env:
        return os.environ
    merged = {**os.environ}
    for name, value in env.items():
        if value is None:
            merged.pop(name, None)
        else:
            merged[name] = value
    return merged


class StartedGit:
    """A git command running while its caller goes on (``start_git``). ``result``
    waits for it and is ``run_git``'s answer; leaving the ``with`` block without
    asking still waits for git, so no process outlives the block."""

    def __init__(self, args: Sequence[str], pid: int, stdout: int, stderr: int,
                 stdin: int | None, input: bytes) -> None:
        self._args = list(args)
        self.pid = pid
        self._pipes = (stdout, stderr, stdin)
        self._input = input
        self._finished: capture.Finished | None = None

    def wait(self) -> capture.Finished:
        """Read git's output to its end and wait for it to exit: the finished process,
        read once. On any exception meanwhile, an interrupt included, git is killed
        and waited for."""
        if self._finished is None:
            stdout, stderr, stdin = self._pipes
            try:
                out, err = capture.read_output(stdout, stderr, keep_stdout=True, stdin=stdin,
                                               input=self._input)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                raise
            _pid, status = os.waitpid(self.pid, 0)
            self._finished = capture.Finished(os.waitstatus_to_exitcode(status), out, err)
        return self._finished

    def result(self) -> bytes:
        """git's stdout, or ``GitError`` (git's stderr verbatim) when it failed."""
        finished = self.wait()
        if finished.returncode != 0:
            raise failure(self._args, finished)
        return finished.stdout

    def __enter__(self) -> StartedGit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.wait()


def start_git(
    args: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str | None] | None = None,
    input: bytes | None = None,
) -> StartedGit:
    """Start ``git ARGS`` in ``cwd`` (``None``: where git-forge runs) without
    waiting — the one place git is started: git works on the other core while
    the caller does what does not change the answer git is computing.

    Started with ``os.posix_spawnp`` rather than ``subprocess``, whose import (with
    ``threading``, ``selectors`` and the rest) the pre-launch check's budget cannot
    spare (ARCHITECTURE.md, "What is measured, and where"). So ``cwd``
    is git's ``-C`` (git changes there before it reads anything, ``GIT_DIR``
    included, as for a ``cwd``); SIGPIPE and SIGXFSZ go back to their defaults in
    git, as ``subprocess`` restores them; no descriptor of git-forge's own is
    inherited (PEP 446).
    """
    argv = [*GIT, *_DISTRUSTED, *(("-C", os.fspath(cwd)) if cwd is not None else ()), *args]
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    in_read, in_write = os.pipe() if input is not None else (None, None)
    actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = [
        (os.POSIX_SPAWN_DUP2, out_write, 1), (os.POSIX_SPAWN_DUP2, err_write, 2),
        (os.POSIX_SPAWN_DUP2, in_read, 0) if in_read is not None
        else (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)]
    try:
        pid = os.posix_spawnp("git", argv, _merged_env(env), file_actions=actions,
                              setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
    except OSError as exc:
        for fd in (out_read, err_read, in_write):
            if fd is not None:
                os.close(fd)
        raise GitError(f"cannot run git: {os_error_text(exc)}", exit_code=1) from exc
    finally:
        for fd in (out_write, err_write, in_read):
            if fd is not None:
                os.close(fd)
    return StartedGit(args, pid, out_read, err_read, in_write, input or b"")


def git_result(
    args: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str | None] | None = None,
    input: bytes | None = None,
) -> capture.Finished:
    """Run ``git ARGS`` and return the finished process, whatever its exit.

    For the commands whose exit code is an answer (``merge-tree``: 1 means
    conflicts; ``merge-base --is-ancestor``: 1 means no; ``config``: 1 means
    not set).
    """
    return start_git(args, cwd=cwd, env=env, input=input).wait()


def run_git(
    args: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str | None] | None = None,
    input: bytes | None = None,
) -> bytes:
    """Run ``git ARGS`` in ``cwd`` and return its stdout (bytes, unparsed); a
    non-zero exit is a ``GitError`` with git's stderr verbatim (exit code 1)."""
    return start_git(args, cwd=cwd, env=env, input=input).result()


def failure(args: Sequence[str], result: capture.Finished) -> GitError:
    """git's stderr verbatim as a ``GitError`` (exit code 1)."""
    message = result.stderr.decode("utf-8", "replace").strip()
    return GitError(message or f"git {args[0]} exited with {result.returncode}", exit_code=1)
