"""The watchdog process: no agent outlives the supervisor that started it.

This file runs as its own small program (``python -I -S watchdog_process.py FD``),
one per supervisor, and imports nothing but the standard library. The shape:

    supervisor ──socket── watchdog (child subreaper)
                            └── guard (one per agent: session leader, child subreaper,
                                  │    parent-death signal)
                                  └── agent ── its children, grandchildren …

* The supervisor asks the watchdog to start each agent over a ``SOCK_SEQPACKET``
  socket, passing the agent's pipes and its liveness-lock descriptor
  (``SCM_RIGHTS``). The watchdog *forks* a guard — no new interpreter, so a
  start costs a fork, not a Python start-up — and the guard forks and execs
  the agent. Exec errors travel back before the supervisor's ``start`` returns.
* The guard leads the agent's session and process group (the supervisor's
  group signals reach the whole tree, as before) and is a child subreaper: a
  descendant whose parent dies — a double-forked ``setsid`` daemon included —
  is re-parented to the guard, so the whole tree stays reachable. When the
  agent exits, the guard gives what is left of the tree ``linger`` seconds to
  finish, terminates it (SIGTERM, ``leftover_grace``, SIGKILL) and exits with
  the agent's status, which the watchdog reports to the supervisor.
* When the supervisor dies by any means, SIGKILL included, the kernel closes
  its end of the socket; the watchdog sees end-of-file and tells every guard
  to end its tree (SIGTERM, ``orphan_grace``, SIGKILL). If the watchdog itself
  is killed, each guard's parent-death signal does the same.
* The guard ignores the group's SIGINT/SIGTERM/SIGHUP (the agent receives its
  own copy) so that it stays to sweep; the supervisor's SIGKILL escalation
  ends it with the tree, and the watchdog — a subreaper too — kills whatever
  that re-parents to it.

The agent inherits the liveness-lock descriptor (``proc/<handle>.alive``,
flock-ed by the supervisor before the start): the lock is held exactly as long
as some member of the tree is alive, which is how a later run proves a tree
gone without reading a PID from any file.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import resource
import select
import signal
import socket
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
MAX_MESSAGE = 1 << 20
MAX_FDS = 8
#: The guard's signal for "the supervisor is gone: end the tree".
GONE_SIGNAL = signal.SIGUSR1
#: How long the watchdog waits for its guards after the supervisor went away.
GUARDS_BOUND = 10.0

_libc = ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, value: int) -> None:
    if _libc.prctl(option, value, 0, 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


# -- the process table ---------------------------------------------------------------
def _parents() -> dict[int, list[int]]:
    """parent pid → child pids, from /proc (zombies included)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1 and fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(name))
    return children


def _descendants(root: int) -> list[int]:
    children = _parents()
    found: list[int] = []
    queue = list(children.get(root, ()))
    while queue:
        pid = queue.pop()
        found.append(pid)
        queue.extend(children.get(pid, ()))
    return found


def _send(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except OSError:
            pass


class _Wakeup:
    """SIGCHLD (and the other handled signals) as a readable pipe, for poll()."""

    def __init__(self, signals: tuple[int, ...]) -> None:
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self.write_fd, False)
        self.received: set[int] = set()
        for signum in signals:
            signal.signal(signum, self._handle)
        signal.set_wakeup_fd(self.write_fd, warn_on_full_buffer=False)

    def _handle(self, signum: int, _frame: object) -> None:
        self.received.add(signum)

    def wait(self, timeout: float | None, *others: int) -> list[int]:
        """Block until a signal arrives, one of ``others`` is readable, or ``timeout``."""
        poller = select.poll()
        for fd in (self.read_fd, *others):
            poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        try:
            ready = poller.poll(None if timeout is None else max(0, int(timeout * 1000)))
        except InterruptedError:
            ready = []
        fds = [fd for fd, _ in ready]
        if self.read_fd in fds:
            try:
                while os.read(self.read_fd, 512):
                    pass
            except BlockingIOError:
                pass
        return [fd for fd in fds if fd != self.read_fd]

    def close(self) -> None:
        signal.set_wakeup_fd(-1)
        os.close(self.read_fd)
        os.close(self.write_fd)


