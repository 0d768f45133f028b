"""Attribution: which item each stranded path is a *candidate* of.

Best effort, always candidates: a dirty path that item X's commits touched
since the run's base commit is a candidate of X; any other dirty path is a
candidate of the item in flight when the run died; the rest is unattributed.
Missing or unreadable evidence degrades to one unattributed group; attribution
never aborts. Inside ``recover``, its own backlog.json change is the
``recovery`` group. An item's abandoned work kept under
``refs/forge/abandoned/<id>/…``, and stashes that name an item (the loop put
abandoned work on the stash list before it kept it under its own refs), are
stranded work too; they are listed (with the git commands to inspect and
restore them), never applied or dropped.

The stranded entries come from ``stranded`` (git's own porcelain
status, less the runner's own changes); item commits and stashes are
recognised by the parsers in ``messages``.

A parallel run's items work in worktrees of their own (``item_trees``): each
dirty one is a group of its own, ``item-<id>`` with the worktree named (its
paths are relative to that worktree, and a decision acts there), and each
branch whose commits are not on the loop's branch is listed, like a stranded
stash, with the commands to inspect, integrate or drop it.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import NotRequired, TypedDict

from git_forge.backlog.topology import id_key
from git_forge.layout import ABANDONED_REF_PREFIX
from git_forge.reconcile.errors import ReconcileError
from git_forge.reconcile.evidence import Evidence
from git_forge.reconcile.item_trees import ItemTree, PathJSON
from git_forge.reconcile.messages import item_of_abandoned_ref, item_of_stash, item_of_subject
from git_forge.tree.errors import GitError
from git_forge.tree.history import kept_list, log_subjects, stash_list
from git_forge.tree.porcelain import StatusEntry, render_porcelain_line


class GroupKind(StrEnum):
    """Whose work a group is a candidate of; also the order groups are listed in."""

    ITEM = "item"
    RECOVERY = "recovery"
    UNATTRIBUTED = "unattributed"


_RANK = {GroupKind.ITEM: 0, GroupKind.RECOVERY: 1, GroupKind.UNATTRIBUTED: 2}


class GroupJSON(TypedDict):
    """A group of stranded paths as ``reconcile --json`` lists it."""

    id: str
    kind: str
    itemId: str | None
    candidate: bool
    paths: list[PathJSON]
    evidence: list[str]
    worktree: NotRequired[str]


class StashJSON(TypedDict):
    """An item's abandoned work, kept under a ref or on the stash list."""

    ref: str
    itemId: str
    message: str
    paths: list[str]
    hints: list[str]


@dataclass(frozen=True)
class Group:
    """Stranded entries decided together, with the evidence that grouped them."""

    id: str
    kind: GroupKind
    item_id: str | None
    entries: tuple[StatusEntry, ...]
    evidence: tuple[str, ...] = ()
    #: The item's own worktree the paths are in (``None``: the main one).
    worktree: Path | None = None

    @property
    def paths(self) -> list[str]:
        return [entry.path for entry in self.entries]

    @property
    def lines(self) -> list[str]:
        """Each path as ``git status --porcelain`` prints it."""
        return [render_porcelain_line(entry) for entry in self.entries]

    def to_json(self) -> GroupJSON:
        document: GroupJSON = {
            "id": self.id, "kind": self.kind.value, "itemId": self.item_id, "candidate": True,
            "paths": [{"path": e.path, "xy": e.xy} for e in self.entries],
            "evidence": list(self.evidence)}
        if self.worktree is not None:
            document["worktree"] = str(self.worktree)
        return document


@dataclass(frozen=True)
class StrandedStash:
    """An item's abandoned work: kept under ``refs/forge/abandoned/<id>/<time>``, or a
    stash entry whose message names the item."""

    ref: str
    item_id: str
    message: str
    paths: tuple[str, ...]

    def to_json(self) -> StashJSON:
        return {"ref": self.ref, "itemId": self.item_id, "message": self.message,
                "paths": list(self.paths), "hints": self.hints}

    @property
    def kept(self) -> bool:
        """Under git-forge's own ref (else on the stash list)."""
        return self.ref.startswith(ABANDONED_REF_PREFIX)

    @property
    def hints(self) -> list[str]:
        """How to look at it and take it back (git reads a kept one as a stash); a kept
        one is the operator's to delete once done with it."""
        hints = [f"git stash show --include-untracked -p {self.ref}",
                 f"git stash apply {self.ref}"]
        return hints + [f"git update-ref -d {self.ref}"] if self.kept else hints


