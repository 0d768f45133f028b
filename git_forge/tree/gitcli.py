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


def run_git(
    args: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
) -> bytes:
    """Run ``git ARGS`` in ``cwd`` and return its stdout (bytes, unparsed).

    A non-zero exit raises ``GitError`` with git's stderr verbatim (exit code 1).
    ``env`` adds to (never replaces) the inherited environment, so ``GIT_DIR``
    and friends the operator set keep working.
    """
    argv = ["git", *args]
    try:
        result = subprocess.run(
            argv,
            cwd=cwd,
            input=input,
            capture_output=True,
            env={**os.environ, **env} if env else None,
            check=False,
        )
    except OSError as exc:
        raise GitError(f"cannot run git: {os_error_text(exc)}", exit_code=1) from exc
    if result.returncode != 0:
        stderr = result.stderr.decode("utf-8", "replace").strip()
        raise GitError(stderr or f"git {args[0]} exited with {result.returncode}", exit_code=1)
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
