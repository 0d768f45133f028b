"""Plain helpers the tests share: run the installed CLI, run git, snapshot files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

_BIN_DIR = Path(sys.executable).parent


def forge_argv() -> list[str]:
    """The installed console script, as a user runs it."""
    script = _BIN_DIR / "git-forge"
    if script.exists():
        return [str(script)]
    found = shutil.which("git-forge")
    return [found] if found else [sys.executable, "-m", "git_forge"]


def run_forge(
    *args: str,
    cwd: Path | str | None = None,
    input: str | bytes | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess:
    """Run ``git-forge ARGS`` as a real child process; text output."""
    text = not isinstance(input, bytes)
    return subprocess.run(
        forge_argv() + list(args), cwd=cwd, input=input, capture_output=True, text=text,
        env={**os.environ, **(env or {})}, timeout=timeout,
    )


def git(*args: str, cwd: Path | str, check: bool = True, env: dict[str, str] | None = None) -> str:
    """Run the real git CLI and return its stdout."""
    result = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False,
        env={**os.environ, **(env or {})},
    )
    if check and result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr}")
    return result.stdout


def snapshot(root: Path | str, *, skip_git: bool = True) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes (``.git`` skipped unless asked)."""
    root = Path(root)
    files: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if skip_git and (rel == ".git" or rel.startswith(".git/")):
            continue
        if path.is_file() and not path.is_symlink():
            files[rel] = path.read_bytes()
    return files
