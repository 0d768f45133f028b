"""Tree reconciliation: detect → attribute → decide → execute.

Stranded work is never lost and never touched without the operator's decision.

* **Detect** — the one porcelain status, git's own (untracked files one by one,
  ignored files never), minus the runner's own changes (state files, a crashed
  run's ``in_progress`` mark in backlog.json).
* **Attribute** — best effort, always *candidates*: a dirty path that item X's
  commits touched since the run's base commit is a candidate of X; any other
  dirty path is a candidate of the item in flight when the run died; the rest
  is unattributed. Missing or unreadable evidence degrades to one unattributed
  group; detection never aborts. Inside ``recover``, its own backlog.json
  change is the ``recovery`` group. Stashes that name an item are stranded
  work too; they are listed (with the git commands to inspect them), never
  applied or dropped.
* **Execute** — commit, stash or discard exactly a group's paths (discard only
  after saving them under ``refs/forge/discarded/…``), then re-read the status
  to verify the paths are no longer dirty.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from git_forge.reconcile import messages
from git_forge.reconcile.messages import item_of_stash, item_of_subject
from git_forge.tree.commit import commit_paths
from git_forge.tree.discard import discard_paths, restore_hint
from git_forge.tree.errors import GitError
from git_forge.tree.history import log_subjects, stash_list
from git_forge.tree.porcelain import StatusEntry, render_porcelain_line
from git_forge.tree.repo import Repo
from git_forge.tree.stash import stash_paths
from git_forge.tree.status import porcelain
from git_forge.tree.worktree import refuse

GroupKind = Literal["item", "recovery", "unattributed"]
ActionName = Literal["commit", "stash", "discard", "leave"]
ACTIONS: tuple[ActionName, ...] = ("commit", "stash", "discard", "leave")


@dataclass(frozen=True)
class Evidence:
    """What the prior run left to attribute by (state.json, events.ndjson)."""

    base_commit: str | None = None
    in_flight: str | None = None
    citations: tuple[str, ...] = ()
    problem: str | None = None

    @property
    def usable(self) -> bool:
        return self.problem is None and (self.base_commit is not None or
                                         self.in_flight is not None)


@dataclass
class Group:
    id: str
    kind: GroupKind
    item_id: str | None
    entries: list[StatusEntry]
    evidence: list[str] = field(default_factory=list)

    @property
    def paths(self) -> list[str]:
        return [entry.path for entry in self.entries]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "itemId": self.item_id, "candidate": True,
                "paths": [{"path": e.path, "xy": e.xy} for e in self.entries],
                "evidence": list(self.evidence)}


@dataclass(frozen=True)
class StrandedStash:
    ref: str
    item_id: str
    message: str
    paths: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"ref": self.ref, "itemId": self.item_id, "message": self.message,
                "paths": list(self.paths)}

    @property
    def hints(self) -> list[str]:
        return [f"git stash show --include-untracked -p {self.ref}",
                f"git stash apply {self.ref}"]


@dataclass
class Plan:
    """Everything reconciliation found: the groups to decide and stranded stashes."""

    groups: list[Group]
    stashes: list[StrandedStash]
    notes: list[str] = field(default_factory=list)

    def group(self, group_id: str) -> Group:
        for group in self.groups:
            if group.id == group_id:
                return group
        known = ", ".join(g.id for g in self.groups) or "none"
        raise GitError(f"no group {group_id} to reconcile (groups: {known})", exit_code=2)


@dataclass(frozen=True)
class Decision:
    action: ActionName
    confirmed: bool = False


@dataclass(frozen=True)
class Action:
    group: str
    action: ActionName
    ref: str | None = None
    commit: str | None = None
    paths: tuple[str, ...] = ()
    verified: bool = True

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"group": self.group, "action": self.action}
        if self.ref:
            data["ref"] = self.ref
        if self.commit:
            data["commit"] = self.commit
        return data


def stranded_stashes(repo: Repo) -> list[StrandedStash]:
    """Stash entries whose message names an item (``… from item <id>``)."""
    found = []
    for entry in stash_list(repo):
        item = item_of_stash(entry.message)
        if item is not None:
            found.append(StrandedStash(entry.ref, item, entry.message, entry.paths))
    return found


def _item_paths(repo: Repo, base: str) -> dict[str, tuple[str, str]]:
    """path → (item id, commit) of the latest item commit since ``base`` touching it."""
    owners: dict[str, tuple[str, str]] = {}
    for commit in log_subjects(repo, base):
        item = item_of_subject(commit.subject)
        if item is None:
            continue
        for path in commit.paths:
            owners[path] = (item, commit.id[:12])
    return owners


def plan(repo: Repo, evidence: Evidence, entries: list[StatusEntry], *,
         recovery_paths: Iterable[str] = ()) -> Plan:
    """Attribute the stranded ``entries`` (the runner's own changes already left out,
    see ``preflight.stranded``). ``recovery_paths``: recover's own backlog change."""
    recovery = set(recovery_paths)
    notes: list[str] = []
    owners: dict[str, tuple[str, str]] = {}
    in_flight = None
    if evidence.usable:
        in_flight = evidence.in_flight
        if evidence.base_commit:
            try:
                owners = _item_paths(repo, evidence.base_commit)
            except GitError as exc:
                notes.append(f"git log {evidence.base_commit[:12]}..HEAD failed: {exc.message}")
    elif evidence.problem:
        notes.append(f"run evidence unusable ({evidence.problem}): nothing is attributed")

    groups: dict[str, Group] = {}

    def group_for(key: str, kind: GroupKind, item_id: str | None) -> Group:
        if key not in groups:
            groups[key] = Group(key, kind, item_id, [], list(evidence.citations)
                                if kind == "item" else [])
        return groups[key]

    for entry in entries:
        if entry.path in recovery:
            group = group_for("recovery", "recovery", None)
            if not group.evidence:
                group.evidence.append("changed by this recovery (answers applied to the backlog)")
        elif entry.path in owners:
            item, commit = owners[entry.path]
            group = group_for(f"item-{item}", "item", item)
            group.evidence.append(f"{entry.path}: touched by item {item}'s commit {commit}")
        elif in_flight is not None:
            group = group_for(f"item-{in_flight}", "item", in_flight)
            note = f"item {in_flight} was in flight when the run stopped"
            if note not in group.evidence:
                group.evidence.append(note)
        else:
            group = group_for("unattributed", "unattributed", None)
        group.entries.append(entry)

    def order(group: Group) -> tuple:
        rank = {"item": 0, "recovery": 1, "unattributed": 2}[group.kind]
        item = group.item_id or ""
        return (rank, (0, int(item)) if item.isdigit() else (1, item))

    try:
        stashes = stranded_stashes(repo)
    except GitError as exc:
        stashes = []
        notes.append(f"cannot read the stash list: {exc.message}")
    return Plan(sorted(groups.values(), key=order), stashes, notes)


