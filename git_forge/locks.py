"""Taking and holding locks: the sidecar lock of a file about to be replaced, and
long-lived locks (the loop lock).

``locked`` takes an exclusive lock on a *sidecar* ``<file>.lock``, never on
the file being replaced (``os.replace`` swaps the inode out from under such a
lock and writers lose records). The holder writes who it is into the lock file
so a waiter that times out can say who holds it. Asking whether a lock is held,
without taking it, is ``lockprobe``'s job.

The locks are portalocker's — on POSIX, portalocker's default locker is
``fcntl.flock`` — taken with ``fcntl.flock`` itself: the same lock, so a tool
locking the same file through portalocker (feature-forge, a runner) and
git-forge exclude each other (``tests/test_atomic.py``), without importing
portalocker, which costs more than most commands that lock (ARCHITECTURE.md,
"What is measured, and where").
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from git_forge.clock import wire_now
from git_forge.errors import StoreError, os_error_text
from git_forge.lockprobe import read_lock_holder
from git_forge.owned import open_own

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: How long a read-modify-write waits for a sidecar lock before naming the holder.
DEFAULT_LOCK_TIMEOUT = 30.0


def sidecar_lock_path(path: Path) -> Path:
    """``backlog.json`` → ``backlog.json.lock``: the stable file that is locked."""
    return path.with_name(path.name + ".lock")


_LABEL_PREFIX: tuple[int, str] | None = None


def host_name() -> str:
    """This machine's name, as ``socket.gethostname()`` gives it (on POSIX both are
    the kernel's node name)."""
    return os.uname().nodename


def _holder_label() -> str:
    """Who holds a lock, for the message a timed-out waiter prints. The part that
    cannot change while this process lives is worked out once per process."""
    global _LABEL_PREFIX
    pid = os.getpid()
    if _LABEL_PREFIX is None or _LABEL_PREFIX[0] != pid:  # a forked child is someone else
        command = " ".join(Path(sys.argv[0]).name.split() + sys.argv[1:3]) if sys.argv else "?"
        _LABEL_PREFIX = (pid, f"pid {pid} on {host_name()} ({command}) since ")
    return _LABEL_PREFIX[1] + wire_now()


def _write_label(fd: int, label: bytes, previous: bytes) -> None:
    """Put ``label`` in the lock file; truncated only when it is shorter than what
    the file held (a truncate costs a journal write; labels are mostly the same
    length)."""
    os.pwrite(fd, label, 0)
    if len(label) < len(previous):
        os.ftruncate(fd, len(label))


def _read_all(fd: int) -> bytes:
    """The lock file's bytes (a label: small), read from the start."""
    chunks = []
    offset = 0
    while chunk := os.pread(fd, 4096, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _still_linked(fd: int, path: Path) -> bool:
    """Whether the file open as ``fd`` is still the one at ``path``."""
    try:
        here = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (here.st_dev, here.st_ino) == (opened.st_dev, opened.st_ino)


class FileLock:
    """An exclusive advisory lock on exactly ``path`` (created if needed).

    Used directly for long-lived locks (the loop lock) and, through ``locked``,
    on the sidecar of a file that is about to be replaced.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._handle: Any = None
        self._previous_label = b""

    @property
    def held(self) -> bool:
        return self._handle is not None

    def try_acquire(self, *, holder: str | None = None, patience: float = 0.0) -> bool:
        """Take the lock if it is free. ``patience`` retries for that many seconds:
        a ``lock_is_held`` probe holds a shared lock for an instant, and a caller
        deciding "someone else is running" should not mistake it for a holder."""
        deadline = time.monotonic() + patience
        while not self._try_once(holder):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.002)
        return True

    def _try_once(self, holder: str | None) -> bool:
        if self._handle is not None:
            return True
        try:  # never through a link: the label would be written where it points
            fd = open_own(self.path, os.O_RDWR | os.O_CREAT)
        except OSError as exc:
            raise StoreError(f"cannot lock {self.path}: {os_error_text(exc)}") from exc
        handle = os.fdopen(fd, "r+b", buffering=0)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            handle.close()
            if exc.errno in (errno.EAGAIN, errno.EACCES):  # someone holds it
                return False
            raise StoreError(f"cannot lock {self.path}: {os_error_text(exc)}") from exc
        except BaseException:
            handle.close()
            raise
        if not _still_linked(fd, self.path):  # its holder removed it (release(remove=True))
            handle.close()
            return self._try_once(holder)
        try:  # the label only informs a waiter: a full disk must not cost the lock
            self._previous_label = _read_all(fd)
            _write_label(fd, (holder or _holder_label()).encode("utf-8"), self._previous_label)
        except OSError:
            pass
        self._handle = handle
        return True

    def acquire(self, *, timeout: float = DEFAULT_LOCK_TIMEOUT, holder: str | None = None) -> None:
        """Wait up to ``timeout`` seconds; then fail naming who holds the lock."""
        deadline = time.monotonic() + timeout
        delay = 0.002
        while not self._try_once(holder):
            if time.monotonic() >= deadline:
                raise StoreError(
                    f"{self.path} is held by {read_lock_holder(self.path) or 'another process'}"
                    f" (waited {timeout:g}s)"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def release(self, *, restore_label: bool = False, remove: bool = False) -> None:
        """Unlock. ``restore_label`` puts back the label the file held before this
        holder wrote its own — for a holder that refused and changed nothing, so
        that not even the lock file's bytes differ afterwards. ``remove`` deletes the
        lock file, still held, for a holder that refused and created it: a waiter
        that then gets the removed file's lock sees it is gone and locks the path
        afresh (``_still_linked``), so no two holders ever hold the one path."""
        if self._handle is None:
            return
        handle, self._handle = self._handle, None
        try:
            if remove:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)
            elif restore_label:
                with contextlib.suppress(OSError):
                    fd = handle.fileno()
                    _write_label(fd, self._previous_label, _read_all(fd))
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        finally:
            handle.close()

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@contextlib.contextmanager
def locked(path: Path | str, *, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the sidecar lock of ``path`` for a whole read-modify-write cycle. A cycle
    that raises — a refusal, most often — puts back the label the lock file held,
    so that a refused command leaves even the lock file's bytes as they were."""
    lock = FileLock(sidecar_lock_path(Path(path)))
    lock.acquire(timeout=timeout)
    try:
        yield
    except BaseException:
        lock.release(restore_label=True)
        raise
    lock.release()
