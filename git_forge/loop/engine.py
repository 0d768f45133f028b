"""The embedded loop: pick a ready item, run the agent on it, act on its signal.

This module is the name callers import the loop by. A run is ``session`` (the
refusals before it, the locks, the journal, the supervisor and its restore, the
end) around one engine, ``slots`` (up to N agents at once — one for a serial
run — each attempt through ``iteration``: one agent start, until an
``AgentResult``), with ``outcomes`` (what that result means for the item: done,
blocked, needs-human, deferred, retry) and ``places`` (where the agents run —
the main checkout or each item's worktree — and the git work there).
``options`` builds what a run is asked to do, ``summary`` how it ends,
``errors`` the errors that carry its exit codes (``exit_codes.LOOP_*``).

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
