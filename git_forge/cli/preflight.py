"""``git forge preflight [PATH] [--backlog DIR] [--json]`` — the launch blocker.

Exit 0: go (silent). Exit 1: STOP — a prior run left stranded work, or the
tree is dirty without one. It runs before every launch: a clean tree is answered
from ``git status`` and the run's lock (``probe``), before the configuration is
even read.
"""

from __future__ import annotations

import sys

from git_forge.exit_codes import PREFLIGHT_STOP

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from pathlib import Path

    from git_forge.reconcile.preflight import Preflight
    from git_forge.reconcile.stop import StopExplanation
    from git_forge.tree.porcelain import StatusEntry
    from git_forge.workspace import Workspace


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from git_forge.cli.arguments import add_location

    parser = subparsers.add_parser(
        "preflight", help="stop a launch while a prior run's work is stranded",
        description="The launch blocker. Exit 0 when the working tree is clean; otherwise "
                    "STOP (exit 1), naming the prior run and listing the stranded paths.",
    )
    add_location(parser)
    parser.add_argument("--json", action="store_true",
                        help='print {"status": "ok"|"stop", "run": …, "paths": […]}')
    parser.set_defaults(func=run)


def _items(ids: list[str]) -> str:
    return ", ".join(ids) if ids else "none"


def render_stop(result: Preflight, explanation: StopExplanation | None = None,
                root: Path | None = None) -> list[str]:
    """The STOP message: the prior run, the stranded paths — split into those the
    run touched (its evidence) and those changed outside it —, the items' worktrees
    and branches holding work (paths shown relative to ``root``), and what to run
    next."""
    from git_forge.loop.state import RunState
    from git_forge.tree.porcelain import render_porcelain_line

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
        from git_forge.cli.render_trees import render_item_trees

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
    from git_forge.loop.state import RunState
    from git_forge.reconcile.stop import StopExplanation, current_waits, explain

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
    from git_forge.layout import REPO_CONFIG

    if not any(entry.path == REPO_CONFIG for entry in entries):
        return []
    return [f"  note: {REPO_CONFIG} is git-forge's configuration: commit it "
            f"(git add {REPO_CONFIG} && git commit -m 'Configure git-forge'), then launch"]


def _stop_for(reason: str, json_output: bool) -> int:
    """STOP for a reason that is not the tree's: a live loop, or a living orphan."""
    if json_output:
        from git_forge.cli.output import emit_json
        emit_json({"status": "stop", "run": None, "paths": [], "reason": reason})
    else:
        print(f"STOP: {reason}", file=sys.stderr)
    return PREFLIGHT_STOP


def probe(path: str) -> tuple[str, str | None, list[StatusEntry], bool]:
    """The checks that need no configuration, in their order: a live loop owning
    the tree or an agent of its last run still alive, a HEAD no commit can go onto,
    then the tree's status. What they found: the work tree's top, why the launch
    must stop whatever the tree holds (or ``None``), the entries of ``git status``,
    and whether items' worktrees or branches may exist (``False`` is certain)."""
    from git_forge.layout import ITEM_BRANCH_PREFIX, work_tree_top
    from git_forge.loop.control import launch_blocker
    from git_forge.tree.fast_status import launch_status, may_have_worktrees_or_branches

    root = work_tree_top(path)
    blocker = launch_blocker(None, root)
    if blocker is not None:
        return root, blocker, [], False
    problem, entries = launch_status(root)
    if problem is not None:  # refused exactly as loop run refuses it
        return root, problem, [], False
    return root, None, entries, may_have_worktrees_or_branches(root, ITEM_BRANCH_PREFIX)


def _names_a_location(args: argparse.Namespace) -> bool:
    """The command line names a backlog dir, or a ``PATH`` that is no directory: it is
    resolved (and refused) as every command resolves it, before any verdict — a clean
    tree does not make ``--backlog ../outside`` an answer of 0 where ``status`` says 2."""
    import os

    return args.backlog is not None or not os.path.isdir(args.path)


def _located(args: argparse.Namespace) -> Workspace:
    """The project as every command finds it, its configuration read: what a tree
    that is not clean is judged against. A clean one is answered without it."""
    from git_forge.workspace import locate

    return locate(args.path, args.backlog)


def run(args: argparse.Namespace) -> int:
    workspace = _located(args) if _names_a_location(args) else None
    _root, reason, entries, trees = probe(args.path)
    if reason is not None:
        return _stop_for(reason, args.json)
    if not entries and not trees:
        if args.json:
            from git_forge.cli.output import emit_json
            emit_json({"status": "ok", "run": None, "paths": []})
        return 0

    from git_forge.loop.control import launch_blocker
    from git_forge.reconcile.preflight import check

    workspace = workspace or _located(args)
    blocker = launch_blocker(workspace.state_dir, workspace.root)
    if blocker is not None:
        return _stop_for(blocker, args.json)
    result = check(workspace.root, workspace.state_dir, workspace.backlog_file, entries)
    explanation = explain_stop(workspace, result)
    if args.json:
        from git_forge.cli.output import emit_json
        document = result.to_json()
        if explanation is not None:
            document.update(explanation.to_json())
        emit_json(document)
    elif result.status == "stop":
        print("\n".join(render_stop(result, explanation, workspace.root)), file=sys.stderr)
    elif result.status == "dirty":
        print("\n".join(render_dirty(result)), file=sys.stderr)
    return 0 if result.status == "ok" else PREFLIGHT_STOP
