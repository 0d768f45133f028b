"""The pre-launch check's verdict on a tree that is not clean — the STOP, or the
refusal of a dirty tree with no run behind it — and their words, which ``loop run``
prints too when it refuses to launch.

Apart from ``cli/preflight.py``, whose clean answer imports none of this (the
common-case boundary, ARCHITECTURE.md): the configuration, the launch blocker's
table and the STOP's explanation.
"""

from __future__ import annotations

import sys
from pathlib import Path

from git_forge.cli.args import Args
from git_forge.cli.output import emit_json
from git_forge.cli.render_trees import render_item_trees
from git_forge.exit_codes import PREFLIGHT_STOP
from git_forge.layout import REPO_CONFIG
from git_forge.loop.control import launch_blocker
from git_forge.loop.state import RunState
from git_forge.reconcile.preflight import Preflight, check
from git_forge.reconcile.stop import StopExplanation, current_waits, explain
from git_forge.tree.porcelain import StatusEntry, render_porcelain_line
from git_forge.workspace import Workspace, locate


def _items(ids: list[str]) -> str:
    return ", ".join(ids) if ids else "none"


def render_stop(result: Preflight, explanation: StopExplanation | None = None,
                root: Path | None = None) -> list[str]:
    """The STOP message: the prior run, the stranded paths — split into those the
    run touched (its evidence) and those changed outside it —, the items' worktrees
    and branches holding work (paths shown relative to ``root``), and what to run
    next."""
    run = result.run or RunState()
    if result.reason is not None:
        return [f"STOP: {result.reason}"]
    touched = explanation.touched if explanation is not None else [
        (entry, "") for entry in result.entries]
    outside = explanation.outside if explanation is not None else []
    started = run.started_at or "unknown"
    named = f" (run {run.run_id})" if run.run_id else ""
    if touched:
        lines = ["STOP: a previous git-forge run left work in the tree."]
    elif result.trees and not outside:
        lines = ["STOP: a previous git-forge run left work in its items' worktrees or "
                 "branches."]
    else:
        run_named = f"run {run.run_id}, " if run.run_id else ""
        lines = [f"STOP: the working tree has changes that git-forge's last run ({run_named}"
                 f"started {started}) did not make."]
    blocked = explanation.blocked if explanation is not None else list(run.blocked_items)
    needs = explanation.needs_human if explanation is not None else list(run.needs_human_items)
    if result.run is not None or not result.trees:  # a run is known of
        lines.append(f"  run started:   {started}{named}")
        lines.append(f"  item in flight: {run.current_item or 'none'}")
        lines.append(f"  blocked:        {_items(blocked)}")
        lines.append(f"  needs human:    {_items(needs)}")
        if result.run_error:
            lines.append(f"  (the run's state could not be read: {result.run_error})")
    if touched:  # grouped by the evidence that makes them the run's candidates
        reasons: dict[str, list[str]] = {}
        for entry, why in touched:
            reasons.setdefault(why, []).append(render_porcelain_line(entry))
        for why, paths in reasons.items():
            lines.append("Touched by that run" + (f" — {why}" if why else "")
                         + " (candidates, as git status --porcelain prints them):")
            lines += [f"  {path}" for path in paths]
    if outside:
        lines.append("Changed outside the run (as git status --porcelain prints them):")
        lines += [f"  {render_porcelain_line(entry)}" for entry in outside]
    if result.trees:
        lines.append("Work in items' worktrees and branches:")
        lines += render_item_trees(result.trees, result.onto, root)
    if explanation is not None:
        lines += [f"  note: {note}" for note in explanation.notes]
    lines += config_note(result.entries)
    lines += [
        "Decide what happens to this work before the next launch:",
        "  git forge reconcile   commit, stash or discard it, group by group",
    ]
    # A conflict recover was told to leave for a resolution by hand is no question
    # any more: its commands are in the listing above.
    by_hand = {tree.item_id for tree in result.trees if tree.conflict and tree.resolving}
    if touched or outside or (set(blocked) | set(needs)) - by_hand:
        lines.append("  git forge recover     answer the run's questions, then reconcile "
                     "the tree")
    return lines


def explain_stop(workspace: Workspace, result: Preflight) -> StopExplanation | None:
    """The STOP's explanation (``reconcile.stop.explain``), or ``None`` when the
    launch stopped for another reason. A STOP for items' worktrees alone still names
    only the run's items that are blocked now: one answered since (a conflict retried)
    waits for the next run, not for a human."""
    if result.status != "stop" or result.reason is not None:
        return None
    if not result.entries:
        if not result.trees:
            return None
        blocked, needs_human = current_waits(workspace.backlog_file, result.run or RunState())
        return StopExplanation(blocked=blocked, needs_human=needs_human)
    return explain(workspace.root, workspace.state_dir, workspace.backlog_file,
                   result.entries, result.run or RunState())


def render_dirty(result: Preflight) -> list[str]:
    lines = ["Error: the working tree has uncommitted changes; commit or stash them first:"]
    return lines + [f"  {line}" for line in result.lines] + config_note(result.entries)


def config_note(entries: list[StatusEntry]) -> list[str]:
    """A changed or new ``.forge.yaml`` is the operator's own configuration, never an
    agent's work — setting ``loop.agent`` there is what the "no agent" error asks —:
    say to commit it, since a launch takes only a committed tree."""
    if not any(entry.path == REPO_CONFIG for entry in entries):
        return []
    return [f"  note: {REPO_CONFIG} is git-forge's configuration: commit it "
            f"(git add {REPO_CONFIG} && git commit -m 'Configure git-forge'), then launch"]


def _stop_for(reason: str, json_output: bool) -> int:
    """STOP for a reason that is not the tree's: a live loop, or a living orphan."""
    if json_output:
        emit_json({"status": "stop", "run": None, "paths": [], "reason": reason})
    else:
        print(f"STOP: {reason}", file=sys.stderr)
    return PREFLIGHT_STOP


def judge(args: Args, reason: str | None, entries: list[StatusEntry],
          workspace: Workspace | None) -> int:
    """The verdict of ``git forge preflight`` where ``launch_probe.probe`` did not find a
    clean tree: ``reason`` to stop whatever the tree holds, or the tree's ``entries``
    judged against the project (``workspace``: found already when the command line
    names it)."""
    if reason is not None:
        return _stop_for(reason, args.json)
    workspace = workspace or locate(args.path, args.backlog)
    blocker = launch_blocker(workspace.state_dir, workspace.root)
    if blocker is not None:
        return _stop_for(blocker, args.json)
    result = check(workspace.root, workspace.state_dir, workspace.backlog_file, entries)
    explanation = explain_stop(workspace, result)
    if args.json:
        emit_json({**result.to_json(),  # and, after a run, what its evidence explains
                   **(explanation.to_json() if explanation is not None else {})})
    elif result.status == "stop":
        print("\n".join(render_stop(result, explanation, workspace.root)), file=sys.stderr)
    elif result.status == "dirty":
        print("\n".join(render_dirty(result)), file=sys.stderr)
    return 0 if result.status == "ok" else PREFLIGHT_STOP
