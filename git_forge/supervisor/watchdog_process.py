"""The watchdog process: no agent outlives the supervisor that started it.

This file runs as its own small program (``python -I -S watchdog_process.py FD
PACKAGE_PARENT``), one per supervisor; it imports only modules built into the
interpreter's standard library (JSON for the messages), ``ctypes`` and
``git_forge.lockprobe`` (which imports nothing else of git-forge). The shape:

    supervisor ──socket── watchdog (child subreaper)
                            ├── agent 1 (session leader) ── its children …
                            └── agent 2 …  ── a daemon that escaped by setsid is
                                              re-parented here, not to init

* The supervisor asks the watchdog to start each agent over a ``SOCK_SEQPACKET``
  socket, passing the agent's pipes and its liveness-lock descriptor
  (``SCM_RIGHTS``), then ``go`` once it closed its own copies: the agent starts
  only when nothing but the watchdog holds its lock, so a lock still held when
  it exits always means a member of its tree. The watchdog starts it with ``posix_spawn`` in a new
  session (so the supervisor's group signals reach the agent's whole group, as
  before) — a spawn, not a fork of this interpreter, so a start costs about
  what a direct ``Popen`` costs. Exec errors come back before ``start`` returns.
* The watchdog is a child subreaper: a descendant whose parent dies — a
  double-forked ``setsid`` daemon included — is re-parented to it, so every
  process an agent ever started stays below the watchdog.
* When an agent exits, what is left of its tree (its process group and
  session, and whatever still holds its liveness lock) gets ``linger`` seconds
  to finish; then it is terminated (SIGTERM, ``leftover_grace``, SIGKILL) and
  the agent's exit status goes to the supervisor — so the supervisor's "exited"
  means the whole tree is gone.
* When the supervisor dies by any means, SIGKILL included, the kernel closes its
  end of the socket: the watchdog sees end-of-file and ends every process below
  it (SIGTERM, ``orphan_grace``, SIGKILL), then exits.

Each agent inherits its liveness-lock descriptor (``proc/<handle>.alive``,
flock-ed by the supervisor before the start); the watchdog keeps no copy, so
the lock is held exactly as long as some member of the tree lives. If the
watchdog itself is killed, its agents are orphans: while the supervisor lives,
each one's entry ends its tree at once; after, that lock is how a later run
finds them.
"""

from __future__ import annotations

import ctypes
import errno
import gc
import json
import os
import select
import signal
import socket
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

PR_SET_CHILD_SUBREAPER = 36
MAX_MESSAGE = 1 << 20
MAX_FDS = 8
#: A descriptor's size in an SCM_RIGHTS payload (a C int).
_FD_BYTES = 4
#: How long ending a tree may keep SIGKILLing stragglers that keep forking.
KILL_BOUND = 10.0
#: Signals an agent starts with at their defaults (Python ignores SIGPIPE and
#: SIGXFSZ; the watchdog handles the rest).
#: ``git_forge.lockprobe.lock_is_held``, imported by ``main`` once the package is on the path.
lock_is_held: Callable[[str], bool]

_DEFAULT_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD, signal.SIGINT,
                    signal.SIGTERM, signal.SIGHUP)


def _set_child_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def _receive(sock: socket.socket) -> tuple[bytes, list[int]]:
    """One message and the descriptors passed with it: ``socket.recv_fds`` on the
    C module (see the module's docstring for why)."""
    data, ancillary, _flags, _address = sock.recvmsg(MAX_MESSAGE,
                                                     socket.CMSG_LEN(MAX_FDS * _FD_BYTES))
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            whole = len(payload) - len(payload) % _FD_BYTES
            fds.extend(memoryview(payload[:whole]).cast("i"))
    return data, fds


