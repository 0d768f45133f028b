"""Execution: commit, stash, discard or leave exactly a group's paths, then re-read
the status to verify each is no longer dirty.

Stranded work is never lost and never touched without the operator's decision:
a discard runs only when confirmed, and only after the paths were saved under
``refs/forge/discarded/…`` (``tree.discard``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from git_forge.reconcile import messages
from git_forge.reconcile.attribution import Group, GroupKind, Plan
from git_forge.reconcile.errors import ReconcileError
from git_forge.tree.commit import commit_paths
from git_forge.tree.discard import discard_paths, restore_hint
from git_forge.tree.git_status import porcelain
from git_forge.tree.repo import Repo
from git_forge.tree.stash import stash_paths
from git_forge.tree.worktree import Action as GitAction
from git_forge.tree.worktree import refuse


class TreeAction(StrEnum):
    """What happens to a group's paths."""

    COMMIT = "commit"
    STASH = "stash"
    DISCARD = "discard"
    LEAVE = "leave"


#: The actions that change the tree, in the git adapter's words.
_CHANGES: dict[TreeAction, GitAction] = {TreeAction.COMMIT: "commit",
                                         TreeAction.STASH: "stash",
                                         TreeAction.DISCARD: "discard"}


@dataclass(frozen=True)
class Decision:
    """The operator's decision for one group; a discard also needs ``confirmed``."""

    action: TreeAction
    confirmed: bool = False

    def __post_init__(self) -> None:  # "commit" is accepted for TreeAction.COMMIT
        object.__setattr__(self, "action", TreeAction(self.action))


@dataclass(frozen=True)
class Action:
    """One decision carried out: the commit, stash or safety ref it made."""

    group: str
    action: TreeAction
    ref: str | None = None
    commit: str | None = None
    paths: tuple[str, ...] = ()
    verified: bool = True

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"group": self.group, "action": self.action.value}
        if self.ref:
            data["ref"] = self.ref
        if self.commit:
            data["commit"] = self.commit
        return data

    @property
    def restore_hints(self) -> list[str]:
        """How to put back what a discard saved (nothing for other actions)."""
        return restore_hint(self.ref) if self.action is TreeAction.DISCARD and self.ref else []


def commit_message(group: Group) -> str:
    if group.kind is GroupKind.ITEM:
        return messages.reconciled_item(str(group.item_id))
    if group.kind is GroupKind.RECOVERY:
        return messages.recovery_decisions()
    return messages.reconciled_unattributed()


def stash_message(group: Group) -> str:
    if group.kind is GroupKind.ITEM:
        return messages.reconciled_item_stash(str(group.item_id))
    return messages.reconciled_group_stash(group.id)


def _unconfirmed(group: Group) -> ReconcileError:
    return ReconcileError(f"discarding {group.id} needs a second, explicit confirmation")


def execute(repo: Repo, plan: Plan, decisions: Mapping[str, Decision]) -> list[Action]:
    """Carry out the decisions, group by group, and verify each by re-reading status.

    Every decision is checked first — an unknown group, an unconfirmed discard,
    or a path that commit, stash or discard cannot handle as git would
    (``worktree.refusals``) — so a refusal changes nothing at all, not even the
    groups before it.
    """
    for group_id, decision in decisions.items():
        group = plan.group(group_id)
        if decision.action is TreeAction.DISCARD and not decision.confirmed:
            raise _unconfirmed(group)
        if decision.action in _CHANGES:
            refuse(repo, group.paths, _CHANGES[decision.action])
    actions: list[Action] = []
    for group_id, decision in decisions.items():
        group = plan.group(group_id)
        paths = tuple(group.paths)
        if decision.action is TreeAction.LEAVE:
            actions.append(Action(group.id, TreeAction.LEAVE, paths=paths))
        elif decision.action is TreeAction.COMMIT:
            commit = commit_paths(repo, paths, commit_message(group))
            actions.append(Action(group.id, TreeAction.COMMIT, commit=commit, paths=paths))
        elif decision.action is TreeAction.STASH:
            commit = stash_paths(repo, paths, stash_message(group))
            actions.append(Action(group.id, TreeAction.STASH, ref="stash@{0}", commit=commit,
                                  paths=paths))
        else:
            safety = discard_paths(repo, paths)
            actions.append(Action(group.id, TreeAction.DISCARD, ref=safety.ref,
                                  commit=safety.commit_id, paths=paths))
    return verify(repo, actions)


def verify(repo: Repo, actions: list[Action]) -> list[Action]:
    """Re-read the status: a committed, stashed or discarded path is clean now."""
    dirty = {entry.path for entry in porcelain(repo)}
    checked = []
    for action in actions:
        if action.action is TreeAction.LEAVE:
            checked.append(action)
            continue
        still = [path for path in action.paths if path in dirty]
        checked.append(Action(action.group, action.action, action.ref, action.commit,
                              action.paths, verified=not still))
    return checked
