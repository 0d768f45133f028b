"""``git forge reconcile`` — stranded work: detect, attribute, decide, execute.

Without a decision nothing changes: on a terminal it asks one question per
group (discard needs a second confirmation listing the exact paths); otherwise
``--commit/--stash/--leave GROUP`` and ``--discard GROUP --confirm-discard``
decide, and ``--integrate ITEM`` brings an item's branch onto the branch checked
out. A clean tree is silent, but for a note on backlog.json's queued change (no
stranded work: the next run commits it first). Exit 0 when the tree (and every
item's worktree and branch) is clean afterwards, 6 when stranded work remains.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

from git_forge.cli import ask
from git_forge.cli.args import Args
from git_forge.cli.arguments import add_location
from git_forge.cli.output import emit_json, note, paint
from git_forge.cli.render_trees import render_item_trees
from git_forge.errors import UsageError
from git_forge.exit_codes import EXIT_INTERRUPTED, RECONCILE_TREE_DIRTY
from git_forge.loop.control import live_loop, refuse_if_live, tree_owner
from git_forge.reconcile.execution import Decision, TreeAction
from git_forge.reconcile.merge_queue import Conflicted, Integrated
from git_forge.reconcile.preflight import refuse_corrupt_backlog_commit
from git_forge.reconcile.service import reconcile_tree
from git_forge.tree.discard import restore_discarded
from git_forge.tree.repo import open_repo
from git_forge.words import counted
from git_forge.workspace import locate

if TYPE_CHECKING:
    import argparse
    from pathlib import Path

    from git_forge.reconcile.attribution import Plan
    from git_forge.reconcile.execution import Action
    from git_forge.reconcile.merge_queue import Outcome
    from git_forge.reconcile.service import QueuedBacklogJSON, ReconcileReport


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Detect uncommitted work, attribute it to backlog items (candidates, "
        "from state.json, events.ndjson, item commits and stashes), and commit, "
        "stash, discard or leave each group. Nothing changes without a decision. "
        "Items' abandoned work kept under refs/forge/abandoned/ is listed with the "
        "commands to see, restore and drop it.")
    add_location(parser)
    parser.add_argument("--commit", action="append", default=[], metavar="GROUP",
                        help="commit the group's paths ([forge] <id>: stranded work (reconciled))")
    parser.add_argument("--stash", action="append", default=[], metavar="GROUP",
                        help="stash exactly the group's paths (onto the stash list, as git "
                             "stash does)")
    parser.add_argument("--discard", action="append", default=[], metavar="GROUP",
                        help="discard the group's paths (needs --confirm-discard; saved to "
                             "refs/forge/discarded/<time> first)")
    parser.add_argument("--confirm-discard", action="store_true",
                        help="the second, explicit confirmation a discard needs")
    parser.add_argument("--leave", action="append", default=[], metavar="GROUP",
                        help="leave the group as it is")
    parser.add_argument("--integrate", action="append", default=[], metavar="ITEM",
                        help="integrate item ITEM's branch (forge/ITEM) onto the branch "
                             "checked out: its commits replayed onto the tip, then a "
                             "fast-forward; a conflict changes nothing")
    parser.add_argument("--restore", metavar="REF",
                        help="put back what a discard saved under REF")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=run)


def _flag_decisions(args: Args) -> dict[str, Decision]:
    decisions: dict[str, Decision] = {}
    for action in TreeAction:
        for group in getattr(args, action.value):
            if group in decisions:
                raise UsageError(f"group {group} has two decisions")
            decisions[group] = Decision(action, confirmed=args.confirm_discard)
    if args.discard and not args.confirm_discard:
        raise UsageError("--discard needs --confirm-discard (a discard is confirmed twice)")
    return decisions


_TITLES = {"item": "candidate of item {}", "recovery": "this recovery's own backlog change",
           "unattributed": "not attributable to any item"}


def render_plan(plan: Plan, root: Path | None = None) -> list[str]:
    lines: list[str] = []
    if plan.groups and all(group.kind == "recovery" for group in plan.groups):
        # recover's own answers, to commit: queued work, not stranded (see the note)
        lines.append(paint("This recovery's change", "bold") + ":")
    elif plan.groups:
        lines.append(paint("Stranded work", "bold")
                     + " (attributions are candidates, not facts):")
    for group in plan.groups:
        title = _TITLES[group.kind].format(group.item_id)
        if group.worktree is not None:
            title = f"in item {group.item_id}'s worktree"
        lines.append(f"  {paint(group.id, 'cyan')}  {title}")
        lines += [f"      evidence: {note}" for note in group.evidence]
        lines += [f"      {line}" for line in group.lines]
    if plan.branches:
        lines.append(f"Items' branches not on {plan.onto or 'HEAD'} (never integrated or "
                     "dropped by git-forge on its own):")
        lines += render_item_trees(plan.branches, plan.onto, root)
    if plan.stashes:
        lines.append("Items' abandoned work, kept or stashed (never applied or dropped by "
                     "git-forge):")
        for stash in plan.stashes:
            lines.append(f"  {stash.ref}  item {stash.item_id}: {stash.message}")
            lines += [f"      {hint}" for hint in stash.hints]
    lines += [f"  note: {note}" for note in plan.notes]
    return lines


def render_actions(actions: Iterable[Action]) -> list[str]:
    lines = []
    for action in actions:
        if action.action == "commit":
            text = f"committed as {str(action.commit)[:12]}"
        elif action.action == "stash":
            text = f"stashed as {action.ref} ({str(action.commit)[:12]})"
        elif action.action == "discard":
            text = f"discarded; saved to {action.ref}; restore with: " + action.restore_hints[0]
        else:
            text = "left as it is"
        if not action.verified:
            text += " — but some paths are still dirty"
        lines.append(f"  {action.group}: {text}")
    return lines


def render_integrations(outcomes: Iterable[Outcome]) -> list[str]:
    lines = []
    for outcome in outcomes:
        if isinstance(outcome, Integrated):
            if outcome.commits:
                text = (f"integrated: {counted(len(outcome.commits), 'commit')}, the branch is at "
                        f"{outcome.tip[:12]}")
            else:
                text = "already on the branch"
            if outcome.kept:
                text += f"; kept: {outcome.kept}"
        elif isinstance(outcome, Conflicted):
            text = f"not integrated — {outcome.reason}"
        else:
            text = f"not integrated — {outcome.reason}"
        lines.append(f"  item {outcome.item_id}: {text}")
    return lines


def queued_text(queued: QueuedBacklogJSON) -> str:
    """backlog.json's queued change (``QueuedBacklog.to_json``), said as what it is:
    whose (recover's answers, by the decision record) or what it changes, and that
    the next run commits it."""
    answered = queued["recoverAnswers"]
    if answered:
        return (f"{queued['path']} holds recover's answers to "
                f"{counted(len(answered), 'item')} ({', '.join(answered)}), not committed: "
                "queued for the next loop run, which commits it first — not stranded work")
    return (f"{queued['path']} has queued changes ({queued['changes']}), not committed: "
            "the next loop run commits them first — not stranded work")


class _Cancelled(Exception):
    """The operator cancelled at a prompt (Ctrl-C, end of input): every prompt comes
    before any action, so nothing was done."""


def ask_decisions(plan: Plan, *, commit_recovery: bool = False) -> dict[str, Decision]:
    """One question per group on a terminal; discard is confirmed a second time.
    The default is always to leave the work, except recover's own backlog change."""
    decisions: dict[str, Decision] = {}
    for group in plan.groups:
        what = f"commit for item {group.item_id}" if group.kind == "item" else "commit"
        default = what if group.kind == "recovery" and commit_recovery else "leave"
        # recover's own change holds answers the decision record says are applied:
        # stashed or discarded, the items would be blocked again behind a record that
        # says otherwise (``decision revoke`` takes an answer back)
        options = ([("c", what), ("l", "leave")] if group.kind == "recovery" else
                   [("c", what), ("s", "stash"), ("d", "discard"), ("l", "leave")])
        choice = ask.choose(f"{group.id}:", options, default=default)
        if choice == "discard":
            print("These paths will be discarded (saved to refs/forge/discarded/… first):")
            for line in group.lines:
                print(f"    {line}")
            if not ask.confirm("Discard exactly these paths?"):
                choice = "leave"
        action = TreeAction.COMMIT if choice.startswith("commit") else TreeAction(choice)
        decisions[group.id] = Decision(action, confirmed=action is TreeAction.DISCARD)
    return decisions


def ask_branches(plan: Plan, conflicts: frozenset[str]) -> dict[str, str]:
    """One question per unintegrated item branch on a terminal: integrate it now
    (the step ``--integrate`` runs), leave it, or — for a merge conflict — retry it
    on the new tip. The default is to leave it. A branch whose worktree is in the
    middle of a rebase (or merge…) is not asked about: its hint says to finish that."""
    choices: dict[str, str] = {}
    for tree in plan.branches:
        if tree.branch is None or tree.operation is not None:
            continue  # mid-rebase (or merge…): its hint says to finish that first
        options = [("i", "integrate now"), ("l", "leave")]
        if tree.item_id in conflicts:
            options.insert(1, ("r", "retry on the new tip"))
        choice = ask.choose(f"item {tree.item_id} ({tree.branch}):", options, default="leave")
        choices[tree.item_id] = choice.split(" ")[0]
    return choices


def render_retried(report: ReconcileReport) -> list[str]:
    lines = []
    for record in report.retried:
        kept = f"its attempt is kept at {record.retried_ref}" if record.retried_ref else \
            "its branch was gone already"
        lines.append(f"  item {record.item_id}: retried on the new tip — {kept}; back to "
                     "pending, the next run starts it afresh")
    lines += [f"  item {item}: landed, done" for item in report.landed]
    return lines


def run(args: Args) -> int:
    workspace = locate(args.path, args.backlog)
    acting = bool(args.restore or args.commit or args.stash or args.discard or args.integrate)
    if acting:  # the tree belongs to a live loop: its agent's work is not stranded
        refuse_if_live(workspace.state_dir, workspace.root)
    live = live_loop(workspace.state_dir) or tree_owner(workspace.root)
    if args.restore:
        restored = restore_discarded(open_repo(workspace.root), args.restore)
        if args.json:
            emit_json({"restored": restored, "ref": args.restore})
        else:
            print(f"restored {counted(len(restored), 'path')} from {args.restore}")
        return 0

    def refuse_corrupt_commit(decisions: dict[str, Decision], plan: Plan) -> None:
        refuse_corrupt_backlog_commit(
            [(group_id, plan.group(group_id).paths) for group_id, decision in decisions.items()
             if decision.action == "commit"], workspace.root, workspace.backlog_file)

    def decide(plan: Plan) -> dict[str, Decision]:
        decisions = _flag_decisions(args)
        for group_id in decisions:
            plan.group(group_id)  # an unknown group is refused before anything runs
        refuse_corrupt_commit(decisions, plan)  # …and before the plan is printed
        pending = bool(plan.groups or plan.branches)
        if not args.json and (pending or plan.stashes):  # kept work is listed on a clean tree too
            if live is not None and pending:
                note(f"a loop is running on this backlog ({live.described}); these changes "
                     "may be its agent's work in progress, and nothing is reconciled until "
                     "it ends")
            print("\n".join(render_plan(plan, workspace.root)))
        if not pending:
            return {}
        if (plan.groups and not decisions and not args.json and ask.interactive()
                and live is None):
            try:
                decisions = ask_decisions(plan)
            except KeyboardInterrupt:  # Ctrl-C, or end of input (``ask.InputClosed``)
                raise _Cancelled from None
            refuse_corrupt_commit(decisions, plan)
        return decisions

    # On a terminal with nothing decided by flags, the branches are asked about too.
    dialogue = (not args.json and not acting and live is None and ask.interactive())
    def branches(plan: Plan, conflicts: frozenset[str]) -> dict[str, str]:
        try:
            return ask_branches(plan, conflicts)
        except KeyboardInterrupt:
            raise _Cancelled from None

    try:
        report = reconcile_tree(workspace, decide, integrate=args.integrate,
                                choose_branches=branches if dialogue else None)
    except _Cancelled:  # every prompt comes before any action: nothing was done
        print("\ncancelled: the tree is left as it is", file=sys.stderr)
        return EXIT_INTERRUPTED
    if args.json:
        emit_json(report.to_json())
    elif (report.plan.groups or report.plan.branches or report.integrations
          or report.retried):
        if report.actions:
            print("Actions:")
            print("\n".join(render_actions(report.actions)))
        if report.integrations:
            print("Integrations:")
            print("\n".join(render_integrations(report.integrations)))
        if report.retried or report.landed:
            print("\n".join(render_retried(report)))
        for line in report.notes:
            print(f"  note: {line}")
        if (report.actions or report.integrations or report.retried) and report.trees_left:
            print(f"Items' worktrees and branches still holding work not on "
                  f"{report.plan.onto or 'HEAD'}:")
            print("\n".join(render_item_trees(report.trees_left, report.plan.onto,
                                               workspace.root)))
        if (not report.clean and not report.actions and not report.integrations
                and not report.retried):
            print("Nothing was changed. Decide with --commit/--stash/--leave GROUP, "
                  "--discard GROUP --confirm-discard or --integrate ITEM.", file=sys.stderr)
    if report.queued is not None and not args.json:
        print(f"note: {queued_text(report.queued.to_json())}")
    return 0 if report.clean else RECONCILE_TREE_DIRTY
