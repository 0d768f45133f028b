"""``git forge status``: the loop's state, the backlog's shape, the lock's liveness.

Items come from the configured runner (never from backlog.json behind its
back), loop state from ``{stateDir}/state.json``, liveness from whether the
loop lock is held right now — never from a PID on disk. A corrupt state.json is
reported in the ``error`` field, not raised: status is what an operator runs
when something already looks wrong.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from git_forge.backlog.model import summarize
from git_forge.backlog.topology import build_graph, topology_of, waiting_on, waiting_text
from git_forge.errors import StoreError
from git_forge.lockprobe import lock_is_held, read_lock_holder
from git_forge.loop.control import loop_lock_path, orphaned_agents
from git_forge.loop.state import read_state, state_path
from git_forge.runner.base import Runner
from git_forge.workspace import Workspace

STATUS_SCHEMA_VERSION = "1"
_STATE_KEYS = ("iteration", "maxIterations", "currentItem", "lastSignal", "startedAt")


def read_loop_state(state_dir: Path) -> tuple[dict[str, Any] | None, str | None]:
    """``(state, None)``, ``(None, None)`` when absent, ``(None, why)`` when unreadable."""
    path = state_path(state_dir)
    try:
        state = read_state(state_dir)
    except StoreError as exc:
        return None, exc.message
    if state is None and path.exists():
        return None, f"{path} is corrupt (it holds JSON null)"
    if state is not None and not isinstance(state, dict):
        return None, f"{path} is corrupt (not a JSON object)"
    return state, None


def lock_status(state_dir: Path) -> dict[str, Any]:
    """``{present, alive, holder}`` of ``{stateDir}/loop.lock``."""
    path = loop_lock_path(state_dir)
    present = path.exists()
    alive = present and lock_is_held(path)
    return {"present": present, "alive": alive,
            "holder": (read_lock_holder(path) or None) if alive else None}


#: States in which state.json says a loop is at work; with the lock free, it died.
_LIVE_STATES = ("starting", "running")


def loop_status(workspace: Workspace, runner: Runner) -> dict[str, Any]:
    """The ``status --json`` document."""
    items = runner.list_items()
    found, problem = read_loop_state(workspace.state_dir)
    state = found or {}
    graph = build_graph(items)
    topology = topology_of(graph)
    lock = lock_status(workspace.state_dir)
    loop_state = state.get("status", "idle") if problem is None else "unknown"
    crashed = loop_state in _LIVE_STATES and not lock["alive"]
    document: dict[str, Any] = {
        # Liveness is the lock: a state.json still saying "running" with the lock free
        # is a run that ended without shutting down, never a running loop.
        "loopState": "stopped" if crashed else loop_state,
    }
    for key in _STATE_KEYS:
        document[key] = state.get(key)
    document.update({
        "backlogSummary": summarize(items),
        "lock": lock,
        "liveness": {
            "loopAlive": lock["alive"],
            "endedWithoutShutdown": crashed,
            "runId": state.get("runId"),
            "orphans": [{"handle": orphan.handle, "itemId": orphan.item_id}
                        for orphan in orphaned_agents(workspace.state_dir)],
        },
        # starvation is feature-forge's (blocking *roots*); waitingOn names what a
        # starved backlog really waits on, roots or not.
        "topology": {**{key: topology[key]
                        for key in ("maxChainDepth", "selectable", "starvation")},
                     "waitingOn": waiting_on(graph)},
        "runner": runner.describe(),
        "error": problem if problem is not None else state.get("error"),
        "statusSchemaVersion": STATUS_SCHEMA_VERSION,
        "projectPath": str(workspace.root),
        "backlogDir": workspace.relative(workspace.backlog_dir),
        "stateDir": workspace.relative(workspace.state_dir),
    })
    return document


def render_status(document: dict[str, Any]) -> list[str]:
    """A few aligned, quiet lines."""
    summary = document["backlogSummary"]
    blocked = f"{summary['blocked']} blocked"
    kinds = [f"{summary[key]} {label}" for key, label in
             (("needsHuman", "needs human"), ("deferred", "deferred")) if summary[key]]
    if kinds:
        blocked += f" ({', '.join(kinds)})"
    backlog = (f"{summary['total']} items: {summary['pending']} pending, "
               f"{summary['inProgress']} in progress, {blocked}, {summary['done']} done")
    liveness = document["liveness"]
    loop = document["loopState"]
    if liveness["endedWithoutShutdown"]:
        loop = (f"not running (last run {liveness['runId'] or 'unknown'} ended without "
                "shutting down; lock free)")
    else:
        if document.get("iteration") is not None and loop != "idle":
            loop += f" (iteration {document['iteration']}/{document.get('maxIterations')})"
        if document.get("currentItem"):
            loop += f", on item {document['currentItem']}"
    lock = document["lock"]
    lock_line = ("held by " + (lock["holder"] or "a running loop")) if lock["alive"] else "free"
    topology = document["topology"]
    shape = (f"max chain depth {topology['maxChainDepth']}, "
             f"{topology['selectable']} selectable")
    if topology.get("starvation"):
        shape += f"; starved, waiting on {waiting_text(topology.get('waitingOn') or [])}"
    rows = [("loop", loop), ("backlog", backlog), ("topology", shape), ("lock", lock_line),
            ("runner", document["runner"])]
    for orphan in liveness["orphans"]:
        rows.append(("orphan", f"orphaned agent still running (handle {orphan['handle']}, "
                               f"item {orphan['itemId'] or 'unknown'}); stop it with "
                               f"git forge proc stop {orphan['handle']}"))
    if document.get("error"):
        rows.append(("error", document["error"]))
    return [f"{label + ':':<10}{value}" for label, value in rows]
