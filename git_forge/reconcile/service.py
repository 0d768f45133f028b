"""The one reconcile use case: detect → attribute → decide → execute → re-check.

``git forge reconcile`` and recover's step 7 both run it; only how a decision
is reached differs (flags, a terminal dialogue, recover's default of
committing its own backlog change), so that is the caller's ``decide``.
Refusals a caller puts in ``decide`` (an unknown group, a corrupt backlog.json
about to be committed) come before anything changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from git_forge.reconcile.attribution import Plan, plan
from git_forge.reconcile.evidence import gather
from git_forge.reconcile.execution import Action, Decision, execute
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

    @property
    def clean(self) -> bool:
        """No stranded work is left in the tree."""
        return not self.remaining

    def to_json(self) -> dict[str, Any]:
        """The ``reconcile --json`` document (also recover's ``tree``)."""
        return {"groups": [group.to_json() for group in self.plan.groups],
                "stashes": [stash.to_json() for stash in self.plan.stashes],
                "actions": [action.to_json() for action in self.actions]}


def reconcile_tree(workspace: Workspace, decide: Decide, *,
                   recovery_paths: Iterable[str] = ()) -> ReconcileReport:
    """Reconcile the stranded work in ``workspace``'s tree as ``decide`` says.

    ``recovery_paths``: recover's own backlog change, its own group. ``decide``
    is called once, also when nothing is stranded (so it can refuse a decision
    for a group that does not exist). Every failure is a ``ForgeError``.
    """
    repo = open_repo(workspace.root)

    def stranded_now() -> list[StatusEntry]:
        return stranded(porcelain(repo), workspace.root, workspace.state_dir,
                        workspace.backlog_file)

    found = plan(repo, gather(workspace.state_dir), stranded_now(),
                 recovery_paths=recovery_paths)
    decisions = decide(found)
    actions = execute(repo, found, decisions) if decisions else []
    # Nothing was stranded a moment ago and nothing was done: no second status read.
    remaining = stranded_now() if found.groups else []
    return ReconcileReport(found, tuple(actions), tuple(remaining))
