"""Asking a running loop to stop, from another terminal, without PID files.

``git forge loop stop`` writes a request file into the state dir; the running
loop (which holds the loop lock) looks for it at least once a second and then
runs the supervisor's graceful shutdown. Liveness is the lock, never a PID.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from git_forge.atomic import atomic_write, lock_is_held
from git_forge.layout import LOOP_LOCK_FILE, LOOP_STOP_FILE


def loop_lock_path(state_dir: Path) -> Path:
    return Path(state_dir) / LOOP_LOCK_FILE


def stop_request_path(state_dir: Path) -> Path:
    return Path(state_dir) / LOOP_STOP_FILE


def loop_is_running(state_dir: Path) -> bool:
    return lock_is_held(loop_lock_path(state_dir))


def request_stop(state_dir: Path) -> bool:
    """Leave a stop request for the running loop; ``False`` when none runs."""
    if not loop_is_running(state_dir):
        return False
    atomic_write(stop_request_path(state_dir), b"stop\n")
    return True


def stop_requested(state_dir: Path) -> bool:
    return stop_request_path(state_dir).exists()


def clear_stop_request(state_dir: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        stop_request_path(state_dir).unlink()