@dataclass(frozen=True)
class Plan:
    """Everything attribution found: the groups to decide and stranded stashes."""

    groups: tuple[Group, ...]
    stashes: tuple[StrandedStash, ...]
    notes: tuple[str, ...] = ()
    #: Items' branches (with their worktrees) whose commits are not on the branch.
    branches: tuple[ItemTree, ...] = ()
    #: The branch they are not on (the one checked out where reconcile runs).
    onto: str | None = None

    def group(self, group_id: str) -> Group:
        for group in self.groups:
            if group.id == group_id:
                return group
        known = ", ".join(g.id for g in self.groups) or "none"
        raise ReconcileError(f"no group {group_id} to reconcile (groups: {known})")


def stranded_stashes(root: Path) -> list[StrandedStash]:
    """The items' abandoned work under their refs, by item and time, then the stash
    entries whose message names an item (``… from item <id>``)."""
    found = []
    for entry in kept_list(root, ABANDONED_REF_PREFIX):
        item = item_of_abandoned_ref(entry.ref)
        if item is not None:
            found.append(StrandedStash(entry.ref, item, entry.message, entry.paths))
    for entry in stash_list(root):
        item = item_of_stash(entry.message)
        if item is not None:
            found.append(StrandedStash(entry.ref, item, entry.message, entry.paths))
    return found


def _item_paths(root: Path, base: str) -> dict[str, tuple[str, str]]:
    """path → (item id, commit) of the latest item commit since ``base`` touching it."""
    owners: dict[str, tuple[str, str]] = {}
    for commit in log_subjects(root, base):
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


def tree_groups(trees: Iterable[ItemTree], taken: set[str]) -> list[Group]:
    """A group per dirty item worktree: ``item-<id>``, or ``item-<id>-worktree``
    when the main tree already has a group of that name. A worktree in the middle of
    a rebase (a merge…) is none: its changes are that operation's, which git alone
    finishes or gives up (its branch's hints say how) — a commit, a stash or a
    discard there would take the operation's half-done state for the item's work."""
    groups = []
    for tree in trees:
        if not tree.dirty or tree.worktree is None or tree.operation is not None:
            continue
        key = f"item-{tree.item_id}"
        if key in taken:
            key += "-worktree"
        taken.add(key)
        branch = f"branch {tree.branch}" if tree.branch else "HEAD detached"
        groups.append(Group(key, GroupKind.ITEM, tree.item_id, tree.dirty,
                            (f"in item {tree.item_id}'s worktree {tree.worktree} ({branch})",),
                            tree.worktree))
    return groups


def plan(root: Path, evidence: Evidence, entries: list[StatusEntry], *,
         recovery_paths: Iterable[str] = (), trees: Iterable[ItemTree] = (),
         onto: str | None = None) -> Plan:
    """Attribute the stranded ``entries`` of the work tree at ``root`` (the runner's
    own changes already left out, see ``stranded``). ``recovery_paths``:
    recover's own backlog change.
    ``trees``: the items' worktrees and branches (``item_trees``), integrated or
    not against ``onto``."""
    recovery = set(recovery_paths)
    notes: list[str] = []
    owners: dict[str, tuple[str, str]] = {}
    in_flight = None
    if evidence.usable:
        in_flight = evidence.in_flight
        if evidence.base_commit:
            try:
                owners = _item_paths(root, evidence.base_commit)
            except GitError as exc:
                notes.append(f"git log {evidence.base_commit[:12]}..HEAD failed: {exc.message}")
    elif evidence.problem:
        notes.append(f"run evidence unusable ({evidence.problem}): nothing is attributed")
    elif evidence.no_run:
        notes.append("no loop run has happened yet (no state.json): nothing is attributed "
                     "to one")

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

    trees = tuple(trees)
    built = sorted([*(Group(key, g.kind, g.item_id, tuple(g.entries), tuple(g.evidence))
                      for key, g in groups.items()), *tree_groups(trees, set(groups))],
                   key=lambda group: (_RANK[group.kind], id_key(group.item_id or ""),
                                      group.worktree is not None))
    try:
        stashes = stranded_stashes(root)
    except GitError as exc:
        stashes = []
        notes.append(exc.message)
    branches = tuple(tree for tree in trees if not tree.integrated)
    return Plan(tuple(built), tuple(stashes), tuple(notes), branches, onto)
