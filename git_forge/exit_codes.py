"""Every exit code git-forge returns, grouped by the command that returns it.

A value is defined once; a command whose code means what a shared one means
names the shared one. The man page's EXIT STATUS lists each command's group
(a test keeps the two in step), so a new code goes here and there together.
Standard library only: a leaf any layer may import.
"""

from __future__ import annotations

# -- every command (product.md "Exit codes"; the forge-session.py / rauf convention) ------------
EXIT_OK = 0
#: The machine failed rather than the input (a crashed git, a full disk).
EXIT_ERROR = 1
#: A usage error, a refusal or unreadable input.
EXIT_USAGE = 2
#: 128 + SIGINT: stopped by Ctrl-C (or, for the loop, by a signal or ``loop stop``).
EXIT_INTERRUPTED = 130

# -- shared by more than one command -----------------------------------------------------------
#: A human must answer: the loop paused for one, or recover left needs-human items.
EXIT_NEEDS_HUMAN = 3
#: Stranded work was not reconciled: the tree is left dirty (recover, reconcile).
EXIT_TREE_DIRTY = 6

# -- git forge loop run (runner.md, settled details) -------------------------------------------
#: Every item done, or the iteration budget spent with work still selectable.
LOOP_DONE = EXIT_OK
LOOP_ERROR = EXIT_ERROR
#: The pre-launch check said STOP, a lock is held, or the arguments are bad.
LOOP_REFUSED = EXIT_USAGE
LOOP_PAUSED = EXIT_NEEDS_HUMAN
#: Stopped at a limit: the agent's usage limit (``--on-limit stop``, or one no clock
#: lifts) or the run's ``--max-cost`` (the rauf convention's 4).
LOOP_LIMIT = 4
#: Nothing selectable is left while blocked items (needs-human, blocked, deferred) remain.
LOOP_BLOCKED = 5
LOOP_STOPPED = EXIT_INTERRUPTED

# -- git forge recover (recovery.md, settled details; step 7) ----------------------------------
#: Safe to resume: resolved, complete, partial or deferred with a clean tree, or nothing to do.
RECOVER_SAFE = EXIT_OK
RECOVER_NEEDS_HUMAN = EXIT_NEEDS_HUMAN
RECOVER_BLOCKED = 4
RECOVER_TREE_DIRTY = EXIT_TREE_DIRTY
RECOVER_FAILED_READ = 10
RECOVER_FAILED_RECORD = 11
RECOVER_FAILED_APPLY = 12
RECOVER_NOTHING_MOVED = 13

# -- git forge reconcile (recovery.md "Tree reconciliation") ------------------------------------
RECONCILE_TREE_DIRTY = EXIT_TREE_DIRTY

# -- git forge preflight (product.md: 0 = go, non-zero = STOP with the reason) ------------------
#: The launch is blocked: an answer, not a failure of the check.
PREFLIGHT_STOP = 1
