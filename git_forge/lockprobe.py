"""Is a lock held right now, and by whom — without taking it and without writing.

Small on purpose (``os`` and ``fcntl`` only): the pre-launch check asks it on its
hot path. Taking and holding locks is ``locks.FileLock``'s job.
"""

from __future__ import annotations

import fcntl
import os


def lock_is_held(path: str | os.PathLike[str]) -> bool:
    """True when some process holds the lock on ``path`` right now.

    A probe that never writes: it asks for a *shared* lock for an instant,
    which any exclusive holder refuses. (portalocker's POSIX locker is
    ``fcntl.flock``, the primitive used here, so the two always agree.)"""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the probe's shared lock
    return False


def read_lock_holder(path: str | os.PathLike[str]) -> str:
    """The label the current (or last) holder wrote into a lock file, or ''."""
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""
