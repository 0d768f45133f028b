"""``git forge status [PATH] [--backlog DIR] [--json]`` — derived loop status."""

from __future__ import annotations

import os

from git_forge.agents.receipt import Totals
from git_forge.cli.args import Args
from git_forge.cli.arguments import add_location
from git_forge.cli.output import emit_json
from git_forge.cli.plain import plain
from git_forge.cli.render_topology import waiting_text
from git_forge.exit_codes import LOOP_BLOCKED
from git_forge.runner import runner_for
from git_forge.status_report import loop_status
from git_forge.words import counted, size
from git_forge.workspace import locate

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping
    from typing import Any

    from git_forge.reconcile.item_trees import ItemTreeJSON
    from git_forge.status_report import AgentJSON


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Show the loop's state (state.json), the backlog summary from the "
        "configured runner, dependency depth and starvation, and whether a "
        "loop holds the lock.")
    add_location(parser)
    parser.add_argument("--json", action="store_true", help="print the status document")
    parser.set_defaults(func=run)


def run(args: Args) -> int:
    workspace = locate(args.path, args.backlog)
    document = loop_status(workspace, runner_for(workspace), item_costs=args.json)
    if args.json:
        emit_json(document)
    else:
        print("\n".join(plain(line) for line in render_status(document)))
    return 0


#: A run's status (state.json's ``status``, ``loop run --json``'s, status's
#: ``loopState``) as a person reads it; ``--json`` keeps the identifiers.
RUN_STATUS_WORDS = {
    "paused_human": "paused for a human",
    "iterations_complete": "iteration limit reached",
    "error": "ended with an error",
}


def run_status_words(status: str) -> str:
    """The words for a run's status: ``paused for a human``, not ``paused_human``."""
    return RUN_STATUS_WORDS.get(status, status)


def run_end_words(status: str, exit_code: int) -> str:
    """How a run ended, in words true to its exit code: a run that ran out of work
    with blocked items left is recorded ``complete`` but exits 5, which is not done."""
    if exit_code == LOOP_BLOCKED:
        return "nothing more can run while blocked items remain"
    return run_status_words(status)


def render_status(document: Mapping[str, Any]) -> list[str]:
    """The status document (``status_report.loop_status``) in a few aligned, quiet lines."""
    summary = document["backlogSummary"]
    blocked = f"{summary['blocked']} blocked"
    kinds = [f"{summary[key]} {label}" for key, label in
             (("needsHuman", "needs human"), ("deferred", "deferred")) if summary[key]]
    if kinds:
        blocked += f" ({', '.join(kinds)})"
    backlog = (f"{counted(summary['total'], 'item')}: {summary['pending']} pending, "
               f"{summary['inProgress']} in progress, {blocked}, {summary['done']} done")
    liveness = document["liveness"]
    loop = run_status_words(document["loopState"])
    if liveness["endedWithoutShutdown"]:
        loop = (f"not running (last run {liveness['runId'] or 'unknown'} ended without "
                "shutting down; lock free)")
    else:
        if document.get("iteration") is not None and document["loopState"] != "idle":
            loop += f" (iteration {document['iteration']}/{document.get('maxIterations')})"
        running = document.get("runningItems") or []
        was = "on" if liveness["loopAlive"] else "was on"  # a stopped run's last item
        if len(running) > 1:
            loop += f", {was} items {', '.join(running)}"
        elif document.get("currentItem"):
            loop += f", {was} item {document['currentItem']}"
        if document.get("sandbox") and document["loopState"] != "idle":
            loop += f", sandboxed ({document['sandbox']})"
        if document.get("waitingUntil"):
            loop += (f", waiting for the agent's usage limit until {document['waitingUntil']}"
                     if liveness["loopAlive"] else
                     f"; the agent's usage limit lifts at {document['waitingUntil']}")
    lock = document["lock"]
    lock_line = ("held by " + (lock["holder"] or "a running loop")) if lock["alive"] else "free"
    topology = document["topology"]
    shape = (f"max chain depth {topology['maxChainDepth']}, "
             f"{topology['selectable']} selectable")
    if topology.get("starvation"):
        shape += f"; starved, waiting on {waiting_text(topology.get('waitingOn') or [])}"
    rows = [("loop", loop)]
    if liveness["endedWithoutShutdown"]:  # what a killed run leaves, and who puts it right
        left = document.get("runningItems") or []  # currentItem's when the run set none
        rows.append(("next", (f"{', '.join(left)} in progress when it died: the next loop run "
                              f"puts {'it' if len(left) == 1 else 'them'} back to pending; "
                              if left else "")
                     + "git forge preflight shows what it left in the tree"))
    rows += [("backlog", backlog), ("topology", shape), ("lock", lock_line),
             ("runner", document["runner"])]
    costs = document.get("costs") or {}
    if costs.get("run"):
        rows.append(("spent", f"{Totals.from_json(costs['run']).describe()} in the last run"))
    for agent in document.get("agents", []):
        rows.append(("agent", _agent_line(agent, document["projectPath"])))
    if document.get("mergeQueue"):
        rows.append(("merging", ", ".join(document["mergeQueue"])))
    for tree in document.get("worktrees", []):
        rows.append(("worktree", _tree_line(tree, document["projectPath"])))
    if document.get("worktreesError"):
        rows.append(("worktree", f"none listed: {document['worktreesError']}"))
    for item_id, reason in (document.get("verifyFailures") or {}).items():
        rows.append(("verify", f"item {item_id}'s last attempt failed its checks: {reason}"))
    for orphan in liveness["orphans"]:
        rows.append(("orphan", f"orphaned agent still running (handle {orphan['handle']}, "
                               f"item {orphan['itemId'] or 'unknown'}); stop it with "
                               f"git forge proc stop {orphan['handle']}"))
    if document.get("error"):
        rows.append(("error", document["error"]))
    return [f"{label + ':':<10}{value}" for label, value in rows]


def _tree_line(tree: ItemTreeJSON, root: str) -> str:
    """One item's worktree or branch, from its ``status --json`` entry."""
    where = (f"{os.path.relpath(tree['worktree'], root)} (branch {tree['branch'] or 'none'})"
             if tree["worktree"] else f"branch {tree['branch']}")
    state = {"dirty": "uncommitted changes", "unintegrated": "commits not on the branch",
             "integrated": "integrated, clean"}[tree["state"]]
    if tree["state"] == "dirty" and not tree["integrated"]:
        state += ", commits not on the branch"
    if tree.get("operation"):  # git status's words: "rebase in progress"
        state = f"{tree['operation']} in progress, {state}"
    if tree.get("conflict"):
        state += ", conflicted with the branch"
    if tree.get("next"):
        state += f"; next: {tree['next']}"
    return f"item {tree['itemId']} {where}: {state}"


def _agent_line(agent: AgentJSON, root: str) -> str:
    """One running agent: its item, since when, its output so far, where it works."""
    where = f", in {os.path.relpath(agent['worktree'], root)}" if agent["worktree"] else ""
    doing = f"checking (`{agent['gate']}`)" if agent.get("gate") else "running"
    return (f"item {agent['itemId'] or 'unknown'} {doing} since {agent['startedAt'] or '?'}, "
            f"{size(agent['outputBytes'])} of output{where} (handle {agent['handle']})")