def _reap() -> list[tuple[int, int]]:
    """Every child that exited: ``[(pid, raw status)]``; empty when none (or no children)."""
    reaped: list[tuple[int, int]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        reaped.append((pid, status))


def _has_children() -> bool:
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


# -- the agent -----------------------------------------------------------------------
def _exec_agent(spec: dict, fds: dict[str, int], report: int) -> None:
    """In the agent's process: standard streams, cwd, signals, then exec. Never returns."""
    where = "setup"
    try:
        stdin = fds.get("stdin")
        if stdin is None:
            stdin = os.open(os.devnull, os.O_RDONLY)
        for target, source in ((0, stdin), (1, fds["stdout"]), (2, fds["stderr"])):
            os.dup2(source, target)
        alive = fds["alive"]
        os.set_inheritable(alive, True)
        for signum in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD, signal.SIGINT,
                       signal.SIGTERM, signal.SIGHUP, GONE_SIGNAL):
            signal.signal(signum, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        where = "cwd"
        os.chdir(spec["cwd"])
        keep = sorted({alive, report})
        low = 3
        for fd in keep:
            if fd > low:
                os.closerange(low, fd)
            low = fd + 1
        os.closerange(low, 65536)
        where = "exec"
        argv = spec["argv"]
        os.execvpe(argv[0], argv, spec["env"])
    except OSError as exc:
        message = json.dumps({"errno": exc.errno or errno.EINVAL, "where": where})
        try:
            os.write(report, message.encode())
        except OSError:
            pass
    except BaseException:  # noqa: BLE001 - nothing may escape a forked child
        pass
    os._exit(127)


# -- the guard -----------------------------------------------------------------------
def _end_tree(wakeup: _Wakeup, grace: float) -> None:
    """SIGTERM every descendant, wait ``grace``, then SIGKILL until none is left."""
    me = os.getpid()
    _send(_descendants(me), signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap()
        if not _descendants(me):
            break
        wakeup.wait(min(0.05, max(0.0, deadline - time.monotonic())))
    bound = time.monotonic() + 10.0
    while time.monotonic() < bound:
        _reap()
        left = _descendants(me)
        if not left:
            return
        _send(left, signal.SIGKILL)
        wakeup.wait(0.02)


def _exit_like(status: int | None) -> None:
    """End the guard the way its agent ended (exit code, or the same signal)."""
    if status is None:
        os._exit(128 + signal.SIGKILL)
    if os.WIFEXITED(status):
        os._exit(os.WEXITSTATUS(status))
    signum = os.WTERMSIG(status) if os.WIFSIGNALED(status) else signal.SIGKILL
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        signal.signal(signum, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
        os.kill(os.getpid(), signum)
        time.sleep(1)
    except (OSError, ValueError):
        pass
    os._exit(128 + signum)


def _guard(spec: dict, fds: dict[str, int], ready: int, watchdog: int) -> None:
    """The forked guard of one agent. Never returns."""
    os.setsid()
    _prctl(PR_SET_PDEATHSIG, GONE_SIGNAL)
    if os.getppid() != watchdog:  # the watchdog died before the parent-death signal was set
        os._exit(128 + signal.SIGKILL)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    wakeup = _Wakeup((signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGHUP,
                      GONE_SIGNAL))
    report_r, report_w = os.pipe()
    agent = os.fork()
    if agent == 0:
        os.close(report_r)
        _exec_agent(spec, fds, report_w)
    os.close(report_w)
    for name in ("stdin", "stdout", "stderr"):
        if fds.get(name) is not None:
            os.close(fds[name])
    failure = b""
    while True:
        try:
            chunk = os.read(report_r, 4096)
        except InterruptedError:
            continue
        if not chunk:
            break
        failure += chunk
    os.close(report_r)
    if failure:
        os.write(ready, failure)
        os.close(ready)
        os.waitpid(agent, 0)
        os._exit(127)
    os.write(ready, b"ok")
    os.close(ready)

    status: int | None = None
    linger_until: float | None = None
    while True:
        for pid, raw in _reap():
            if pid == agent:
                status = raw
        if GONE_SIGNAL in wakeup.received:
            _end_tree(wakeup, float(spec["orphan_grace"]))
            _exit_like(status)
        if status is not None:
            if not _descendants(os.getpid()):
                _reap()
                _exit_like(status)
            now = time.monotonic()
            if linger_until is None:
                linger_until = now + float(spec["linger"])
            if now >= linger_until:
                _end_tree(wakeup, float(spec["leftover_grace"]))
                _exit_like(status)
            wakeup.wait(min(0.1, linger_until - now))
        else:
            wakeup.wait(None)


# -- the watchdog ----------------------------------------------------------------------
class Watchdog:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.guards: dict[int, float] = {}  # guard pid → its orphan grace
        self.sweep_until = 0.0
        self.wakeup = _Wakeup((signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP))

    def reply(self, message: dict) -> None:
        try:
            self.sock.send(json.dumps(message).encode())
        except OSError:
            pass

    def spawn(self, spec: dict, fds: list[int]) -> None:
        names = ["stdout", "stderr", "alive"] + (["stdin"] if spec.get("stdin") else [])
        if len(fds) != len(names):
            for fd in fds:
                os.close(fd)
            self.reply({"op": "failed", "id": spec.get("id"), "errno": errno.EINVAL,
                        "where": "setup"})
            return
        given = dict(zip(names, fds, strict=True))
        ready_r, ready_w = os.pipe()
        try:
            guard = os.fork()
        except OSError as exc:
            for fd in (*fds, ready_r, ready_w):
                os.close(fd)
            self.reply({"op": "failed", "id": spec["id"], "errno": exc.errno, "where": "fork"})
            return
        if guard == 0:
            try:
                os.close(ready_r)
                self.sock.close()
                self.wakeup.close()
                _guard(spec, given, ready_w, os.getppid())
            except BaseException:  # noqa: BLE001 - nothing may escape a forked child
                pass
            os._exit(127)
        os.close(ready_w)
        for fd in fds:
            os.close(fd)
        answer = b""
        while True:
            try:
                chunk = os.read(ready_r, 4096)
            except InterruptedError:
                continue
            if not chunk:
                break
            answer += chunk
        os.close(ready_r)
        if answer == b"ok":
            self.guards[guard] = float(spec["orphan_grace"])
            self.reply({"op": "spawned", "id": spec["id"], "pid": guard})
            return
        try:
            failure = json.loads(answer.decode())
        except ValueError:
            failure = {"errno": errno.ECHILD, "where": "setup"}
        try:
            os.waitpid(guard, 0)
        except ChildProcessError:
            pass
        self.reply({"op": "failed", "id": spec["id"], **failure})

    def reap(self) -> None:
        for pid, status in _reap():
            if pid in self.guards:
                del self.guards[pid]
                self.reply({"op": "exit", "pid": pid, "status": status})
                if os.WIFSIGNALED(status):  # its tree may have been re-parented to us
                    self.sweep_until = time.monotonic() + 2.0
        if self.sweep_until:
            self.kill_adopted()

    def kill_adopted(self) -> None:
        """Children that are not guards were re-parented to us by a guard that died:
        nobody supervises them any more."""
        adopted = [pid for pid in _parents().get(os.getpid(), ()) if pid not in self.guards]
        _send(adopted, signal.SIGKILL)
        if not adopted and time.monotonic() > self.sweep_until:
            self.sweep_until = 0.0

    def shut_down(self) -> None:
        """The supervisor is gone: every guard ends its tree; wait for them (bounded)."""
        _send(list(self.guards), GONE_SIGNAL)
        grace = max(self.guards.values(), default=0.0)
        deadline = time.monotonic() + grace + GUARDS_BOUND
        while self.guards and time.monotonic() < deadline:
            self.reap()
            if self.guards:
                self.wakeup.wait(0.05)
        _send(list(self.guards), signal.SIGKILL)
        self.sweep_until = time.monotonic() + 1.0
        while time.monotonic() < self.sweep_until:
            _reap()
            self.kill_adopted()
            if not _has_children():
                break
            self.wakeup.wait(0.02)

    def serve(self) -> None:
        fd = self.sock.fileno()
        while True:
            timeout = 0.05 if self.sweep_until else None
            readable = self.wakeup.wait(timeout, fd)
            self.reap()
            if self.wakeup.received & {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}:
                self.shut_down()
                return
            if fd not in readable:
                continue
            try:
                data, fds, _flags, _addr = socket.recv_fds(self.sock, MAX_MESSAGE, MAX_FDS)
            except InterruptedError:
                continue
            except OSError:
                data, fds = b"", []
            if not data:
                for extra in fds:
                    os.close(extra)
                self.shut_down()
                return
            try:
                message = json.loads(data.decode())
            except ValueError:
                for extra in fds:
                    os.close(extra)
                continue
            if message.get("op") == "spawn":
                self.spawn(message, fds)
            else:
                for extra in fds:
                    os.close(extra)


def main(argv: list[str]) -> int:
    fd = int(argv[1])
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=fd)
    os.set_inheritable(fd, False)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    Watchdog(sock).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
