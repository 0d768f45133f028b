"""The supervisor's side of the watchdog (see ``watchdog_process`` for the design).

The watchdog reports an agent's exit once its whole tree is gone, and reaps it
itself, so a ``WatchedChild`` counts as reaped from the moment its exit is known.

``Watchdog`` starts the watchdog process on first use and asks it to start each
agent; the result is a ``WatchedChild``, which the entry drives exactly like a
directly spawned ``DirectChild``: both expose the standard streams,
``when_exited`` (a call once the leader ended; for a direct child it is not
reaped yet, so its process group id cannot be reused while the entry still
signals it) and ``wait`` (the return code, as ``Popen.returncode`` gives it).
A watched child's call comes straight from the watchdog's answer; a direct
child's from a worker waiting on the kernel.

A child's pid is known only from the kernel (``Popen``) or from the watchdog
over its socket — never from a file.

Messages on the socket are JSON documents of plain dicts (str, int, float,
bool, lists); a string that is not UTF-8 (an argument or a path of raw bytes,
surrogate-escaped) crosses as JSON's ``\\udcXX`` escape and comes back the same.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from git_forge.supervisor import workers

SCRIPT = Path(__file__).with_name("watchdog_process.py")
#: The directory holding the ``git_forge`` package, for the watchdog's one import.
PACKAGE_PARENT = Path(__file__).resolve().parent.parent.parent
#: How long a start may wait for the watchdog's answer (a fork and an exec).
ANSWER_SECONDS = 30.0
#: How long ``close`` waits for the watchdog process to end.
CLOSE_SECONDS = 15.0
MAX_MESSAGE = 1 << 20
#: In every watched process's environment: the tree it belongs to, which lets
#: the watchdog attribute a descendant re-parented to it (``watchdog_process``).
TREE_VARIABLE = "FORGE_SUPERVISOR_HANDLE"


class Child(Protocol):
    """A started process as the entry sees it."""

    pid: int
    stdin: IO[bytes] | None
    stdout: IO[bytes]
    stderr: IO[bytes]
    #: Every process the child starts stays below a subreaper that ends it with the
    #: child (the watchdog): the entry need not track its descendants itself.
    contained: bool
    #: The subreaper ended while the child ran: its report of the exit is not one,
    #: and what was left of the tree lives on below init, for the entry to end.
    orphaned: bool

    @property
    def reaped(self) -> bool: ...
    def when_exited(self, callback: Callable[[], None]) -> None: ...
    def wait(self) -> int: ...


class DirectChild:
    """A child of this process (``Popen``): exit seen with ``WNOWAIT``, reaped by ``wait``."""

    contained = False  # a daemon that leaves its group escapes to init
    orphaned = False

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.stdin = popen.stdin
        assert popen.stdout is not None and popen.stderr is not None
        self.stdout: IO[bytes] = popen.stdout
        self.stderr: IO[bytes] = popen.stderr
        self._reaped = False

    @property
    def reaped(self) -> bool:
        return self._reaped

    def when_exited(self, callback: Callable[[], None]) -> None:
        """``callback()`` once the child exited, from a worker that waits for it
        without reaping it (``WNOWAIT``)."""
        def wait_then_call() -> None:
            with contextlib.suppress(ChildProcessError):
                os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
            callback()

        workers.start(wait_then_call, name=f"wait-{self.pid}")

    def wait(self) -> int:
        code = self.popen.wait()
        self._reaped = True
        return code


class WatchedChild:
    """An agent started by the watchdog, which reaps it and reports its exit."""

    contained = True  # the watchdog is their subreaper and ends what is left of the tree

    def __init__(self, pid: int, stdin: IO[bytes] | None, stdout: IO[bytes],
                 stderr: IO[bytes]) -> None:
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None
        self.orphaned = False
        self._exited = threading.Event()
        self._lock = threading.Lock()
        self._callback: Callable[[], None] | None = None

    @property
    def reaped(self) -> bool:
        return self._exited.is_set()

    def when_exited(self, callback: Callable[[], None]) -> None:
        """``callback()`` once the watchdog reported the exit: at once if it did,
        else on the watchdog's reader thread as the report comes in."""
        with self._lock:
            if not self._exited.is_set():
                self._callback = callback
                return
        callback()

    def wait(self) -> int:
        self._exited.wait()
        assert self.returncode is not None
        return self.returncode

    def report(self, status: int) -> None:
        with self._lock:
            if self._exited.is_set():
                return
            self.returncode = os.waitstatus_to_exitcode(status)
            self._exited.set()
            callback, self._callback = self._callback, None
        if callback is not None:
            callback()