def commit_message(group: Group) -> str:
    if group.kind == "item":
        return messages.reconciled_item(str(group.item_id))
    if group.kind == "recovery":
        return messages.recovery_decisions()
    return messages.reconciled_unattributed()


def stash_message(group: Group) -> str:
    if group.kind == "item":
        return messages.reconciled_item_stash(str(group.item_id))
    return messages.reconciled_group_stash(group.id)


def execute(repo: Repo, plan_: Plan, decisions: Mapping[str, Decision]) -> list[Action]:
    """Carry out the decisions, group by group, and verify each by re-reading status.

    A discard runs only when its decision is confirmed, and only after the
    paths were saved to a safety ref. Every decision is checked first — an
    unconfirmed discard, or a path that commit, stash or discard cannot handle
    as git would (``worktree.refusals``) — so a refusal changes nothing at all,
    not even the groups before it.
    """
    for group_id, decision in decisions.items():
        group = plan_.group(group_id)
        if decision.action == "discard" and not decision.confirmed:
            raise GitError(f"discarding {group.id} needs a second, explicit confirmation",
                           exit_code=2)
        if decision.action in ("commit", "stash", "discard"):
            refuse(repo, group.paths, decision.action)
    actions: list[Action] = []
    for group_id, decision in decisions.items():
        group = plan_.group(group_id)
        paths = tuple(group.paths)
        if decision.action == "leave":
            actions.append(Action(group.id, "leave", paths=paths))
        elif decision.action == "commit":
            commit = commit_paths(repo, paths, commit_message(group))
            actions.append(Action(group.id, "commit", commit=commit, paths=paths))
        elif decision.action == "stash":
            commit = stash_paths(repo, paths, stash_message(group))
            actions.append(Action(group.id, "stash", ref="stash@{0}", commit=commit, paths=paths))
        elif decision.action == "discard":
            if not decision.confirmed:
                raise GitError(f"discarding {group.id} needs a second, explicit confirmation",
                               exit_code=2)
            safety = discard_paths(repo, paths)
            actions.append(Action(group.id, "discard", ref=safety.ref, commit=safety.commit_id,
                                  paths=paths))
        else:  # pragma: no cover - the CLI only passes known actions
            raise GitError(f"unknown action {decision.action}", exit_code=2)
    return verify(repo, actions)


def verify(repo: Repo, actions: list[Action]) -> list[Action]:
    """Re-read the status: a committed, stashed or discarded path is clean now."""
    dirty = {entry.path for entry in porcelain(repo)}
    checked = []
    for action in actions:
        if action.action == "leave":
            checked.append(action)
            continue
        still = [path for path in action.paths if path in dirty]
        checked.append(Action(action.group, action.action, action.ref, action.commit,
                              action.paths, verified=not still))
    return checked


def discard_hints(action: Action) -> list[str]:
    return restore_hint(action.ref) if action.ref else []


def porcelain_lines(group: Group) -> list[str]:
    return [render_porcelain_line(entry) for entry in group.entries]
