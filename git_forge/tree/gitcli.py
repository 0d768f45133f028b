"""Running the git CLI, for the few things pygit2 cannot do (or does slower).

Each caller says in a comment why it goes through git. This module must not
import pygit2: the pre-launch hot path (``fast_status``) uses it and pays for
every import.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence

from git_forge.errors import os_error_text
from git_forge.tree.errors import GitError

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
    if env:
        merged = {**os.environ}
        for name, value in env.items():
            if value is None:
                merged.pop(name, None)
            else:
                merged[name] = value
    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            input=input,
            capture_output=True,
            env=merged if env else None,
            check=False,
        )
    except OSError as exc:
        raise GitError(f"cannot run git: {os_error_text(exc)}", exit_code=1) from exc


def failure(args: Sequence[str], result: subprocess.CompletedProcess[bytes]) -> GitError:
    """git's stderr verbatim as a ``GitError`` (exit code 1)."""
    stderr = result.stderr.decode("utf-8", "replace").strip()
    return GitError(stderr or f"git {args[0]} exited with {result.returncode}", exit_code=1)


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
    if result.returncode != 0:
        raise failure(args, result)
    return result.stdout


def config_entries(pattern: str) -> list[tuple[str, str | None]]:
    """``git config --get-regexp PATTERN`` where the user stands, in git's order
    (the last value of a key wins): ``(key, value)``, ``None`` for a key given
    without a value (``-c color.ui``). Nothing set, or git not runnable, is ``[]``:
    callers ask for optional settings (colour) and fall back to their default."""
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
