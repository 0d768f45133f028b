"""How a run ends: its status and exit code, and what the operator is told.

Everything here is data read from the backlog at the end — the whole backlog,
not only this run's items — and nothing is rendered: the caller words
``LoopResult`` (the CLI's summary lines, or ``--json``).
"""

from dataclasses import dataclass, field
from typing import TypedDict

from git_forge.agents.receipt import TotalsJSON
from git_forge.backlog.item import Item
from git_forge.backlog.model import (
    BacklogSummaryJSON,
    WaitingItemJSON,
    select_next,
    summarize,
    waiting_items,
)
from git_forge.backlog.topology import dependency_cycles, id_key
from git_forge.exit_codes import LOOP_BLOCKED, LOOP_DONE
from git_forge.loop.state import RunState
from git_forge.tree.porcelain import quote_path


class RunCostsJSON(TypedDict):
    """What a run's agents cost: the run's totals and each item's (``loop run --json``)."""

    run: TotalsJSON
    items: dict[str, TotalsJSON]


class LeftPathJSON(TypedDict):
    """A changed path the run left uncommitted, and why."""

    path: str
    why: str


class UncommittedJSON(TypedDict):
    """A done item's changes the run could not all commit: which, why, and where they
    stay (the working tree, or the item's kept worktree)."""

    itemId: str
    where: str
    paths: list[LeftPathJSON]


def left_words(left: UncommittedJSON) -> str:
    """``a.txt (why) stays uncommitted in <tree>``: what a done item left, for people."""
    paths = "; ".join(f"{quote_path(entry['path'])} ({entry['why']})" for entry in left["paths"])
    verb = "stays" if len(left["paths"]) == 1 else "stay"
    return f"{paths} {verb} uncommitted in {left['where']}"


@dataclass
class LoopResult:
    exit_code: int
    status: str
    run_id: str
    state: RunState
    message: str = ""
    #: The whole backlog at the end (``backlogSummary`` counts), not only this run.
    backlog: BacklogSummaryJSON | None = None
    #: Every item waiting on a decision, this run's or an earlier one's.
    waiting: list[WaitingItemJSON] = field(default_factory=list)
    #: What this run's agents cost (``loop/receipts.py``), ``None`` when nothing was
    #: recorded.
    costs: RunCostsJSON | None = None
    #: This run's done items whose changes were not all committed.
    uncommitted: list[UncommittedJSON] = field(default_factory=list)


def loop_result(items: list[Item], state: RunState, code: int, status: str,
                message: str = "", costs: RunCostsJSON | None = None,
                uncommitted: list[UncommittedJSON] | None = None) -> LoopResult:
    """The result of a run whose backlog now holds ``items``."""
    return LoopResult(code, status, state.run_id or "", state, message,
                      summarize(items), waiting_items(items), costs, uncommitted or [])


def final_status(items: list[Item]) -> tuple[str, int]:
    """The status and exit code of a run that ran out of work or budget."""
    if all(item.status == "done" for item in items):
        return "complete", LOOP_DONE
    if select_next(items) is not None:
        return "iterations_complete", LOOP_DONE
    # Nothing selectable and not all done: blocked items, or a dependency cycle
    # (pending items that can never become ready) — both are genuine blocks.
    return "complete", LOOP_BLOCKED


def _cycles(items: list[Item]) -> list[list[str]]:
    """The dependency cycles among the items not done, each once, lowest id first."""
    return dependency_cycles([item for item in items if item.status != "done"])


def final_message(items: list[Item], code: int) -> str:
    """What the operator is told at the end: why nothing more could run."""
    if code != LOOP_BLOCKED and not any(item.status == "blocked" for item in items):
        return ""
    if code == LOOP_BLOCKED and not any(item.status == "blocked" for item in items):
        cycles = _cycles(items)
        on_cycle = {item_id for cycle in cycles for item_id in cycle}
        pending = sorted((item.id for item in items if item.status != "done"), key=id_key)
        waiting = [item_id for item_id in pending if item_id not in on_cycle]
        if not cycles:
            return (f"nothing can run: items {', '.join(waiting)} wait on items that are "
                    "not done: see git forge backlog topology")
        shown = "; ".join(" → ".join([*cycle, cycle[0]]) for cycle in cycles)
        text = (f"nothing can run: dependency cycle {shown} — items "
                f"{', '.join(sorted(on_cycle, key=id_key))} stay pending")
        if waiting:
            text += f", and {', '.join(waiting)} wait on them"
        return text + "; break the cycle with git forge backlog edit ID --depends-on IDS"
    return "run git forge recover to answer them"
