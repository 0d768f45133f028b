"""Liveness you can prove: a lock that only a live member of a process tree holds.

Before a process starts, the supervisor creates ``proc/<handle>.alive`` and
takes an exclusive ``flock`` on it; the locked descriptor is inherited by the
child (through the watchdog, which keeps no copy) and by every descendant that does not
close it, and the supervisor closes its own copy. The lock is therefore held
exactly while some member of the tree is alive, whatever happened to the
supervisor. Nothing here reads a PID from a file: a probe asks the kernel
whether the lock is held, and an orphaned tree is found through the processes
that hold the locked file open (``/proc/<pid>/fd``), confirmed against the
kernel's lock table (``/proc/locks``).
"""

import contextlib
import fcntl
import os
import signal
from pathlib import Path
from typing import NamedTuple

from git_forge.errors import os_error_text
from git_forge.lockprobe import lock_is_held
from git_forge.supervisor.handles import is_valid_handle
from git_forge.supervisor.lifecycle import ProcessError
from git_forge.supervisor.paths import ALIVE_SUFFIX, FILE_MODE, ProcPaths


def hold(path: Path) -> int:
    """Create ``path`` and lock it; the caller passes the descriptor on and closes it."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    except OSError as exc:
        raise ProcessError("process_setup_failed",
                           f"cannot create {path.name}: {os_error_text(exc)}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        raise ProcessError("process_setup_failed",
                           f"cannot lock {path.name}: {os_error_text(exc)}") from exc
    return fd


def tree_alive(path: Path) -> bool | None:
    """True while a member of the tree lives; False when it is provably gone;
    None when there is no liveness file (the process never started, or predates it)."""
    if not path.exists():
        return None
    return lock_is_held(path)


def forget(path: Path) -> None:
    """Remove a liveness file whose tree is gone (a held one is left alone: removing
    it would hide a live tree from every later probe).

    Removed only on proof: a shared lock taken on the file itself, held while it
    is unlinked. A file that cannot be opened or locked for another reason than a
    holder (out of descriptors, say) is kept — ``lock_is_held`` reads those as
    "not held", which is right for a probe and wrong for a deletion."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:  # held by a member of the tree, or no way to tell: kept
        os.close(fd)
        return
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    finally:
        os.close(fd)


class Orphan(NamedTuple):
    """A supervised tree still alive with no live supervisor owning its root."""

    handle: str
    path: Path


def orphans(paths: ProcPaths) -> list[Orphan]:
    """Every tree under ``paths.root`` that is alive while no supervisor owns the root.
    Cheap: one probe per liveness file, and only when the owner is gone."""
    try:
        names = sorted(os.listdir(paths.root))
    except OSError:
        return []
    candidates = [name[: -len(ALIVE_SUFFIX)] for name in names if name.endswith(ALIVE_SUFFIX)]
    if not candidates or lock_is_held(paths.owner_lock):
        return []
    found = []
    for handle in candidates:
        if is_valid_handle(handle) and tree_alive(paths.alive(handle)):
            found.append(Orphan(handle, paths.alive(handle)))
    return found


def _locked_inodes() -> set[tuple[int, int, int]] | None:
    """``(major, minor, inode)`` of every file the kernel's lock table lists."""
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as table:
            lines = table.read().splitlines()
    except OSError:
        return None
    found = set()
    for line in lines:
        parts = line.split()
        if "->" in parts:  # a waiter, not a holder
            continue
        for part in parts:
            pieces = part.split(":")
            if len(pieces) == 3:
                with contextlib.suppress(ValueError):
                    found.add((int(pieces[0], 16), int(pieces[1], 16), int(pieces[2])))
    return found


def holders(path: Path) -> list[int]:
    """The processes holding ``path`` open (its lock is on their shared descriptor).

    Found from the kernel's tables, never from a file of ours: the inode must be
    in ``/proc/locks`` (when it is readable), and each holder has a descriptor on
    that inode in ``/proc/<pid>/fd``."""
    try:
        target = os.stat(path)
    except OSError:
        return []
    key = (os.major(target.st_dev), os.minor(target.st_dev), target.st_ino)
    locked = _locked_inodes()
    if locked is not None and key not in locked:
        return []
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        fd_dir = f"/proc/{name}/fd"
        try:
            descriptors = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in descriptors:
            try:
                seen = os.stat(f"{fd_dir}/{fd}")
            except OSError:
                continue
            if (seen.st_dev, seen.st_ino) == (target.st_dev, target.st_ino):
                found.append(int(name))
                break
    return found


def end_orphan(path: Path, grace: float) -> int:
    """Terminate every process of the orphaned tree behind ``path`` (SIGTERM,
    ``grace``, SIGKILL) and return how many there were. Descendants of the
    holders are included, captured before each signal."""
    # common-case boundary: psutil only to end an orphaned tree
    import psutil

    from git_forge.supervisor.process import wait_gone

    ended: set[tuple[int, float]] = set()
    for signum in (signal.SIGTERM, signal.SIGKILL):
        for _round in range(3):
            victims: dict[int, psutil.Process] = {}
            for pid in holders(path):
                with contextlib.suppress(psutil.Error):
                    holder = psutil.Process(pid)
                    victims[pid] = holder
                    for child in holder.children(recursive=True):
                        victims[child.pid] = child
            if not victims:
                return len(ended)
            for process in victims.values():
                with contextlib.suppress(psutil.Error):
                    ended.add((process.pid, process.create_time()))
                    process.send_signal(signum)
            left = wait_gone(list(victims.values()), grace if signum == signal.SIGTERM else 5.0)
            if not left and not holders(path):
                forget(path)
                return len(ended)
            if signum == signal.SIGTERM:
                break
    forget(path)
    return len(ended)
