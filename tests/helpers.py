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


class PtySession:
    """A real pseudo-terminal running ``git-forge ARGS`` — for interactive flows.

    ``expect`` waits for text to appear after what was already consumed;
    ``send`` types a line; ``finish`` reads to the end and returns the exit code.
    """

    def __init__(self, *args: str, cwd: Path | str, env: dict[str, str] | None = None) -> None:
        import pty

        self.transcript = b""
        self._seen = 0
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # pragma: no cover - the child process
            try:
                os.chdir(cwd)
                argv = forge_argv() + list(args)
                os.execvpe(argv[0], argv, {**os.environ, **(env or {})})
            finally:
                os._exit(127)

    def _read(self, timeout: float) -> bool:
        import select

        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:
            return False
        if not chunk:
            return False
        self.transcript += chunk
        return True

    def expect(self, text: str, timeout: float = 30) -> str:
        import time

        needle = text.encode()
        deadline = time.monotonic() + timeout
        while True:
            found = self.transcript.find(needle, self._seen)
            if found >= 0:
                self._seen = found + len(needle)
                return self.text
            if time.monotonic() > deadline or not self._read(0.2):
                raise AssertionError(f"{text!r} did not appear; transcript:\n{self.text}")

    def send(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\r")

    def interrupt(self) -> None:
        os.write(self.fd, b"\x03")

    def finish(self, timeout: float = 60) -> int:
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self._read(0.2):
            pass
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status)

    @property
    def text(self) -> str:
        return self.transcript.decode("utf-8", "replace")
