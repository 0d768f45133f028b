"""The supervisor's settings, from code or from the ``supervisor`` block of a config file."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from git_forge.supervisor.lifecycle import ProcessError
from git_forge.supervisor.requests import DEFAULT_GRACE_SECONDS
from git_forge.supervisor.spool import DEFAULT_CEILING, MAX_SEGMENT_BYTES

MiB = 1024 * 1024
ORPHAN_GRACE_CEILING = 3.0
#: Each process's in-memory output window unless configured.
DEFAULT_WINDOW_BYTES = 4 * MiB

#: Config-file keys (camelCase, like every git-forge config key) → field names.
SETTING_KEYS: dict[str, str] = {
    "maxProcesses": "max_processes",
    "maxProcessSpoolBytes": "max_spool_bytes",
    "spoolSegmentBytes": "spool_segment_bytes",
    "memoryBufferBytes": "memory_buffer_bytes",
    "memoryBudgetBytes": "memory_budget_bytes",
    "spoolBudgetBytes": "spool_budget_bytes",
    "graceSeconds": "grace_seconds",
    "flushIntervalSeconds": "flush_interval_seconds",
    "drainTimeoutSeconds": "drain_timeout_seconds",
    "stopPollSeconds": "stop_poll_seconds",
    "readChunkBytes": "read_chunk_bytes",
    "keepRuns": "keep_runs",
    "watchdog": "watchdog",
}


@dataclass(frozen=True)
class SupervisorConfig:
    """Limits and timings. ``None`` budgets are derived from the per-process sizes.

    ``memory_buffer_bytes`` is each process's in-memory output window: recent
    output is read from it, older output from the spool's segment files (the
    source of truth). Its default is small (``DEFAULT_WINDOW_BYTES``, or less when
    the whole retained spool fits in less), so that many agents at once cost
    little memory; under a flood the window's bytes go to the page cache each
    time it fills, and fsyncs stay on the flush timer. Each process's two drains
    add a buffer of ``read_chunk_bytes`` each.

    ``keep_runs``: ``prune`` keeps the processes of this many most recent runs
    (and every process not settled yet, see ``retention``).
    """

    max_processes: int = 4
    max_spool_bytes: int = DEFAULT_CEILING
    spool_segment_bytes: int = MAX_SEGMENT_BYTES
    memory_buffer_bytes: int | None = None
    memory_budget_bytes: int | None = None
    spool_budget_bytes: int | None = None
    grace_seconds: float = DEFAULT_GRACE_SECONDS
    flush_interval_seconds: float = 1.0
    drain_timeout_seconds: float = 2.0
    stop_poll_seconds: float = 0.25
    read_chunk_bytes: int = MiB
    keep_runs: int = 10
    #: Start every process under the watchdog, so that none outlives this
    #: supervisor's process (``watchdog_process``). Off only to measure its cost.
    watchdog: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.watchdog, bool):
            raise ProcessError("invalid_settings", "watchdog must be true or false")
        for item in fields(self):
            if item.name == "watchdog":
                continue
            value = getattr(self, item.name)
            if value is None and item.default is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ProcessError("invalid_settings", f"{item.name} must be a number")
            if str(item.type).startswith("int") and not isinstance(value, int):
                raise ProcessError("invalid_settings", f"{item.name} must be an integer")
            if value <= 0:
                raise ProcessError("invalid_settings", f"{item.name} must be positive")
        if self.spool_segment_bytes > MAX_SEGMENT_BYTES:
            raise ProcessError(
                "invalid_settings", f"segments are at most {MAX_SEGMENT_BYTES} bytes"
            )

    @property
    def orphan_grace_seconds(self) -> float:
        """How long a tree whose supervisor died gets between SIGTERM and SIGKILL:
        nobody waits for it any more, so at most a few seconds."""
        return min(self.grace_seconds, ORPHAN_GRACE_CEILING)

    @property
    def window_bytes(self) -> int:
        """Each process's in-memory window: ``DEFAULT_WINDOW_BYTES``, or every
        retained byte plus one read when that is less."""
        return self.memory_buffer_bytes or min(
            DEFAULT_WINDOW_BYTES,
            self.max_spool_bytes + self.spool_segment_bytes + self.read_chunk_bytes,
        )

    @property
    def spool_reservation_bytes(self) -> int:
        """The most one process's spool can hold: the ceiling plus one segment."""
        return self.max_spool_bytes + self.spool_segment_bytes

    @property
    def memory_budget(self) -> int:
        return self.memory_budget_bytes or self.max_processes * self.window_bytes

    @property
    def spool_budget(self) -> int:
        return self.spool_budget_bytes or self.max_processes * self.spool_reservation_bytes

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | None) -> SupervisorConfig:
        """Build from a config block such as ``{"maxProcessSpoolBytes": 1048576}``."""
        if settings is None:
            return cls()
        if not isinstance(settings, Mapping):
            raise ProcessError("invalid_settings", "the supervisor settings must be a mapping")
        unknown = sorted(set(settings) - set(SETTING_KEYS))
        if unknown:
            raise ProcessError("invalid_settings", f"unknown supervisor setting {unknown[0]!r}")
        return cls(**{SETTING_KEYS[key]: value for key, value in settings.items()})
