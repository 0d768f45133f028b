"""Running git-forge with its output on a real pseudo-terminal, non-interactively."""

from __future__ import annotations

import os
import select
import subprocess
import time
from pathlib import Path

from helpers import forge_argv


def on_tty(root: Path, *args: str, env: dict | None = None, git: tuple[str, ...] | None = None,
           timeout: float = 60) -> tuple[int, bytes]:
    """Run ``git-forge ARGS`` (or ``git GIT... forge ARGS``, as a user types it) with
    stdout and stderr on a real pseudo-terminal; stdin is /dev/null, so nothing
    interactive starts. Returns the exit code and every byte written."""
    argv = ["git", *git, "forge", *args] if git is not None else forge_argv() + list(args)
    master, slave = os.openpty()
    proc = subprocess.Popen(argv, cwd=root, stdin=subprocess.DEVNULL,
                            stdout=slave, stderr=slave, env={**os.environ, **(env or {})})
    os.close(slave)
    output = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every writer is gone
                    break
                if not chunk:
                    break
                output += chunk
            elif proc.poll() is not None:
                break
        else:
            proc.kill()
            raise AssertionError(f"git-forge {args} did not finish; output: {output!r}")
        return proc.wait(timeout=10), output
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