# -- the process table ---------------------------------------------------------------
def _table() -> dict[int, tuple[int, int, int]]:
    """pid → (ppid, pgid, sid) of every live process, from /proc (zombies left out)."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 3 and fields[0] != b"Z":
            table[int(name)] = (int(fields[1]), int(fields[2]), int(fields[3]))
    return table


def _below(table: dict[int, tuple[int, int, int]], roots: set[int]) -> set[int]:
    """``roots`` and every process descending from one of them."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _pgid, _sid) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    queue = list(roots)
    while queue:
        pid = queue.pop()
        if pid not in found:
            found.add(pid)
            queue.extend(children.get(pid, ()))
    return found


def _holds(pid: int, inode: tuple[int, int] | None) -> bool:
    """Does ``pid`` hold a descriptor on the file ``inode`` (``(st_dev, st_ino)``)?"""
    if inode is None:
        return False
    try:
        descriptors = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in descriptors:
        try:
            seen = os.stat(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if (seen.st_dev, seen.st_ino) == inode:
            return True
    return False


#: Set in every agent's environment (descendants inherit it): which tree a process
#: re-parented to the watchdog came from, when it holds no liveness descriptor.
TREE_VARIABLE = b"FORGE_SUPERVISOR_HANDLE="


def _tree_marker(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environ = handle.read()
    except OSError:
        return None
    for entry in environ.split(b"\0"):
        if entry.startswith(TREE_VARIABLE):
            return entry[len(TREE_VARIABLE):].decode("utf-8", "replace")
    return None


def _children(me: int) -> set[int]:
    """This process's direct children (one read of /proc, else a scan)."""
    try:
        with open(f"/proc/{me}/task/{me}/children", "rb") as handle:
            return {int(pid) for pid in handle.read().split()}
    except OSError:
        return {pid for pid, (ppid, _pgid, _sid) in _table().items() if ppid == me}


def _send(pids: set[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except OSError:
            pass


# -- one agent's tree ----------------------------------------------------------------
class Tree:
    """An agent the watchdog started, and how to tell what is left of it."""

    def __init__(self, pid: int, spec: dict[str, Any], inode: tuple[int, int] | None) -> None:
        self.pid = pid
        self.marker = str(spec.get("marker") or "")
        self.alive_path = str(spec["alive_path"])
        self.inode = inode
        self.linger = float(spec["linger"])
        self.leftover_grace = float(spec["leftover_grace"])
        self.orphan_grace = float(spec["orphan_grace"])
        self.status: int | None = None
        self.linger_until: float | None = None
        self.term_sent_at: float | None = None

    def has_leftovers(self, adopted: set[int]) -> bool:
        """Cheap: a member left in the agent's process group, one still holding its
        liveness lock, or an adopted process that came from this tree."""
        try:
            os.killpg(self.pid, 0)
            return True
        except ProcessLookupError:
            pass
        except PermissionError:
            return True
        return lock_is_held(self.alive_path) or bool(adopted)

    def members(self, table: dict[int, tuple[int, int, int]], adopted: set[int],
                me: int) -> set[int]:
        """What is left of the tree: its group and session, the adopted processes
        that came from it, and everything below them."""
        roots = {pid for pid, (_ppid, pgid, sid) in table.items()
                 if pgid == self.pid or sid == self.pid}
        return _below(table, roots | adopted) - {me}

    def owns(self, pid: int) -> bool:
        """Did the adopted ``pid`` come from this tree? (Its liveness descriptor, or
        the tree variable every agent's environment carries.)"""
        return _holds(pid, self.inode) or (bool(self.marker) and _tree_marker(pid) == self.marker)


# -- the watchdog ----------------------------------------------------------------------
class Watchdog:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.me = os.getpid()
        self.trees: dict[int, Tree] = {}
        #: Spawn requests received, by id, waiting for their ``go``.
        self.received: dict[object, tuple[dict[str, Any], list[int]]] = {}
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self.write_fd, False)
        self.stop_requested = False
        signal.signal(signal.SIGCHLD, lambda *_: None)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, self._request_stop)
        signal.set_wakeup_fd(self.write_fd, warn_on_full_buffer=False)

    def _request_stop(self, *_: object) -> None:
        self.stop_requested = True

    def reply(self, message: dict[str, Any]) -> None:
        try:
            self.sock.send(json.dumps(message).encode())
        except OSError:
            pass

    def wait(self, timeout: float | None) -> bool:
        """Sleep until a signal arrives, the socket is readable, or ``timeout``;
        True when the socket is readable."""
        poller = select.poll()
        poller.register(self.read_fd, select.POLLIN)
        poller.register(self.sock.fileno(), select.POLLIN | select.POLLHUP | select.POLLERR)
        try:
            ready = poller.poll(None if timeout is None else max(0, int(timeout * 1000) + 1))
        except InterruptedError:
            ready = []
        fds = {fd for fd, _ in ready}
        if self.read_fd in fds:
            try:
                while os.read(self.read_fd, 512):
                    pass
            except BlockingIOError:
                pass
        return self.sock.fileno() in fds

    # -- starting ------------------------------------------------------------------
    def spawn(self, spec: dict[str, Any], fds: list[int]) -> None:
        names = ["stdout", "stderr", "alive"] + (["stdin"] if spec.get("stdin") else [])
        if len(fds) != len(names):
            self.reply({"op": "failed", "id": spec.get("id"), "errno": errno.EINVAL,
                        "where": "setup"})
            return
        given = dict(zip(names, fds, strict=True))
        try:
            alive = os.fstat(given["alive"])
            inode: tuple[int, int] | None = (alive.st_dev, alive.st_ino)
        except OSError:
            inode = None
        where = "cwd"
        try:
            os.chdir(spec["cwd"])
            where = "exec"
            pid = self._posix_spawn(spec, given)
        except OSError as exc:
            self.reply({"op": "failed", "id": spec["id"], "errno": exc.errno or errno.EINVAL,
                        "where": where})
            return
        except (ValueError, TypeError):  # a NUL or a non-string: this start fails, not us
            self.reply({"op": "failed", "id": spec["id"], "errno": errno.EINVAL,
                        "where": "arguments"})
            return
        finally:
            os.chdir("/")
        self.trees[pid] = Tree(pid, spec, inode)
        self.reply({"op": "spawned", "id": spec["id"], "pid": pid})

    @staticmethod
    def _posix_spawn(spec: dict[str, Any], fds: dict[str, int]) -> int:
        """The agent in a new session with its streams on 0, 1, 2, the liveness
        descriptor inherited, default signals. ``argv[0]`` is looked for the way
        ``Popen`` looks: as given with a slash (from the cwd), else along the
        child's PATH — the first error that is not "not there" wins."""
        stdin = fds.get("stdin")
        devnull = None
        if stdin is None:
            stdin = devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        os.set_inheritable(fds["alive"], True)
        actions = [(os.POSIX_SPAWN_DUP2, stdin, 0), (os.POSIX_SPAWN_DUP2, fds["stdout"], 1),
                   (os.POSIX_SPAWN_DUP2, fds["stderr"], 2)]
        argv, env = spec["argv"], spec["env"]
        command = argv[0]
        candidates = ([command] if "/" in command else
                      [os.path.join(directory, command)
                       for directory in os.get_exec_path(env)])
        first_error: OSError | None = None
        last_error: OSError | None = None
        try:
            for path in candidates:
                try:
                    return os.posix_spawn(path, argv, env, file_actions=actions, setsid=True,
                                          setsigdef=_DEFAULT_SIGNALS, setsigmask=())
                except OSError as exc:
                    last_error = exc
                    if exc.errno not in (errno.ENOENT, errno.ENOTDIR) and first_error is None:
                        first_error = exc
        finally:
            if devnull is not None:
                os.close(devnull)
        raise first_error or last_error or OSError(errno.ENOENT, os.strerror(errno.ENOENT))

    # -- ending --------------------------------------------------------------------
    def reap(self) -> None:
        """Collect every exited child; an agent's tree then lingers or is done."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            tree = self.trees.get(pid)
            if tree is not None and tree.status is None:
                tree.status = status
                tree.linger_until = time.monotonic() + tree.linger

    def adopted(self) -> dict[int, set[int]]:
        """Processes re-parented to the watchdog, by the agent tree they came from.
        One the evidence does not attribute belongs to the only tree still here."""
        found = _children(self.me) - set(self.trees)
        by_tree: dict[int, set[int]] = {pid: set() for pid in self.trees}
        for pid in found:
            owner = next((tree.pid for tree in self.trees.values() if tree.owns(pid)), None)
            if owner is None and len(self.trees) == 1:
                owner = next(iter(self.trees))
            if owner is not None:
                by_tree[owner].add(pid)
        return by_tree

    def settle(self) -> float | None:
        """Advance every exited agent's tree; report the ones that are gone. Returns
        how soon to look again (``None``: nothing to wait for)."""
        now = time.monotonic()
        soonest: float | None = None
        table: dict[int, tuple[int, int, int]] | None = None
        exited = [tree for tree in self.trees.values() if tree.status is not None]
        adopted = self.adopted() if exited else {}
        for tree in exited:
            mine = adopted.get(tree.pid, set())
            if not tree.has_leftovers(mine):
                del self.trees[tree.pid]
                self.reply({"op": "exit", "pid": tree.pid, "status": tree.status})
                continue
            assert tree.linger_until is not None
            if now < tree.linger_until:
                due = tree.linger_until - now
            else:
                if table is None:
                    table = _table()
                members = tree.members(table, mine, self.me)
                if tree.term_sent_at is None:
                    tree.term_sent_at = now
                    _send(members, signal.SIGTERM)
                elif now >= tree.term_sent_at + tree.leftover_grace:
                    _send(members, signal.SIGKILL)
                due = 0.02
            soonest = due if soonest is None else min(soonest, due)
        return soonest

    def end_everything(self) -> None:
        """The supervisor is gone: end every process below the watchdog."""
        for _spec, fds in self.received.values():
            self._close_received(fds)
        self.received.clear()
        grace = max((tree.orphan_grace for tree in self.trees.values()), default=0.0)
        below = _below(_table(), {self.me}) - {self.me}
        _send(below, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            self.reap()
            if not _below(_table(), {self.me}) - {self.me}:
                return
            self.wait(0.05)
        bound = time.monotonic() + KILL_BOUND
        while time.monotonic() < bound:
            self.reap()
            below = _below(_table(), {self.me}) - {self.me}
            if not below:
                return
            _send(below, signal.SIGKILL)
            self.wait(0.02)

    def serve(self) -> None:
        while True:
            self.reap()
            soonest = self.settle()
            if self.stop_requested:
                self.end_everything()
                return
            if not self.wait(soonest):
                continue
            try:
                data, fds = _receive(self.sock)
            except InterruptedError:
                continue
            except OSError:
                data, fds = b"", []
            for received in fds:
                os.set_inheritable(received, False)  # an agent gets them as 0, 1, 2 only
            if not data:
                self._close_received(fds)
                self.end_everything()
                return
            try:
                message = json.loads(data)
            except (EOFError, ValueError, TypeError):
                message = {}
            op = message.get("op") if isinstance(message, dict) else None
            if op == "spawn":
                self.received[message.get("id")] = (message, fds)
                continue
            self._close_received(fds)
            if op == "go" and message.get("id") in self.received:
                spec, given = self.received.pop(message.get("id"))
                try:
                    self.spawn(spec, given)
                finally:
                    self._close_received(given)

    @staticmethod
    def _close_received(fds: list[int]) -> None:
        for received in fds:
            os.close(received)  # the agent has its copies; the lock is not ours


def main(argv: list[str]) -> int:
    fd = int(argv[1])
    sys.path.insert(0, argv[2])
    global lock_is_held
    from git_forge.lockprobe import lock_is_held  # importable once the line above has run
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, 0, fd)
    os.set_inheritable(fd, False)
    os.chdir("/")
    _set_child_subreaper()
    gc.disable()  # a small, short-lived heap; nothing here builds reference cycles
    Watchdog(sock).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
