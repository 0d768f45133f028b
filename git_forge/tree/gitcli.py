"""Running the git CLI, for the few things pygit2 cannot do (or does slower).

Each caller says in a comment why it goes through git. This module must not
import pygit2: the pre-launch hot path (``fast_status``) uses it and pays for
every import.
"""

from __future__ import annotations

import os

from git_forge.errors import os_error_text
from git_forge.tree.errors import GitError

# ``subprocess`` (with ``threading``, ``selectors``, ``signal``) and ``collections.abc``
# cost ~10 ms to import: the pre-launch hot path spawns git through ``capture_git``
# with ``os.posix_spawnp`` alone, and the rest import them when they run.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Mapping, Sequence

#: Pathspecs built from real file names must never be read as globs or magic
#: (``*.txt``, ``:x``, ``[ab].txt`` are ordinary names here).
LITERAL_PATHSPECS = {"GIT_LITERAL_PATHSPECS": "1"}


def git_result(
    args: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str | None] | None = None,
    input: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git ARGS`` in ``cwd`` and return the finished process, whatever its exit.

    For the commands whose exit code is an answer (``merge-tree``: 1 means
    conflicts; ``merge-base --is-ancestor``: 1 means no). ``env`` adds to the
    inherited environment; a ``None`` value removes that variable (a command
    meant for another work tree must not inherit ``GIT_DIR``).
    """
    import subprocess

    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            input=input,
            capture_output=True,
            env=_merged_env(env),
            check=False,
        )
    except OSError as exc:
        raise GitError(f"cannot run git: {os_error_text(exc)}", exit_code=1) from exc


def _merged_env(env: Mapping[str, str | None] | None) -> dict[str, str] | None:
    """The inherited environment plus ``env`` (a ``None`` value removes that name)."""
    if not env:
        return None
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

    def __init__(self, args: Sequence[str], process: subprocess.Popen[bytes]) -> None:
        self._args = list(args)
        self._process = process
        self._output: tuple[bytes, bytes] | None = None

    def wait(self) -> tuple[bytes, bytes]:
        """Wait for git to end: its (stdout, stderr), read once."""
        if self._output is None:
            self._output = self._process.communicate()
        return self._output

    def result(self) -> bytes:
        stdout, stderr = self.wait()
        return _checked(self._args, self._process.returncode, stdout, stderr)

    def __enter__(self) -> StartedGit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.wait()


def start_git(
    args: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str | None] | None = None,
) -> StartedGit:
    """Start ``git ARGS`` in ``cwd`` (as ``run_git`` would run it) without waiting:
    git works on the other core while the caller does what does not change the
    answer git is computing."""
    import subprocess

    try:
        process = subprocess.Popen(["git", *args], cwd=cwd, env=_merged_env(env),
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
    except OSError as exc:
        raise GitError(f"cannot run git: {os_error_text(exc)}", exit_code=1) from exc
    return StartedGit(args, process)


def failure(args: Sequence[str], result: subprocess.CompletedProcess[bytes]) -> GitError:
    """git's stderr verbatim as a ``GitError`` (exit code 1)."""
    return _failure(args, result.returncode, result.stderr)


def run_git(
    args: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str | None] | None = None,
    input: bytes | None = None,
) -> bytes:
    """Run ``git ARGS`` in ``cwd`` and return its stdout (bytes, unparsed).

    A non-zero exit raises ``GitError`` with git's stderr verbatim (exit code 1).
    ``env`` adds to (never replaces) the inherited environment, so ``GIT_DIR``
    and friends the operator set keep working; a ``None`` value removes one.
    """
    result = git_result(args, cwd=cwd, env=env, input=input)
    return _checked(args, result.returncode, result.stdout, result.stderr)


def capture_git(args: Sequence[str], *, repo_root: str | os.PathLike[str]) -> bytes:
    """``run_git(args, cwd=repo_root)`` for the pre-launch hot path: the same
    result and the same errors, without importing ``subprocess``.

    git is started with ``os.posix_spawnp`` as ``git -C ROOT ARGS`` (git
    changes into ``ROOT`` before it reads anything, ``GIT_DIR`` included, as a
    ``cwd`` would), stdout and stderr on two pipes read together (neither can
    fill and stall git), stdin inherited, SIGPIPE and SIGXFSZ back to their
    defaults as ``subprocess`` restores them. Python's own descriptors are
    never inherited (PEP 446).
    """
    import _signal  # type: ignore[import-not-found]  # the builtin ``signal`` wraps (~1 ms less)
    import select

    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    try:
        pid = os.posix_spawnp("git", ["git", "-C", os.fspath(repo_root), *args], os.environ,
                              file_actions=[(os.POSIX_SPAWN_DUP2, out_write, 1),
                                            (os.POSIX_SPAWN_DUP2, err_write, 2)],
                              setsigdef=(_signal.SIGPIPE, _signal.SIGXFSZ))
    except OSError as exc:
        os.close(out_read)
        os.close(err_read)
        raise GitError(f"cannot run git: {os_error_text(exc)}", exit_code=1) from exc
    finally:
        os.close(out_write)
        os.close(err_write)
    chunks: dict[int, list[bytes]] = {out_read: [], err_read: []}
    poller = select.poll()
    for fd in chunks:
        poller.register(fd, select.POLLIN)
    try:
        reading = len(chunks)
        while reading:
            for fd, _event in poller.poll():
                data = os.read(fd, 1 << 20)
                if data:
                    chunks[fd].append(data)
                else:
                    poller.unregister(fd)
                    reading -= 1
    finally:
        os.close(out_read)
        os.close(err_read)
        _pid, status = os.waitpid(pid, 0)
    stdout, stderr = b"".join(chunks[out_read]), b"".join(chunks[err_read])
    return _checked(args, os.waitstatus_to_exitcode(status), stdout, stderr)


def _checked(args: Sequence[str], returncode: int, stdout: bytes, stderr: bytes) -> bytes:
    """git's stdout, or ``GitError`` with its stderr verbatim (exit code 1)."""
    if returncode != 0:
        raise _failure(args, returncode, stderr)
    return stdout


def _failure(args: Sequence[str], returncode: int, stderr: bytes) -> GitError:
    message = stderr.decode("utf-8", "replace").strip()
    return GitError(message or f"git {args[0]} exited with {returncode}", exit_code=1)


def config_entries(pattern: str) -> list[tuple[str, str | None]]:
    """``git config --get-regexp PATTERN`` where the user stands, in git's order
    (the last value of a key wins): ``(key, value)``, ``None`` for a key given
    without a value (``-c color.ui``). Nothing set, or git not runnable, is ``[]``:
    callers ask for optional settings (colour) and fall back to their default."""
    import subprocess

    try:
        result = subprocess.run(
            ["git", "config", "--get-regexp", pattern],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=10, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    entries: list[tuple[str, str | None]] = []
    for line in result.stdout.decode("utf-8", "replace").splitlines():
        key, separator, value = line.partition(" ")
        entries.append((key, value if separator else None))
    return entries
