"""Stop requests: how ``git forge proc stop`` reaches a process owned by another process.

No PID files and no signals from the requester: it writes
``<handle>.stop.json`` (atomically) and the owning supervisor, which polls for it
several times a second, performs the stop itself and deletes the request.
"""

import contextlib
import math
from typing import NamedTuple

from git_forge.clock import precise_now
from git_forge.errors import StoreError
from git_forge.jsonfile import read_json, write_json
from git_forge.supervisor.lifecycle import ProcessError
from git_forge.supervisor.paths import FILE_MODE, ProcPaths

STOP_MODES = ("interrupt", "terminate", "kill")
#: How long a stop waits for a process to end before it escalates, unless a request or
#: the configuration (``supervisor.graceSeconds``) says otherwise.
DEFAULT_GRACE_SECONDS = 10.0


class StopRequest(NamedTuple):
    mode: str
    grace: float | None = None


def check_stop(mode: object, grace: object) -> None:
    """``invalid_arguments`` for a mode outside the three or a negative grace."""
    if mode not in STOP_MODES:
        raise ProcessError("invalid_arguments", f"stop mode must be one of {', '.join(STOP_MODES)}")
    if grace is not None and (
        isinstance(grace, bool) or not isinstance(grace, int | float)
        or not math.isfinite(grace) or grace < 0
    ):
        raise ProcessError(
            "invalid_arguments", "a grace period is a non-negative number of seconds"
        )


def write_stop_request(paths: ProcPaths, handle: str, request: StopRequest) -> None:
    check_stop(request.mode, request.grace)
    document = {"mode": request.mode, "grace": request.grace, "requested_at": precise_now()}
    write_json(paths.stop_request(handle), document, indent=None, mode=FILE_MODE)


def take_stop_request(paths: ProcPaths, handle: str) -> StopRequest | None:
    """The pending request for ``handle`` (removed from disk), or ``None``.

    A request that does not parse still means "stop": it becomes a terminate."""
    path = paths.stop_request(handle)
    if not path.exists():
        return None
    try:
        document = read_json(path)
    except StoreError:
        document = None
    discard_stop_request(paths, handle)
    if not isinstance(document, dict):
        return StopRequest("terminate")
    mode, grace = document.get("mode"), document.get("grace")
    try:
        check_stop(mode, grace)
    except ProcessError:
        return StopRequest("terminate")
    return StopRequest(str(mode), None if grace is None else float(grace))


def discard_stop_request(paths: ProcPaths, handle: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        paths.stop_request(handle).unlink()
