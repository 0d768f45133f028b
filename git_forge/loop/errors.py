"""The errors that carry ``git forge loop run``'s exit codes (``exit_codes.LOOP_*``):
every part of the loop refuses or fails through these."""

from __future__ import annotations

from typing import TYPE_CHECKING

from git_forge.errors import ForgeError
from git_forge.exit_codes import LOOP_REFUSED, LOOP_STOPPED

if TYPE_CHECKING:
    from git_forge.reconcile.preflight import Preflight



class LoopError(ForgeError):
    """The loop refused to start (exit 2) or failed (exit 1)."""


class LoopRefused(LoopError):
    """The pre-launch check said STOP; ``preflight`` carries what it found."""

    def __init__(self, message: str, preflight: Preflight) -> None:
        super().__init__(message, exit_code=LOOP_REFUSED)
        self.preflight = preflight


class BranchLeft(LoopError):
    """The main checkout is no longer on the branch the run started on: nothing is
    committed; the run stops (``what`` says where the checkout went)."""

    def __init__(self, what: str) -> None:
        super().__init__(f"the main checkout was switched {what}", exit_code=LOOP_STOPPED)
        self.what = what
