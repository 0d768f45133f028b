"""Attribution: which item each stranded path is a *candidate* of.

Best effort, always candidates: a dirty path that item X's commits touched
since the run's base commit is a candidate of X; any other dirty path is a
candidate of the item in flight when the run died; the rest is unattributed.
Missing or unreadable evidence degrades to one unattributed group; attribution
never aborts. Inside ``recover``, its own backlog.json change is the
``recovery`` group. Stashes that name an item are stranded work too; they are
listed (with the git commands to inspect them), never applied or dropped.

The stranded entries come from ``preflight.stranded`` (git's own porcelain
status, less the runner's own changes); item commits and stashes are
recognised by the parsers in ``messages``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from git_forge.backlog.topology import id_key
from git_forge.reconcile.errors import ReconcileError
from git_forge.reconcile.evidence import Evidence
from git_forge.reconcile.messages import item_of_stash, item_of_subject
from git_forge.tree.errors import GitError
from git_forge.tree.history import log_subjects, stash_list
from git_forge.tree.porcelain import StatusEntry, render_porcelain_line
from git_forge.tree.repo import Repo


class GroupKind(StrEnum):
    """Whose work a group is a candidate of; also the order groups are listed in."""

    ITEM = "item"
    RECOVERY = "recovery"
    UNATTRIBUTED = "unattributed"


_RANK = {GroupKind.ITEM: 0, GroupKind.RECOVERY: 1, GroupKind.UNATTRIBUTED: 2}


@dataclass(frozen=True)
class Group:
    """Stranded entries decided together, with the evidence that grouped them."""

    id: str
    kind: GroupKind
    item_id: str | None
    entries: tuple[StatusEntry, ...]
    evidence: tuple[str, ...] = ()

    @property
    def paths(self) -> list[str]:
        return [entry.path for entry in self.entries]

    @property
    def lines(self) -> list[str]:
        """Each path as ``git status --porcelain`` prints it."""
        return [render_porcelain_line(entry) for entry in self.entries]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind.value, "itemId": self.item_id,
                "candidate": True, "paths": [{"path": e.path, "xy": e.xy} for e in self.entries],
                "evidence": list(self.evidence)}


@dataclass(frozen=True)
class StrandedStash:
    """A stash entry whose message names an item."""

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


@dataclass(frozen=True)
class Plan:
    """Everything attribution found: the groups to decide and stranded stashes."""

    groups: tuple[Group, ...]
    stashes: tuple[StrandedStash, ...]
    notes: tuple[str, ...] = ()

    def group(self, group_id: str) -> Group:
        for group in self.groups:
            if group.id == group_id:
                return group
        known = ", ".join(g.id for g in self.groups) or "none"
        raise ReconcileError(f"no group {group_id} to reconcile (groups: {known})")


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


@dataclass
class _Building:
    """A group while entries are added to it."""

    kind: GroupKind
    item_id: str | None
    entries: list[StatusEntry]
    evidence: list[str]


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

    groups: dict[str, _Building] = {}

    def group_for(key: str, kind: GroupKind, item_id: str | None) -> _Building:
        if key not in groups:
            groups[key] = _Building(kind, item_id, [], list(evidence.citations)
                                    if kind is GroupKind.ITEM else [])
        return groups[key]

    for entry in entries:
        if entry.path in recovery:
            group = group_for("recovery", GroupKind.RECOVERY, None)
            if not group.evidence:
                group.evidence.append("changed by this recovery (answers applied to the backlog)")
        elif entry.path in owners:
            item, commit = owners[entry.path]
            group = group_for(f"item-{item}", GroupKind.ITEM, item)
            group.evidence.append(f"{entry.path}: touched by item {item}'s commit {commit}")
        elif in_flight is not None:
            group = group_for(f"item-{in_flight}", GroupKind.ITEM, in_flight)
            note = f"item {in_flight} was in flight when the run stopped"
            if note not in group.evidence:
                group.evidence.append(note)
        else:
            group = group_for("unattributed", GroupKind.UNATTRIBUTED, None)
        group.entries.append(entry)

    built = sorted((Group(key, g.kind, g.item_id, tuple(g.entries), tuple(g.evidence))
                    for key, g in groups.items()),
                   key=lambda group: (_RANK[group.kind], id_key(group.item_id or "")))
    try:
        stashes = stranded_stashes(repo)
    except GitError as exc:
        stashes = []
        notes.append(f"cannot read the stash list: {exc.message}")
    return Plan(tuple(built), tuple(stashes), tuple(notes))
