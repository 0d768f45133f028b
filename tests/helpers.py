"""Plain helpers the tests share: run the installed CLI, run git, snapshot files."""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import waiting

_BIN_DIR = Path(sys.executable).parent
#: The number of ``read`` in ``/proc/PID/syscall``, where this suite knows it.
_READ_SYSCALL = {"x86_64": 0, "aarch64": 63}


def load_generator() -> Any:
    """``tools/generate_docs.py`` (the man page's, the completion scripts' and the plain
    command lines' table's generator), imported."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "generate_docs", Path(__file__).resolve().parent.parent / "tools" / "generate_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def forge_argv() -> list[str]:
    """The installed launcher (``bin/git-forge``), as a user runs it."""
    script = _BIN_DIR / "git-forge"
    if script.exists():
        return [str(script)]
    found = shutil.which("git-forge")
    return [found] if found else [sys.executable, "-m", "git_forge"]


def block_buffered_env() -> dict[str, str]:
    """This environment without ``PYTHONUNBUFFERED``: a child's stdout is then
    block-buffered when it is not a terminal, as a user's is."""
    return {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}


def run_forge(
    *args: str,
    cwd: Path | str | None = None,
    input: str | bytes | None = None,
    env: dict[str, str] | None = None,
    timeout: float = waiting.PROCESS_TIMEOUT,
) -> subprocess.CompletedProcess:
    """Run ``git-forge ARGS`` as a real child process; text output. Past ``timeout``
    the child and everything it started are killed and the test fails."""
    text = not isinstance(input, bytes)
    return waiting.run(
        forge_argv() + list(args), cwd=cwd, input=input, capture_output=True, text=text,
        env={**os.environ, **(env or {})}, timeout=timeout,
    )


def git(*args: str, cwd: Path | str, check: bool = True, env: dict[str, str] | None = None) -> str:
    """Run the real git CLI and return its stdout."""
    result = waiting.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True,
        env={**os.environ, **(env or {})},
    )
    if check and result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr}")
    return result.stdout


def abandoned(root: Path | str, item_id: str) -> list[str]:
    """The refs an item's abandoned work is kept under (``refs/forge/abandoned/<id>/…``),
    oldest first."""
    return git("for-each-ref", "--format=%(refname)", f"refs/forge/abandoned/{item_id}/",
               cwd=root).split()


