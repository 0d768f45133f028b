"""Where git-forge keeps its files, in one place.

``{backlogDir}`` holds the tracked ``backlog.json``; state files (ignored by git)
live in ``{backlogDir}/{stateDir}/`` — except when the backlog directory's own
name equals the state dir name (the default, ``.forge``): then the backlog
directory *is* the state directory.
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_BACKLOG_DIR = ".forge"
DEFAULT_STATE_DIR = ".forge"
#: The state dir feature-forge and rauf use; the default when a forge.config.json
#: is the configuration source.
RAUF_STATE_DIR = ".rauf"

BACKLOG_FILE = "backlog.json"
STATE_FILE = "state.json"
EVENTS_FILE = "events.ndjson"
DECISIONS_FILE = "forge-decisions.json"
LOOP_LOCK_FILE = "loop.lock"
LOOP_STOP_FILE = "loop.stop"
RECOVER_LOCK_FILE = "recover.lock"
PROC_DIR = "proc"
ARCHIVE_DIR = "archive"

#: Configuration files (read by ``config``; named here so that code on a hot path,
#: completion, can look for them without loading the configuration machinery).
REPO_CONFIG = ".forge.yaml"
FEATURE_FORGE_CONFIG = "forge.config.json"
USER_CONFIG = "config.yaml"


def state_directory(backlog_dir: Path, state_dir: str) -> Path:
    """The directory holding the state files of the backlog at ``backlog_dir``."""
    if Path(backlog_dir).resolve().name == state_dir:
        return Path(backlog_dir)
    return Path(backlog_dir) / state_dir


def backlog_file(backlog_dir: Path) -> Path:
    return Path(backlog_dir) / BACKLOG_FILE


def find_root(path: Path | str) -> Path:
    """The git work tree top containing ``path`` (the nearest directory with a
    ``.git`` file or directory), else ``path`` itself. Here rather than in
    ``workspace`` so that the pre-launch check's clean path can call it without
    importing the configuration machinery."""
    start = Path(path).resolve()
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return start
