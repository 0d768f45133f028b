"""Running the git CLI, for the few things pygit2 cannot do (or does slower).

Each caller says in a comment why it goes through git. This module must not
import pygit2: the pre-launch hot path (``fast_status``) uses it and pays for
every import. Every git it starts runs with optional locks off (``GIT``).
"""

from __future__ import annotations

import os

from git_forge import capture
from git_forge.errors import os_error_text
from git_forge.tree.errors import GitError

# ``subprocess`` (with ``threading``, ``selectors``, ``signal``) and ``collections.abc``
# cost ~10 ms to import: the pre-launch hot path spawns git through ``capture_git``
# with ``os.posix_spawnp`` alone, and the rest import them when they run.
#
# git's stdout is data and kept whole; its stderr only ever becomes a message (a
# ``GitError``), so only its last ``capture.TAIL_BYTES`` are kept: a hook or a filter
# git runs may print without end.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

#: Pathspecs built from real file names must never be read as globs or magic
#: (``*.txt``, ``:x``, ``[ab].txt`` are ordinary names here).
LITERAL_PATHSPECS = {"GIT_LITERAL_PATHSPECS": "1"}

#: How every git command here starts: with git's optional locks off. A ``git status``
#: otherwise holds the index's lock while it walks the tree (to write back a refreshed
#: stat cache), and a commit, ``read-tree`` or ``update-index`` meanwhile — the loop's,
#: in the main checkout or an item's worktree — fails on ``index.lock``: a read must
#: never make a run fail. Commands that write still take the locks they need; git
#: passes the setting on to the git processes it starts (hooks, ``worktree remove``'s
#: own ``status``).
GIT = ("git", "--no-optional-locks")


def git_result(
    args: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str | None] | None = None,
    input: bytes | None = None,
) -> capture.Finished:
    """Run ``git ARGS`` in ``cwd`` and return the finished process, whatever its exit.

    For the commands whose exit code is an answer (``merge-tree``: 1 means
    conflicts; ``merge-base --is-ancestor``: 1 means no). ``env`` adds to the
    inherited environment; a ``None`` value removes that variable (a command
    meant for another work tree must not inherit ``GIT_DIR``). Without ``input``
    git's stdin is empty.
    """
    return start_git(args, cwd=cwd, env=env, input=input).wait()


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

    def __init__(self, args: Sequence[str], helper: capture.Helper) -> None:
        self._args = list(args)
        self._helper = helper
        self._finished: capture.Finished | None = None

    def wait(self) -> capture.Finished:
        """Wait for git to end: the finished process, read once."""
        if self._finished is None:
            self._finished = self._helper.finish()
        return self._finished

    def result(self) -> bytes:
        finished = self.wait()
        return _checked(self._args, finished.returncode, finished.stdout, finished.stderr)

    def __enter__(self) -> StartedGit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.wait()


def start_git(
    args: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str | None] | None = None,
    input: bytes | None = None,
) -> StartedGit:
    """Start ``git ARGS`` in ``cwd`` (as ``run_git`` would run it) without waiting:
    git works on the other core while the caller does what does not change the
    answer git is computing."""
    try:
        helper = capture.start([*GIT, *args], cwd=cwd, env=_merged_env(env), input=input,
                               keep_stdout=True)
    except OSError as exc:
        raise GitError(f"cannot run git: {os_error_text(exc)}", exit_code=1) from exc
    return StartedGit(args, helper)


def failure(args: Sequence[str], result: capture.Finished) -> GitError:
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

    git is started with ``os.posix_spawnp`` as ``GIT -C ROOT ARGS`` (git
    changes into ``ROOT`` before it reads anything, ``GIT_DIR`` included, as a
    ``cwd`` would), stdout and stderr on two pipes read together by
    ``capture.read_output`` (neither can fill and stall git), stdin inherited,
    SIGPIPE and SIGXFSZ back to their defaults as ``subprocess`` restores them.
    Python's own descriptors are never inherited (PEP 446).
    """
    import _signal  # type: ignore[import-not-found]  # the builtin ``signal`` wraps (~1 ms less)

    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    try:
        pid = os.posix_spawnp("git", [*GIT, "-C", os.fspath(repo_root), *args], os.environ,
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
    try:
        stdout, stderr = capture.read_output(out_read, err_read, keep_stdout=True)
    finally:
        _pid, status = os.waitpid(pid, 0)
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
    try:
        result = capture.run([*GIT, "config", "--get-regexp", pattern], timeout=10,
                             keep_stdout=True)
    except (OSError, capture.HelperTimeout):
        return []
    entries: list[tuple[str, str | None]] = []
    for line in result.stdout.decode("utf-8", "replace").splitlines():
        key, separator, value = line.partition(" ")
        entries.append((key, value if separator else None))
    return entries
