"""``git forge status``: the loop's state, the backlog's shape, the lock's liveness.

Items come from the configured runner (never from backlog.json behind its
back), loop state from ``{stateDir}/state.json``, liveness from whether the
loop lock is held right now — never from a PID on disk. A corrupt state.json is
reported in the ``error`` field, not raised: status is what an operator runs
when something already looks wrong.
"""

import json
import os
from pathlib import Path
from typing import TypedDict

from git_forge.backlog.item import Item
from git_forge.backlog.model import BacklogSummaryJSON, summarize
from git_forge.backlog.topology import (
    StarvationJSON,
    WaitingJSON,
    build_graph,
    topology_of,
    waiting_on,
)
from git_forge.errors import ForgeError, StoreError
from git_forge.layout import RECEIPTS_FILE, RUN_DIR, RUN_RECEIPTS_FILE
from git_forge.lockprobe import lock_is_held, read_lock_holder
from git_forge.loop.control import live_agents, loop_lock_path, orphaned_agents
from git_forge.loop.receipts import CostsJSON, costs_json, read_ledger, run_costs_json
from git_forge.loop.state import RunState, read_state, state_path
from git_forge.reconcile.item_trees import ItemTreeJSON, item_trees, loop_branch
from git_forge.runner.base import Runner
from git_forge.workspace import Workspace

STATUS_SCHEMA_VERSION = "1"


class LockJSON(TypedDict):
    """``{stateDir}/loop.lock``: there, held right now, and by whom."""

    present: bool
    alive: bool
    holder: str | None


class OrphanJSON(TypedDict):
    handle: str
    itemId: str | None


class LivenessJSON(TypedDict):
    loopAlive: bool
    endedWithoutShutdown: bool
    runId: str | None
    orphans: list[OrphanJSON]


class AgentJSON(TypedDict):
    """An agent the live run supervises."""

    handle: str
    itemId: str | None
    startedAt: str | None
    outputBytes: int
    worktree: str | None
    #: A verification gate's process, not an agent: its command (else null).
    gate: str | None
    #: The profile whose structured stream the agent prints (``claude``), else null.
    stream: str | None


class ParallelJSON(TypedDict):
    worktrees: list[ItemTreeJSON]
    agents: list[AgentJSON]
    mergeQueue: list[str]
    #: Why the worktrees could not be listed (git's words; ``worktrees`` is then empty).
    worktreesError: str | None


class StatusTopologyJSON(TypedDict):
    """The topology's figures status shows, and what a starved backlog waits on."""

    maxChainDepth: int
    selectable: int
    starvation: StarvationJSON | None
    waitingOn: list[WaitingJSON]


class StatusJSON(TypedDict):
    """The ``status --json`` document (formats.md, "Runner contract outputs")."""

    loopState: str
    iteration: int | None
    maxIterations: int | None
    currentItem: str | None
    runningItems: list[str]
    lastSignal: str | None
    startedAt: str | None
    waitingUntil: str | None
    verifyFailures: dict[str, str]
    #: ``bwrap`` when the last run's agents ran sandboxed (``loop.sandbox``).
    sandbox: str | None
    backlogSummary: BacklogSummaryJSON
    lock: LockJSON
    liveness: LivenessJSON
    topology: StatusTopologyJSON
    runner: str
    costs: CostsJSON | None
    worktrees: list[ItemTreeJSON]
    agents: list[AgentJSON]
    mergeQueue: list[str]
    worktreesError: str | None
    error: str | None
    statusSchemaVersion: str
    projectPath: str
    backlogDir: str
    stateDir: str


def read_loop_state(state_dir: Path) -> tuple[RunState | None, str | None]:
    """``(state, None)``, ``(None, None)`` when absent, ``(None, why)`` when unreadable
    (JSON null included: status calls that corrupt, where evidence readers see no run)."""
    path = state_path(state_dir)
    try:
        state = read_state(state_dir)
    except StoreError as exc:
        return None, exc.message
    if state is None and path.exists():
        return None, f"{path} is corrupt (it holds JSON null)"
    return state, None


def lock_status(state_dir: Path) -> LockJSON:
    """``{present, alive, holder}`` of ``{stateDir}/loop.lock``."""
    path = loop_lock_path(state_dir)
    present = path.exists()
    alive = present and lock_is_held(path)
    return {"present": present, "alive": alive,
            "holder": (read_lock_holder(path) or None) if alive else None}


#: States in which state.json says a loop is at work; with the lock free, it died.
_LIVE_STATES = ("starting", "running")


