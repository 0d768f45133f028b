"""Execution: commit, stash, discard or leave exactly a group's paths, then re-read
the status to verify each is no longer dirty.

Stranded work is never lost and never touched without the operator's decision:
a discard runs only when confirmed, and only after the paths were saved under
``refs/forge/discarded/…`` (``tree.discard``).

A group in an item's worktree is acted on there: its commit goes onto the item's
branch (to be integrated like any of its commits), its stash into the one stash
list every worktree shares, its discard's safety ref is restored from there.
"""

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import NotRequired, TypedDict

from git_forge.reconcile import messages
from git_forge.reconcile.attribution import Group, GroupKind, Plan
from git_forge.reconcile.errors import ReconcileError
from git_forge.tree.commit import commit_paths
from git_forge.tree.discard import discard_paths, restore_hint
from git_forge.tree.git_status import porcelain
from git_forge.tree.repo import Repo, open_repo
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


class ActionJSON(TypedDict):
    """One decision carried out, as ``reconcile --json`` lists it."""

    group: str
    action: str
    ref: NotRequired[str]
    commit: NotRequired[str]
    worktree: NotRequired[str]


@dataclass(frozen=True)
class Action:
    """One decision carried out: the commit, stash or safety ref it made."""

    group: str
    action: TreeAction
    ref: str | None = None
    commit: str | None = None
    paths: tuple[str, ...] = ()
    verified: bool = True
    #: The item worktree it acted in (``None``: the main one).
    worktree: Path | None = None

    def to_json(self) -> ActionJSON:
        data: ActionJSON = {"group": self.group, "action": self.action.value}
        if self.ref:
            data["ref"] = self.ref
        if self.commit:
            data["commit"] = self.commit
        if self.worktree is not None:
            data["worktree"] = str(self.worktree)
        return data

    @property
    def restore_hints(self) -> list[str]:
        """How to put back what a discard saved (nothing for other actions); a
        worktree's, from that worktree."""
        if self.action is not TreeAction.DISCARD or not self.ref:
            return []
        hints = restore_hint(self.ref)
        if self.worktree is not None:
            where = f"git -C {shlex.quote(str(self.worktree))} "
            hints = [where + hint.removeprefix("git ") for hint in hints]
        return hints


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


def _opener(repo: Repo) -> Callable[[Group], Repo]:
    """The repository a group is acted on in: its item worktree's, else ``repo``."""
    opened: dict[Path, Repo] = {}

    def repo_for(group: Group) -> Repo:
        if group.worktree is None:
            return repo
        if group.worktree not in opened:
            opened[group.worktree] = open_repo(group.worktree)
        return opened[group.worktree]

    return repo_for


def execute(repo: Repo, plan: Plan, decisions: Mapping[str, Decision]) -> list[Action]:
    """Carry out the decisions, group by group, and verify each by re-reading status.

    Every decision is checked first — an unknown group, an unconfirmed discard,
    or a path that commit, stash or discard cannot handle as git would
    (``worktree.refusals``) — so a refusal changes nothing at all, not even the
    groups before it.
    """
    repo_for = _opener(repo)
    for group_id, decision in decisions.items():
        group = plan.group(group_id)
        if decision.action is TreeAction.DISCARD and not decision.confirmed:
            raise _unconfirmed(group)
        if decision.action in _CHANGES:
            refuse(repo_for(group), group.paths, _CHANGES[decision.action])
    actions: list[Action] = []
    for group_id, decision in decisions.items():
        group = plan.group(group_id)
        paths = tuple(group.paths)
        where = repo_for(group)
        if decision.action is TreeAction.LEAVE:
            action = Action(group.id, TreeAction.LEAVE, paths=paths)
        elif decision.action is TreeAction.COMMIT:
            commit = commit_paths(where, paths, commit_message(group))
            action = Action(group.id, TreeAction.COMMIT, commit=commit, paths=paths)
        elif decision.action is TreeAction.STASH:
            commit = stash_paths(where, paths, stash_message(group))
            action = Action(group.id, TreeAction.STASH, ref="stash@{0}", commit=commit,
                            paths=paths)
        else:
            safety = discard_paths(where, paths)
            action = Action(group.id, TreeAction.DISCARD, ref=safety.ref,
                            commit=safety.commit_id, paths=paths)
        actions.append(Action(action.group, action.action, action.ref, action.commit,
                              action.paths, worktree=group.worktree))
    return verify(repo, actions, repo_for=lambda action: repo_for(plan.group(action.group)))


def verify(repo: Repo, actions: list[Action],
           repo_for: Callable[[Action], Repo] | None = None) -> list[Action]:
    """Re-read the status (of each repository acted in): a committed, stashed or
    discarded path is clean now."""
    dirty: dict[Path, set[str]] = {}
    checked = []
    for action in actions:
        if action.action is TreeAction.LEAVE:
            checked.append(action)
            continue
        where = repo_for(action) if repo_for is not None else repo
        if where.workdir not in dirty:
            dirty[where.workdir] = {entry.path for entry in porcelain(where)}
        still = [path for path in action.paths if path in dirty[where.workdir]]
        checked.append(Action(action.group, action.action, action.ref, action.commit,
                              action.paths, verified=not still, worktree=action.worktree))
    return checked