@dataclass
class _Request:
    streams: tuple[IO[bytes] | None, IO[bytes], IO[bytes]]
    answered: threading.Event = field(default_factory=threading.Event)
    child: WatchedChild | None = None
    failure: dict[str, Any] | None = None


class WatchdogError(Exception):
    """The watchdog could not start a process (it is not running, or did not answer)."""


class Watchdog:
    """One watchdog process per supervisor, started by ``start`` or the first ``spawn``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._socket: socket.socket | None = None
        self._reader: threading.Thread | None = None
        self._ids = itertools.count(1)
        self._requests: dict[int, _Request] = {}
        self._children: dict[int, WatchedChild] = {}

    # -- the watchdog process ----------------------------------------------------------
    def start(self) -> None:
        """Start the watchdog process now rather than on the first ``spawn``: its
        interpreter boots while the caller goes on (a no-op once it runs)."""
        with self._lock:
            self._ensure_started()

    def _ensure_started(self) -> socket.socket:
        if self._socket is not None:
            return self._socket
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(SCRIPT), str(theirs.fileno()),
                 str(PACKAGE_PARENT)],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, close_fds=True,
            )
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        self._socket = ours
        self._reader = threading.Thread(target=self._read, args=(ours,), daemon=True,
                                        name="watchdog-reader")
        self._reader.start()
        return ours

    def _read(self, sock: socket.socket) -> None:
        while True:
            try:
                data = sock.recv(MAX_MESSAGE)
            except OSError:
                data = b""
            if not data:
                self._lost()
                return
            try:
                message = json.loads(data)
            except (EOFError, ValueError, TypeError):
                continue
            if isinstance(message, dict):
                self._handle(message)

    def _handle(self, message: dict[str, Any]) -> None:
        op = message.get("op")
        with self._state:
            if op == "exit":
                child = self._children.pop(message["pid"], None)
                if child is not None:
                    child.report(int(message["status"]))
                return
            request_id = message.get("id")
            request = (self._requests.pop(request_id, None) if isinstance(request_id, int)
                       else None)
            if request is None:
                return
            if op == "spawned":
                stdin, stdout, stderr = request.streams
                request.child = WatchedChild(int(message["pid"]), stdin, stdout, stderr)
                self._children[request.child.pid] = request.child
            else:
                request.failure = message
            request.answered.set()

    def _lost(self) -> None:
        """The watchdog ended (killed, say, by the OOM killer): every child it still
        ran is reported killed and ``orphaned`` — it may live on, below init, and its
        entry ends its tree — and the next start restarts the watchdog."""
        with self._state:
            children, self._children = self._children, {}
            requests, self._requests = self._requests, {}
            self._socket = None
        for child in children.values():
            child.orphaned = True
            child.report(signal.SIGKILL)  # a raw wait status: killed by SIGKILL
        for request in requests.values():
            request.failure = {"errno": 0, "where": "watchdog"}
            request.answered.set()
        process = self._process
        if process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=CLOSE_SECONDS)

    # -- starting ----------------------------------------------------------------------
    def spawn(
        self, argv: Sequence[str], cwd: str, env: Mapping[str, str], *, stdin: bool,
        alive_fd: int, alive_path: str, linger: float, leftover_grace: float,
        orphan_grace: float, marker: str = "",
    ) -> WatchedChild:
        """Start ``argv`` through the watchdog; raises ``OSError`` as ``Popen`` would for a
        command or directory that cannot be used, ``WatchdogError`` otherwise.

        ``alive_fd`` is consumed: closed as soon as it is sent (or the start failed).
        The watchdog holds the lock from the moment it receives the descriptor, and
        the agent once it is spawned. The request goes in two messages — the
        descriptors, then ``go`` once this process closed its copies — so the agent
        starts only after the lock is held by nobody but the watchdog and the tree:
        with a copy still open here, a quick agent's watchdog would find the lock
        held when the agent exits and linger its whole ``linger`` for a tree that
        is already gone."""
        try:
            _check_environment(env)
        except BaseException:
            os.close(alive_fd)
            raise
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        in_r, in_w = os.pipe() if stdin else (-1, -1)
        theirs = [out_w, err_w, alive_fd] + ([in_r] if stdin else [])
        streams = (os.fdopen(in_w, "wb", buffering=0) if stdin else None,
                   os.fdopen(out_r, "rb", buffering=0), os.fdopen(err_r, "rb", buffering=0))
        request = _Request(streams)
        env = {**env, TREE_VARIABLE: marker} if marker else dict(env)
        message = {"op": "spawn", "argv": list(argv), "cwd": os.path.abspath(cwd),
                   "env": env, "stdin": stdin, "marker": marker,
                   "alive_path": os.path.abspath(alive_path), "linger": linger,
                   "leftover_grace": leftover_grace, "orphan_grace": orphan_grace}
        try:
            with self._lock:
                sock = self._ensure_started()
                request_id = next(self._ids)
                message["id"] = request_id
                with self._state:
                    self._requests[request_id] = request
                socket.send_fds(sock, [json.dumps(message).encode()], theirs)
        except BaseException:
            sent_id = message.get("id")
            with self._state:
                if isinstance(sent_id, int):
                    self._requests.pop(sent_id, None)
            _close_streams(streams)
            raise
        finally:
            for fd in (out_w, err_w, in_r, alive_fd):
                if fd >= 0:
                    os.close(fd)
        try:
            sock.send(json.dumps({"op": "go", "id": request_id}).encode())
        except OSError:
            pass  # the watchdog is gone: the reader reports the request failed
        if not request.answered.wait(ANSWER_SECONDS):
            _close_streams(streams)
            raise WatchdogError("the watchdog did not answer")
        if request.child is not None:
            return request.child
        _close_streams(streams)
        failure = request.failure or {}
        code = int(failure.get("errno") or 0)
        where = failure.get("where")
        if code and where in ("cwd", "exec"):
            raise OSError(code, os.strerror(code), str(cwd) if where == "cwd" else argv[0])
        raise WatchdogError(f"the watchdog could not start the process ({where}"
                            + (f": {os.strerror(code)}" if code else "") + ")")

    def close(self) -> None:
        """End the watchdog: it sees end-of-file, ends any tree left, and exits."""
        with self._lock:
            sock, process = self._socket, self._process
            self._socket = None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(CLOSE_SECONDS)
        if process is not None and process.poll() is None:
            try:
                process.wait(timeout=CLOSE_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _check_environment(env: Mapping[str, str]) -> None:
    """Refuse what ``Popen`` refuses, before anything is started."""
    for key, value in env.items():
        for text in (key, value):
            if not isinstance(text, str):
                raise TypeError(f"environment keys and values must be str, not "
                                f"{type(text).__name__}")
            if "\0" in text:
                raise ValueError("embedded null byte in the environment")
        if not key or "=" in key:
            raise ValueError(f"illegal environment variable name {key!r}")


def _close_streams(streams: tuple[IO[bytes] | None, ...]) -> None:
    for stream in streams:
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
