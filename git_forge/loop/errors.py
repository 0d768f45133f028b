"""The errors that carry ``git forge loop run``'s exit codes (``exit_codes.LOOP_*``):
every part of the loop refuses or fails through these."""

from __future__ import annotations

from typing import TYPE_CHECKING

from git_forge.errors import ForgeError
from git_forge.exit_codes import LOOP_REFUSED

if TYPE_CHECKING:
    from git_forge.reconcile.preflight import Preflight



class LoopError(ForgeError):
    """The loop refused to start (exit 2) or failed (exit 1)."""


class LoopRefused(LoopError):
    """The pre-launch check said STOP; ``preflight`` carries what it found."""

    def __init__(self, message: str, preflight: Preflight) -> None:
        super().__init__(message, exit_code=LOOP_REFUSED)
        self.preflight = preflight