def commit_project(root: Path, titles: tuple[str, ...]) -> None:
    """Make ``root`` (its files already written) a committed git-forge project with
    one pending item per title: git init, git forge init, the items, one commit.
    Built with no user's or system's config and a fixed identity, for a
    module-scoped fixture, which the per-test isolation does not reach."""
    env = {"HOME": str(root.parent), "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    git("init", "-q", "-b", "main", cwd=root, env=env)
    assert run_forge("init", cwd=root, env=env).returncode == 0
    for title in titles:
        assert run_forge("backlog", "add", "--title", title, cwd=root, env=env).returncode == 0
    git("add", "-A", cwd=root, env=env)
    git("commit", "-q", "-m", "base", cwd=root, env=env)


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
    """A real pseudo-terminal running ``git-forge ARGS`` — for interactive flows
    (``through_git``: ``git forge ARGS``, git running git-forge as its child).

    ``expect`` waits for text to appear after what was already consumed;
    ``send`` types a line; ``finish`` reads to the end and returns the exit code.
    Keys are typed only once the child is blocked reading its terminal: a prompt
    on the screen is not yet a read, and a Ctrl-C that lands between the two is
    held by Python until a line arrives (the child then waits forever). Every
    wait has a deadline; one that passes kills the child and fails the test.
    """

    def __init__(self, *args: str, cwd: Path | str, env: dict[str, str] | None = None,
                 through_git: bool = False) -> None:
        import pty

        argv = (["git", "forge"] if through_git else forge_argv()) + list(args)
        self.transcript = b""
        self._seen = 0
        self._reaped: int | None = None
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # pragma: no cover - the child process
            try:
                # What a terminal's session gives: Ctrl-C interrupts, whatever the test
                # runner ignores (one started as a background job without job control
                # inherits an ignored SIGINT and SIGQUIT, and so would the child).
                import signal

                for number in (signal.SIGINT, signal.SIGQUIT):
                    signal.signal(number, signal.SIG_DFL)
                os.chdir(cwd)
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

    def _fail(self, message: str) -> AssertionError:
        """Kill the child, drain what it printed, and say ``message`` with the transcript."""
        self.kill()
        return AssertionError(f"{message}; transcript:\n{self.text}")

    def expect(self, text: str, timeout: float = 30) -> str:
        needle = text.encode()
        deadline = waiting.Deadline(timeout)
        while True:
            found = self.transcript.find(needle, self._seen)
            if found >= 0:
                self._seen = found + len(needle)
                return self.text
            if deadline.passed or not self._read(0.2):
                raise self._fail(f"{text!r} did not appear")

    def _reading(self) -> bool:
        """The child sleeps in ``read(0, …)``: a read of its terminal.
        ``/proc/PID/syscall`` names the call and its arguments."""
        pid = self.pid
        try:  # through git: the reader is git's child (git-forge), not git
            while True:
                with open(f"/proc/{pid}/task/{pid}/children") as children:
                    below = children.read().split()
                if not below:
                    break
                pid = int(below[0])
        except OSError:
            pid = self.pid
        try:
            with open(f"/proc/{pid}/stat") as stat:
                state = stat.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{pid}/syscall") as call:
                fields = call.read().split()
        except OSError:
            return True  # no /proc to ask: the prompt on the screen is all there is
        if state == "Z":
            raise self._fail("the child exited instead of reading its terminal")
        if state != "S" or len(fields) < 2 or not fields[0].isdigit():
            return False
        read = _READ_SYSCALL.get(platform.machine())
        return int(fields[1], 16) == 0 and (read is None or int(fields[0]) == read)

    def wait_reading(self, timeout: float = 30) -> None:
        """Wait until the child is blocked reading its terminal (seen twice in a row)."""
        deadline = waiting.Deadline(timeout)
        streak = 0
        while streak < 2:
            if deadline.passed:
                raise self._fail(f"the child did not read its terminal within {timeout:g} s")
            streak = streak + 1 if self._reading() else 0
            self._read(0.01)

    def send(self, line: str) -> None:
        self.wait_reading()
        os.write(self.fd, line.encode() + b"\r")

    def type(self, keys: bytes) -> None:
        """Bytes as a terminal sends them (a paste, an escape sequence), all at once."""
        self.wait_reading()
        os.write(self.fd, keys)

    def interrupt(self) -> None:
        self.wait_reading()
        os.write(self.fd, b"\x03")

    def end_input(self) -> None:
        """Ctrl-D at the start of a line: the child reads end of input."""
        self.wait_reading()
        os.write(self.fd, b"\x04")

    def finish(self, timeout: float = 60) -> int:
        """Read to the end of the output and return the exit code; a child still
        running after ``timeout`` is killed and the test fails."""
        deadline = waiting.Deadline(timeout)
        while self._read(0.2):
            if deadline.passed:
                raise self._fail(f"the child was still running after {timeout:g} s, killed")
        try:
            self._reaped = waiting.reap(self.pid, deadline.left() + 5)
        except AssertionError as exc:
            self._reaped = -9
            raise AssertionError(f"{exc}; transcript:\n{self.text}") from None
        os.close(self.fd)
        return self._reaped

    def kill(self) -> None:
        """End the child now (idempotent): for a test that failed mid-flow."""
        if self._reaped is None:
            waiting.kill_tree(self.pid)
            _, status = os.waitpid(self.pid, 0)
            self._reaped = os.waitstatus_to_exitcode(status)

    @property
    def text(self) -> str:
        return self.transcript.decode("utf-8", "replace")


def record_fsyncs(monkeypatch: Any) -> list[str]:
    """The paths this process fsyncs from now on (the test's end undoes it), in order."""
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    return synced


@functools.cache
def sandbox_problem() -> str | None:
    """Why bubblewrap cannot run a sandbox here (``None``: it can), asked once."""
    from git_forge.supervisor.sandbox import SandboxError, check

    try:
        check()
    except SandboxError as exc:
        return str(exc)
    return None