def _parallel(workspace: Workspace, done: set[str], run_id: str | None) -> ParallelJSON:
    """``worktrees``: the items' worktrees and ``forge/<id>`` branches, each with its
    state (a git failure leaves the list empty and says why in ``worktreesError``:
    status reports, it does not stop);
    ``agents``: one entry per agent the live run supervises; ``mergeQueue``: the
    items done whose branch is not integrated yet (a parallel run marks an item
    done, then merges it)."""
    problem = None
    try:
        trees = item_trees(workspace.root, workspace.state_dir, workspace.backlog_file)
    except ForgeError as exc:
        trees, problem = [], exc.message
    where = {tree.item_id: tree.worktree for tree in trees if tree.worktree is not None}
    agents: list[AgentJSON] = [
        {"handle": agent.handle, "itemId": agent.item_id, "startedAt": agent.started_at,
         "outputBytes": agent.output_bytes,
         "worktree": str(where[agent.item_id]) if agent.item_id in where else None,
         "gate": agent.gate, "stream": agent.stream}
        for agent in live_agents(workspace.state_dir, run_id)]
    onto = loop_branch(workspace.root) if any(tree.conflict for tree in trees) else None
    return {"worktrees": [{**tree.to_json(), "next": tree.next_step(onto)} for tree in trees],
            "agents": agents,
            "mergeQueue": [tree.item_id for tree in trees
                           if tree.item_id in done and not tree.integrated],
            "worktreesError": problem}


#: The status's backlog facts in the state dir's cache (``backlog/cache.py``).
STATUS_CACHE = "status-backlog.json"


def backlog_facts(items: list[Item]) -> str:
    """What status reports of the item list — the summary, the topology's figures
    and what a starved backlog waits on, the done items' ids — as JSON text: the
    embedded runner keeps it between commands while backlog.json is unchanged."""
    graph = build_graph(items)
    topology = topology_of(graph)
    return json.dumps({
        "summary": summarize(items),
        # starvation is feature-forge's (blocking *roots*); waitingOn names what a
        # starved backlog really waits on, roots or not.
        "topology": {**{key: topology[key]
                        for key in ("maxChainDepth", "selectable", "starvation")},
                     "waitingOn": waiting_on(graph)},
        "done": [item.id for item in items if item.status == "done"]}, allow_nan=False)


def loop_status(workspace: Workspace, runner: Runner, *,
                item_costs: bool = True, keep: bool = True) -> StatusJSON:
    """The ``status --json`` document. Without ``item_costs`` its ``costs`` hold the
    last run's totals alone (``{"run": …}``): all a text status shows, without a
    pass over every item the ledger ever summed. Without ``keep`` the backlog's
    facts kept in the cache are used but nothing is written (``watch``: a reader)."""
    facts = json.loads(runner.derived(workspace.state_dir, STATUS_CACHE, backlog_facts,
                                      keep=keep))
    found, problem = read_loop_state(workspace.state_dir)
    state = found or RunState()
    lock = lock_status(workspace.state_dir)
    if problem is not None:
        loop_state = "unknown"
    else:
        loop_state = "idle" if state.status is None else state.status
    crashed = loop_state in _LIVE_STATES and not lock["alive"]
    return {
        # Liveness is the lock: a state.json still saying "running" with the lock free
        # is a run that ended without shutting down, never a running loop.
        "loopState": "stopped" if crashed else loop_state,
        "iteration": state.iteration,
        "maxIterations": state.max_iterations,
        "currentItem": state.current_item,
        "runningItems": list(state.running),
        "lastSignal": state.last_signal,
        "startedAt": state.started_at,
        "waitingUntil": state.waiting_until,
        "verifyFailures": dict(state.verify_failures),
        "sandbox": state.sandbox,
        "backlogSummary": facts["summary"],
        "lock": lock,
        "liveness": {
            "loopAlive": lock["alive"],
            "endedWithoutShutdown": crashed,
            "runId": state.run_id,
            "orphans": [{"handle": orphan.handle, "itemId": orphan.item_id}
                        for orphan in orphaned_agents(workspace.state_dir)],
        },
        "topology": facts["topology"],
        "runner": runner.describe(),
        "costs": _costs(workspace.state_dir, state.run_id, item_costs),
        **_parallel(workspace, set(facts["done"]), state.run_id if lock["alive"] else None),
        "error": problem if problem is not None else state.error,
        "statusSchemaVersion": STATUS_SCHEMA_VERSION,
        "projectPath": str(workspace.root),
        "backlogDir": workspace.relative(workspace.backlog_dir),
        "stateDir": workspace.relative(workspace.state_dir),
    }


def no_costs() -> CostsJSON:
    """``costs`` when there is no ledger at all (no agent has reported yet): what
    ``costs_json`` gives an empty ledger, without importing the receipts (a test
    holds the two equal)."""
    return {"run": None, "runItems": {}, "items": {}}


def _costs(state_dir: Path, run_id: str | None, items: bool) -> CostsJSON | None:
    """What the last run and (with ``items``) each item cost so far
    (``loop/receipts.py``); ``None`` when the ledger cannot be read (status still
    reports the rest)."""
    if not any(os.path.lexists(os.path.join(state_dir, *name))
               for name in ((RECEIPTS_FILE,), (RUN_DIR, RUN_RECEIPTS_FILE))):
        return no_costs() if items else {"run": None}

    try:
        if not items:
            return {"run": run_costs_json(state_dir, run_id)}
        return costs_json(read_ledger(state_dir), run_id)
    except StoreError:
        return None
