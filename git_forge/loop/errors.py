"""Exit codes of ``git forge loop run`` (runner.md, settled details) and the errors
that carry them: every part of the loop refuses or fails through these."""

from __future__ import annotations

from typing import TYPE_CHECKING

from git_forge.errors import ForgeError

if TYPE_CHECKING:
    from git_forge.reconcile.preflight import Preflight

EXIT_DONE = 0
EXIT_ERROR = 1
EXIT_REFUSED = 2
EXIT_PAUSED = 3
EXIT_BLOCKED = 5
EXIT_STOPPED = 130


class LoopError(ForgeError):
    """The loop refused to start (exit 2) or failed (exit 1)."""


class LoopRefused(LoopError):
    """The pre-launch check said STOP; ``preflight`` carries what it found."""

    def __init__(self, message: str, preflight: Preflight) -> None:
        super().__init__(message, exit_code=EXIT_REFUSED)
        self.preflight = preflight
