"""Step 7: the ``resolved`` gate, the outcome ladder, exit codes, the next command.

``resolved`` needs all of: no unapplied decision among this pass's affected
items, a clean porcelain status (no stranded work: the runner's own files and
backlog.json's queued change are none), no stranded work in an item's worktree
or on its branch (the launch stops on it too), and every affected item moved.
An empty affected set never selects it. Otherwise the first matching rung wins:
needs-human > blocked > deferred > partial > complete.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypedDict

from git_forge.backlog.item import Item
from git_forge.backlog.topology import BlockingRootJSON, TopologyJSON, WaitingJSON
from git_forge.exit_codes import (
    RECOVER_BLOCKED,
    RECOVER_FAILED_APPLY,
    RECOVER_FAILED_READ,
    RECOVER_FAILED_RECORD,
    RECOVER_NEEDS_HUMAN,
    RECOVER_NOTHING_MOVED,
    RECOVER_SAFE,
    RECOVER_TREE_DIRTY,
)
from git_forge.loop.state import RunState

FAILURE_EXIT_CODES = {
    "failed-read": RECOVER_FAILED_READ,
    "failed-record": RECOVER_FAILED_RECORD,
    "failed-apply": RECOVER_FAILED_APPLY,
    "nothing-moved": RECOVER_NOTHING_MOVED,
}

RESUME = "git forge loop run"
RECOVER = "git forge recover"
RECONCILE = "git forge reconcile"
STATUS = "git forge status"


class GateJSON(TypedDict):
    """The gate behind ``resolved`` as ``recover --json`` gives it."""

    unappliedAffected: list[str]
    porcelainClean: bool
    itemTreesClean: bool
    allMoved: bool


class OutcomeDetails(TypedDict, total=False):
    """What a ``partial`` outcome cites: the iteration limit, what a starved backlog
    waits on, or how many items are still selectable."""

    iteration: int | None
    maxIterations: int | None
    blockingRoots: list[BlockingRootJSON]
    waitingOn: list[WaitingJSON]
    selectable: int


@dataclass(frozen=True)
class Gate:
    """The evaluations behind ``resolved``, each citing its source."""

    unapplied_affected: tuple[str, ...]
    #: The working tree's status (git status) holds no stranded work — what it said
    #: ``no`` to when an item's branch alone held work.
    porcelain_clean: bool
    all_moved: bool
    affected: tuple[str, ...]
    #: The items whose worktree or branch holds stranded work (git worktree list).
    items_left: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return (bool(self.affected) and not self.unapplied_affected
                and self.porcelain_clean and not self.items_left and self.all_moved)

    def to_json(self) -> GateJSON:
        return {"unappliedAffected": list(self.unapplied_affected),
                "porcelainClean": self.porcelain_clean, "itemTreesClean": not self.items_left,
                "allMoved": self.all_moved}


@dataclass(frozen=True)
class Outcome:
    name: str
    cause: str | None = None
    details: OutcomeDetails = field(default_factory=OutcomeDetails)


def _counts(items: Iterable[Item]) -> dict[str, int]:
    counts = {"needsHuman": 0, "blocked": 0, "deferred": 0, "open": 0, "done": 0, "total": 0}
    for item in items:
        counts["total"] += 1
        status = item.status
        if status == "blocked":
            if item.needs_human:
                counts["needsHuman"] += 1
            elif item.deferred:
                counts["deferred"] += 1
            else:
                counts["blocked"] += 1
        elif status in ("pending", "in_progress"):
            counts["open"] += 1
        elif status == "done":
            counts["done"] += 1
    return counts


def select_outcome(gate: Gate, items: list[Item], topology: TopologyJSON,
                   run_state: RunState | None,
                   waiting: list[WaitingJSON] | None = None) -> Outcome:
    """The outcome of a pass that did not fail, from the gate and the re-read list;
    ``waiting`` (``topology.waiting_on``) names what a starved backlog waits on.
    ``run_state`` is None when no run has happened yet (no state.json): said as such,
    not as a run that stopped early."""
    if gate.passed:
        return Outcome("resolved")
    counts = _counts(items)
    if counts["needsHuman"]:
        return Outcome("needs-human")
    if counts["blocked"]:
        return Outcome("blocked")
    if counts["deferred"]:
        return Outcome("deferred")
    if counts["open"]:
        selectable = int(topology.get("selectable") or 0)
        state = run_state or RunState()
        at_limit = state.iteration is not None and state.iteration == state.max_iterations
        if selectable and at_limit:
            return Outcome("partial", "iteration limit",
                           {"iteration": state.iteration,
                            "maxIterations": state.max_iterations})
        if not selectable:
            starvation = topology.get("starvation")
            return Outcome("partial", "dependency starvation",
                           {"blockingRoots": starvation["blockingRoots"] if starvation else [],
                            "waitingOn": waiting or []})
        if run_state is None:  # items queued with backlog add, never run
            return Outcome("partial", "no loop run has happened yet: the items wait for "
                           "git forge loop run", {"selectable": selectable})
        return Outcome("partial", "the run stopped before the work was done",
                       {"selectable": selectable})
    if run_state is None and not items:
        return Outcome("complete", "no loop run has happened yet and the backlog is empty: "
                       "add items with git forge backlog add")
    return Outcome("complete")


def exit_code(outcome: Outcome, tree_clean: bool) -> int:
    """0 = safe to resume (or nothing to do); see the module constants."""
    if outcome.name == "needs-human":
        return RECOVER_NEEDS_HUMAN
    if outcome.name == "blocked":
        return RECOVER_BLOCKED
    return RECOVER_SAFE if tree_clean else RECOVER_TREE_DIRTY


def next_command(outcome: Outcome, tree_clean: bool) -> str:
    """Exactly one command to run next."""
    if outcome.name in ("needs-human", "blocked"):
        return RECOVER
    if not tree_clean:
        return RECONCILE
    if outcome.name == "complete":
        return STATUS
    return RESUME
