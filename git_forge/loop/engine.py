"""The embedded loop: pick a ready item, run the agent on it, act on its signal.

The loop is three parts, and this module is the name callers import it by:
``session`` (one run: the refusals before it, the locks, the journal, the
supervisor and its restore, the iterations, the end), ``iteration`` (one agent
start, until an ``AgentResult``) and ``outcomes`` (what that result means for the
item: done, blocked, needs-human, deferred, retry). ``options`` builds what a
run is asked to do, ``summary`` how it ends, ``errors`` the errors that carry its
exit codes (``exit_codes.LOOP_*``).

Rendering is not done here: the caller passes a ``Progress`` whose hooks it
implements (a live line on a terminal, plain lines, or the journal as NDJSON).
"""

from __future__ import annotations

from git_forge.loop.errors import LoopError, LoopRefused
from git_forge.loop.options import LoopOptions
from git_forge.loop.progress import NullProgress, Progress
from git_forge.loop.session import run_loop
from git_forge.loop.summary import LoopResult

__all__ = [
    "LoopError", "LoopOptions", "LoopRefused", "LoopResult", "NullProgress", "Progress",
    "run_loop",
]
