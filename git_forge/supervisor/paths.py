"""Where the supervisor keeps each process's files under ``{stateDir}/proc/``.

Every path is built from a validated handle, so an invalid handle can never name
a file (or a directory outside the root).
"""

from pathlib import Path
from typing import NamedTuple

from git_forge.layout import ALIVE_SUFFIX as ALIVE_SUFFIX  # see layout
from git_forge.layout import MANIFEST_SUFFIX
from git_forge.owned import make_dir
from git_forge.supervisor.handles import require_handle

SPOOL_SUFFIX = ".spool"
STOP_REQUEST_SUFFIX = ".stop.json"
#: Present while a process is to be kept whatever its run's age (``retention``).
KEEP_SUFFIX = ".keep"
#: Held by the live supervisor for its whole life: proof that an owner is alive.
OWNER_LOCK = "supervisor.lock"
#: The settled processes by run (``retention``): what restore need not read again.
SETTLED_FILE = "settled.json"
#: Files in the root are readable by their owner only: output may hold secrets.
FILE_MODE = 0o600
DIR_MODE = 0o700


class ProcPaths(NamedTuple):
    """The file layout of one process root."""

    root: Path

    def manifest(self, handle: str) -> Path:
        return self.root / f"{require_handle(handle)}{MANIFEST_SUFFIX}"

    def spool(self, handle: str) -> Path:
        return self.root / f"{require_handle(handle)}{SPOOL_SUFFIX}"

    def stop_request(self, handle: str) -> Path:
        return self.root / f"{require_handle(handle)}{STOP_REQUEST_SUFFIX}"

    def alive(self, handle: str) -> Path:
        return self.root / f"{require_handle(handle)}{ALIVE_SUFFIX}"

    def keep(self, handle: str) -> Path:
        return self.root / f"{require_handle(handle)}{KEEP_SUFFIX}"

    @property
    def owner_lock(self) -> Path:
        return self.root / OWNER_LOCK

    @property
    def settled(self) -> Path:
        return self.root / SETTLED_FILE

    def ensure_root(self) -> None:
        make_dir(self.root, DIR_MODE)
