"""The one reconcile use case: detect → attribute → decide → execute → re-check.

``git forge reconcile`` and recover's step 7 both run it; only how a decision
is reached differs (flags, a terminal dialogue, recover's default of
committing its own backlog change), so that is the caller's ``decide``.
Refusals a caller puts in ``decide`` (an unknown group, a corrupt backlog.json
about to be committed) come before anything changes.

The items' worktrees and branches a parallel run left are part of it: dirty
worktrees are groups, unintegrated branches are listed, and ``integrate`` runs
the merge queue's step by hand for the items named — after the decisions, so
that ``--commit item-003 --integrate 003`` commits a worktree's work onto its
branch and then brings it onto the loop's branch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from git_forge.reconcile.attribution import Plan, plan
from git_forge.reconcile.errors import ReconcileError
from git_forge.reconcile.evidence import gather
from git_forge.reconcile.execution import Action, Decision, execute
from git_forge.reconcile.item_trees import ItemTree, item_trees, loop_branch
from git_forge.reconcile.merge_queue import Conflicted, Integrated, Outcome, integrate_item
from git_forge.reconcile.messages import item_branch
from git_forge.reconcile.preflight import stranded
from git_forge.tree.git_status import porcelain
from git_forge.tree.porcelain import StatusEntry
from git_forge.tree.repo import open_repo

if TYPE_CHECKING:
    from git_forge.workspace import Workspace

#: Given what attribution found, the decision for each group to act on (a group
#: left out is left as it is, and reported as nothing).
Decide = Callable[[Plan], Mapping[str, Decision]]


@dataclass(frozen=True)
class ReconcileReport:
    """What reconciliation found, what it did, and the stranded work left after."""

    plan: Plan
    actions: tuple[Action, ...] = ()
    remaining: tuple[StatusEntry, ...] = ()
    #: What ``integrate`` did, item by item.
    integrations: tuple[Outcome, ...] = ()
    #: Items' worktrees and branches still holding stranded work afterwards.
    trees_left: tuple[ItemTree, ...] = ()

    @property
    def clean(self) -> bool:
        """No stranded work is left in the tree, nor in an item's worktree or branch."""
        return not self.remaining and not self.trees_left

    def to_json(self) -> dict[str, Any]:
        """The ``reconcile --json`` document (also recover's ``tree``). ``branches``
        and ``integrations`` appear only when there are any."""
        document: dict[str, Any] = {
            "groups": [group.to_json() for group in self.plan.groups],
            "stashes": [stash.to_json() for stash in self.plan.stashes],
            "actions": [action.to_json() for action in self.actions]}
        if self.plan.branches:
            document["branches"] = [{**tree.to_json(), "hints": tree.hints(self.plan.onto)}
                                    for tree in self.plan.branches]
        if self.integrations:
            document["integrations"] = [integration_json(o) for o in self.integrations]
        return document


def integration_json(outcome: Outcome) -> dict[str, Any]:
    """One merge-queue outcome as ``reconcile --json`` lists it."""
    if isinstance(outcome, Integrated):
        return {"itemId": outcome.item_id, "outcome": "integrated",
                "commits": list(outcome.commits), "tip": outcome.tip, "kept": outcome.kept}
    if isinstance(outcome, Conflicted):
        return {"itemId": outcome.item_id, "outcome": "conflict", "commit": outcome.commit,
                "paths": list(outcome.paths), "collidedWith": list(outcome.collided_with),
                "reason": outcome.reason}
    return {"itemId": outcome.item_id, "outcome": "refused", "reason": outcome.reason}


def reconcile_tree(workspace: Workspace, decide: Decide, *,
                   recovery_paths: Iterable[str] = (),
                   integrate: Sequence[str] = ()) -> ReconcileReport:
    """Reconcile the stranded work in ``workspace``'s tree as ``decide`` says.

    ``recovery_paths``: recover's own backlog change, its own group. ``decide``
    is called once, also when nothing is stranded (so it can refuse a decision
    for a group that does not exist). ``integrate``: items whose ``forge/<id>``
    branch to integrate onto the branch checked out here, after the decisions;
    an item without such a branch is refused before anything changes. Every
    failure is a ``ForgeError``.
    """
    repo = open_repo(workspace.root)

    def stranded_now() -> list[StatusEntry]:
        return stranded(porcelain(repo), workspace.root, workspace.state_dir,
                        workspace.backlog_file)

    def trees_now() -> list[ItemTree]:
        return item_trees(workspace.root, workspace.state_dir, workspace.backlog_file)

    trees = trees_now()
    onto = loop_branch(workspace.root) if trees or integrate else None
    found = plan(repo, gather(workspace.state_dir), stranded_now(),
                 recovery_paths=recovery_paths, trees=trees, onto=onto)
    _check_integrations(integrate, trees, onto)
    decisions = decide(found)
    actions = execute(repo, found, decisions) if decisions else []
    integrations = tuple(integrate_item(workspace.root, workspace.state_dir, item, str(onto))
                         for item in integrate)
    # Nothing was stranded a moment ago and nothing was done: no second status read.
    remaining = stranded_now() if found.groups else []
    left = [tree for tree in trees_now() if tree.stranded] if trees else []
    return ReconcileReport(found, tuple(actions), tuple(remaining), integrations, tuple(left))


def _check_integrations(items: Sequence[str], trees: list[ItemTree], onto: str | None) -> None:
    """Refuse ``--integrate`` for an item with no branch, or with nothing to put it on."""
    if not items:
        return
    if onto is None:
        raise ReconcileError("HEAD is detached: check out the branch to integrate onto first")
    branches = {tree.item_id for tree in trees if tree.branch is not None}
    unknown = [item for item in items if item not in branches]
    if unknown:
        known = ", ".join(sorted(branches)) or "none"
        raise ReconcileError(f"no branch {item_branch(unknown[0])} to integrate "
                             f"(items with a branch: {known})")
