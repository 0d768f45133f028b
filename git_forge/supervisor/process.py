"""The process itself: a single-use prepared command, and signalling its whole tree.

A child is started in its own session (so its own process group): one
``killpg`` reaches every descendant that stayed in the group, and terminal
Ctrl-C does not reach it behind the supervisor's back. A descendant that
called ``setsid`` itself escapes the group, so descendants are also tracked
through psutil (captured before every signal) and signalled one by one. The
group is only signalled while its leader is not yet reaped — a zombie leader
keeps the group id from being reused.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import psutil

from git_forge.errors import os_error_text
from git_forge.supervisor.lifecycle import ProcessError
from git_forge.supervisor.watchdog import Child, DirectChild, Watchdog

if TYPE_CHECKING:
    from git_forge.supervisor.sandbox import Sandbox


class Lease(Protocol):
    """Something held for the life of a process (a workspace lease), released once."""

    def release(self) -> None: ...


@dataclass
class PreparedProcess:
    """A command ready to start, used exactly once.

    ``timeout`` is in seconds from the start; the supervisor enforces it
    (terminate, grace, kill) and records ``timed_out``. ``stdin`` is written to
    the child and then closed; ``None`` gives it an empty standard input.
    ``lease`` is released exactly once when the process is terminalized.
    ``observe(stream, data)`` sees the output as it arrives (a caller's parser of
    a structured stream), in the drain threads: it must be quick and never block.
    ``receipt(manifest)`` is asked once, in the terminalization gate after the
    output is drained, what the caller made of the process (given its terminal
    manifest): a JSON object kept in the manifest as its opaque ``receipt``.
    ``sandbox``: the command runs inside it (``sandbox.Sandbox.wrap``); everything
    else — its group, its signals, its output — is the same.
    """

    argv: Sequence[str]
    cwd: str | Path
    env: Mapping[str, str] | None = None
    stdin: bytes | None = None
    timeout: float | None = None
    lease: Lease | None = None
    observe: Callable[[str, bytes], None] | None = None
    receipt: Callable[[Any], Mapping[str, Any] | None] | None = None
    sandbox: Sandbox | None = None
    _used: bool = field(default=False, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.argv, str | bytes) or not self.argv:
            raise ProcessError("invalid_arguments", "argv must be a non-empty list of strings")
        if not all(isinstance(arg, str) for arg in self.argv) or not self.argv[0]:
            raise ProcessError("invalid_arguments", "argv must be a non-empty list of strings")
        # The one check before any start: no exec can pass a NUL, and the watchdog,
        # shared by every agent of the run, must never be handed one.
        if any("\0" in arg for arg in self.argv):
            raise ProcessError("invalid_arguments", "an argument holds a NUL character")
        if self.timeout is not None and not self.timeout > 0:
            raise ProcessError("invalid_arguments", "a timeout must be positive")
        if self.stdin is not None and not isinstance(self.stdin, bytes):
            raise ProcessError("invalid_arguments", "stdin must be bytes")

    @property
    def used(self) -> bool:
        return self._used

    def start(self, watchdog: Watchdog | None = None, *, alive: tuple[int, Path] | None = None,
              linger: float = 2.0, leftover_grace: float = 1.0,
              orphan_grace: float = 2.0, marker: str = "") -> Child:
        """Spawn the command (once): own session, stdin/stdout/stderr pipes.

        With a ``watchdog`` the watchdog starts the command (its subreaper, which
        ends its tree if this process dies: see ``watchdog_process``); without one
        it is a direct child. ``alive`` (the locked liveness file: descriptor and path) is
        inherited either way, and its descriptor is consumed: closed here as soon
        as the child (or the watchdog) holds the lock, whether or not the start
        succeeded, so that this process never holds it while the tree is gone.
        """
        alive_fd = alive[0] if alive is not None else -1
        try:
            with self._lock:
                if self._used:
                    raise ProcessError("invalid_arguments", "a prepared process starts only once")
                self._used = True
            argv = (self.sandbox.wrap(self.argv, self.cwd) if self.sandbox is not None
                    else list(self.argv))
            # ``PWD`` names where it runs, not where this process was started: a program
            # that takes its directory from it (OpenCode does) works in its own tree
            env = {**(self.env if self.env is not None else os.environ),
                   "PWD": os.path.abspath(self.cwd)}
            if watchdog is not None:
                if alive is None:
                    raise ProcessError("invalid_arguments",
                                       "a watched start needs a liveness lock")
                alive_fd = -1  # the watchdog closes it once sent
                return watchdog.spawn(argv, str(self.cwd), env,
                                      stdin=self.stdin is not None, alive_fd=alive[0],
                                      alive_path=str(alive[1]), linger=linger,
                                      leftover_grace=leftover_grace, orphan_grace=orphan_grace,
                                      marker=marker)
            return DirectChild(subprocess.Popen(
                argv,
                cwd=self.cwd,
                env=env,
                stdin=subprocess.PIPE if self.stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
                pass_fds=(alive_fd,) if alive_fd >= 0 else (),
                bufsize=0,
            ))
        finally:
            if alive_fd >= 0:
                os.close(alive_fd)


def _process_group(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return None


def _alive(process: psutil.Process) -> bool:
    """Running and not a zombie (a zombie is dead, only not yet reaped)."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class ProcessTree:
    """The process group led by one supervised child, plus every descendant seen.

    The caller serializes calls and tells ``signal`` whether the leader is
    still unreaped; after reaping, only individually tracked descendants
    (identified by pid *and* creation time) are ever signalled.
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.pgid = pid  # start_new_session: the child leads its own group
        self._known: dict[int, psutil.Process] = {}

    def refresh(self) -> None:
        """Remember the leader's current descendants (before they can escape)."""
        try:
            children = psutil.Process(self.pid).children(recursive=True)
        except psutil.Error:
            return
        for child in children:
            known = self._known.get(child.pid)
            if known is None or known.create_time() != child.create_time():
                self._known[child.pid] = child

    def group_members(self) -> list[psutil.Process]:
        """Live processes still in the group, the leader excluded."""
        members = []
        for pid in psutil.pids():
            if pid != self.pid and _process_group(pid) == self.pgid:
                with contextlib.suppress(psutil.Error):
                    members.append(psutil.Process(pid))
        return [member for member in members if _alive(member)]

    def leftovers(self) -> list[psutil.Process]:
        """Every live process of the tree except the leader. When the group is empty
        (a watched leader is reaped once its whole tree is gone) one ``killpg`` says
        so, instead of a look at every process on the machine."""
        found = ({member.pid: member for member in self.group_members()}
                 if _group_exists(self.pgid) else {})
        for pid, process in self._known.items():
            if pid not in found and _alive(process):
                found[pid] = process
        return list(found.values())

    def signal(self, signum: int, *, leader_unreaped: bool) -> list[str]:
        """Send ``signum`` to the whole tree; return what could not be delivered."""
        failures: list[str] = []
        if leader_unreaped:
            self.refresh()
            try:
                os.killpg(self.pgid, signum)
            except ProcessLookupError:
                pass
            except OSError as exc:
                failures.append(f"{signal.Signals(signum).name} to the process group: "
                                f"{os_error_text(exc)}")
        for process in list(self._known.values()):
            if not leader_unreaped or _process_group(process.pid) != self.pgid:
                try:
                    if _alive(process):
                        process.send_signal(signum)
                except psutil.NoSuchProcess:
                    self._known.pop(process.pid, None)
                except psutil.Error as exc:
                    failures.append(f"{signal.Signals(signum).name} to a descendant: {exc}")
        return failures

    def sweep(self, grace: float) -> list[str]:
        """Terminate what is left of the tree after its leader exited, then kill it."""
        failures: list[str] = []
        survivors = self.leftovers()
        if not survivors:
            return failures
        for signum in (signal.SIGTERM, signal.SIGKILL):
            for process in survivors:
                try:
                    process.send_signal(signum)
                except psutil.NoSuchProcess:
                    pass
                except psutil.Error as exc:
                    failures.append(f"{signal.Signals(signum).name} to a leftover: {exc}")
            survivors = wait_gone(survivors, grace)
            if not survivors:
                break
        return failures


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, only not ours to signal
    return True


def wait_gone(processes: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Wait up to ``timeout`` for ``processes`` to die; return the survivors.

    Not ``psutil.wait_procs``: these are not our children, and a zombie nobody
    reaps would otherwise count as alive for the whole timeout. Each process is
    watched through a pidfd, which becomes readable the moment it exits (a zombie
    included), so the wait ends with the last exit; without pidfds (an old
    kernel) it looks every 20 ms."""
    deadline = time.monotonic() + timeout
    survivors = [process for process in processes if _alive(process)]
    poller = select.poll()
    pidfds: dict[int, int] = {}  # fd -> pid
    try:
        for process in survivors:
            try:
                fd = os.pidfd_open(process.pid)
            except (AttributeError, OSError):
                continue  # gone already, or no pidfds here: the 20 ms look covers it
            pidfds[fd] = process.pid
            poller.register(fd, select.POLLIN)
        watched_all = len(pidfds) == len(survivors)
        while survivors:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            for fd, _ in poller.poll(max(1, int(left * 1000) + 1) if watched_all else 20):
                poller.unregister(fd)  # exited: readable from now on
            survivors = [process for process in survivors if _alive(process)]
    finally:
        for fd in pidfds:
            os.close(fd)
    return survivors
