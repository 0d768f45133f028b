"""Merge conflicts of a parallel run's items, and their two answers.

When the merge queue finds that a done item's commit conflicts with the loop's
branch, the loop blocks the item ``needsHuman`` and records the conflict here
(``{stateDir}/conflicts.json``, by item id): the commit, the conflicting paths,
the items it collided with, its branch and worktree. That record — not the
reason's words — is how recover and reconcile know the question is a conflict,
and what it offers:

* **retry on the new tip** (``retry``): the item's branch commit, with every
  uncommitted change of its worktree saved on top, is kept under
  ``refs/forge/retried/<id>/<time>`` (``tree.worktrees.retire``); then its
  worktree and ``forge/<id>`` branch are removed, so that the next run cuts a
  fresh one at the tip. The record stays, marked with that ref, until the item
  lands: the next attempt's prompt describes the conflict from it. A worktree
  that is locked or has a rebase (or any operation) in progress is refused,
  never thrown away.
* **resolve by hand** (``resolve_commands``): the commands to enter the
  worktree, rebase onto the branch and resolve there; then ``git forge
  reconcile --integrate ITEM`` lands it (``landed``: the item is done, the
  record gone). The record is marked ``resolvingByHand`` meanwhile, so that
  every listing of the item's branch gives those commands, not the question
  again.

The file is written through the one JSON helper under its sidecar lock; a
corrupt one is refused, never overwritten.
"""

import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from git_forge.clock import wire_now
from git_forge.errors import StoreError
from git_forge.jsonfile import read_document, update_json
from git_forge.layout import CONFLICTS_FILE, RETRIED_REF_PREFIX
from git_forge.reconcile.errors import ReconcileError
from git_forge.reconcile.merge_queue import Conflicted, Unverified
from git_forge.reconcile.messages import item_branch
from git_forge.tree.errors import GitError
from git_forge.tree.worktrees import Retired, retire, retire_refusal

#: What recover records as the answer of a conflict retried on the new tip (it is
#: threaded into the next prompt, beside the conflict's own description).
RETRY_ANSWER = "retry on the new tip"


class ConflictJSON(TypedDict):
    """One item's entry in conflicts.json (``ConflictRecord``'s JSON)."""

    itemId: str
    commit: str
    paths: list[str]
    collidedWith: list[str]
    branch: str
    worktree: str
    onto: str
    recordedAt: str
    retried: bool
    retriedRef: str | None
    resolvingByHand: NotRequired[bool]
    #: Not a conflict of paths: the item's commits, replayed onto the new tip, failed
    #: the run's checks there (``loop.verifyOnIntegrate``); why.
    failedCheck: NotRequired[str]


class RetriedJSON(TypedDict):
    """A conflict retried on the new tip: its item, the ref that keeps the attempt
    before, and the conflicting paths (``reconcile --json``, ``recover --json``)."""

    itemId: str
    ref: str | None
    paths: list[str]


class ConflictsJSON(TypedDict):
    """conflicts.json: each open (or retried) conflict by item id."""

    conflicts: dict[str, ConflictJSON]


@dataclass(frozen=True)
class ConflictRecord:
    """One item's conflict with the loop's branch."""

    item_id: str
    #: The item's commit that conflicted.
    commit: str
    paths: tuple[str, ...]
    #: The items whose commits touched those paths since the item's branch forked.
    collided_with: tuple[str, ...]
    branch: str
    worktree: str
    #: The loop's branch it was to be integrated onto.
    onto: str
    recorded_at: str
    #: Once retried: the ref that keeps the previous attempt (``None`` before).
    retried_ref: str | None = None
    retried: bool = False
    #: recover's answer was "resolve by hand": the commands are the next step.
    resolving: bool = False
    #: The item's commits replayed onto the tip failed the run's checks there (why).
    failed_check: str | None = None

    def to_json(self) -> ConflictJSON:
        document: ConflictJSON = {
            "itemId": self.item_id, "commit": self.commit, "paths": list(self.paths),
            "collidedWith": list(self.collided_with), "branch": self.branch,
            "worktree": self.worktree, "onto": self.onto, "recordedAt": self.recorded_at,
            "retried": self.retried, "retriedRef": self.retried_ref,
            "resolvingByHand": self.resolving}
        if self.failed_check is not None:
            document["failedCheck"] = self.failed_check
        return document

    @classmethod
    def from_json(cls, document: Any) -> "ConflictRecord | None":
        """The record a parsed entry holds, or ``None`` for one that is not a record."""
        if not isinstance(document, dict):
            return None
        text = {key: document.get(key) for key in
                ("itemId", "commit", "branch", "worktree", "onto", "recordedAt")}
        lists = {key: document.get(key) for key in ("paths", "collidedWith")}
        if not all(isinstance(value, str) for value in text.values()):
            return None
        if not all(isinstance(value, list) for value in lists.values()):
            return None
        ref = document.get("retriedRef")
        failed = document.get("failedCheck")
        return cls(str(text["itemId"]), str(text["commit"]),
                   tuple(map(str, lists["paths"] or [])),
                   tuple(map(str, lists["collidedWith"] or [])), str(text["branch"]),
                   str(text["worktree"]), str(text["onto"]), str(text["recordedAt"]),
                   ref if isinstance(ref, str) else None, document.get("retried") is True,
                   document.get("resolvingByHand") is True,
                   failed if isinstance(failed, str) else None)

    @property
    def open(self) -> bool:
        """Still a question: neither retried nor landed."""
        return not self.retried

    def describe(self) -> str:
        """The conflict in one sentence (the question's and the prompt's)."""
        if self.failed_check is not None:
            return (f"its commits, replayed onto {self.onto} (as {self.commit[:12]}), failed "
                    f"the run's checks there: {self.failed_check}")
        whom = (f" with the work of item{'s' if len(self.collided_with) > 1 else ''} "
                f"{', '.join(self.collided_with)}" if self.collided_with else "")
        return (f"its commit {self.commit[:12]} conflicted with {self.onto} in "
                f"{', '.join(self.paths)}{whom}")


#: How a conflict's ``needsHuman`` reason ends: where its two answers are. recover,
#: which offers them, shows the reason without it.
RECOVER_ANSWERS = ". Retry it on the new tip or resolve it by hand: git forge recover"


def conflicts_path(state_dir: Path) -> Path:
    return Path(state_dir) / CONFLICTS_FILE


def _records(document: Any, path: Path) -> dict[str, ConflictRecord]:
    """The records of a parsed conflicts.json (none when there is no file). An entry
    that is not a record makes the whole file corrupt: a rewrite would drop it."""
    if document is None:
        return {}
    if not isinstance(document, dict) or not isinstance(document.get("conflicts"), dict):
        raise StoreError(f"{path} is corrupt (not a conflicts record); refusing to touch it")
    found = {}
    for item_id, entry in document["conflicts"].items():
        record = ConflictRecord.from_json(entry)
        if record is None:
            raise StoreError(f"{path} is corrupt (the entry of item {item_id} is not a "
                             "conflict record); refusing to touch it")
        found[str(item_id)] = record
    return found


def read_conflicts(state_dir: Path) -> dict[str, ConflictRecord]:
    """Every recorded conflict by item id (none when the file is missing); a file
    the next write would refuse (corrupt, JSON null, an entry that is not a record)
    is a ``StoreError``: a run checks it before it takes an item."""
    path = conflicts_path(state_dir)
    return _records(read_document(path), path)


def conflict_of(state_dir: Path, item_id: str) -> ConflictRecord | None:
    """Item ``item_id``'s recorded conflict, or ``None`` (also when the record cannot
    be read: a reader that only adds to a prompt goes on without it)."""
    path = conflicts_path(state_dir)
    if not path.exists():
        return None
    try:
        return read_conflicts(state_dir).get(item_id)
    except StoreError:
        return None


def _update(state_dir: Path, change: Any) -> None:
    path = conflicts_path(state_dir)

    def mutate(document: Any) -> ConflictsJSON:
        records = _records(document, path)
        change(records)
        return {"conflicts": {item: record.to_json() for item, record in records.items()}}

    update_json(path, mutate)


def record_conflict(state_dir: Path, conflict: Conflicted | Unverified, onto: str,
                    worktree: Path) -> None:
    """The merge queue's conflict for its item (a retry's attempt that conflicted
    again replaces the record; the ref of the attempt before stays in git) — or its
    commits that failed the run's checks on the new tip, asked about the same way."""
    if isinstance(conflict, Unverified):
        record = ConflictRecord(conflict.item_id, conflict.commit, (), (),
                                item_branch(conflict.item_id), str(worktree), onto, wire_now(),
                                failed_check=conflict.reason)
    else:
        record = ConflictRecord(conflict.item_id, conflict.commit, conflict.paths,
                                conflict.collided_with, item_branch(conflict.item_id),
                                str(worktree), onto, wire_now())
    _update(state_dir, lambda records: records.__setitem__(conflict.item_id, record))


def clear_conflict(state_dir: Path, item_id: str) -> None:
    """The item landed: its conflict is over (nothing is written when none is recorded)."""
    if conflict_of(state_dir, item_id) is None:
        return
    _update(state_dir, lambda records: records.pop(item_id, None))


def mark_resolving(state_dir: Path, item_ids: set[str]) -> None:
    """recover's answer for these items' conflicts was "resolve by hand"; a record
    not open any more (retried) or already marked is left as it is."""
    def mark(records: dict[str, ConflictRecord]) -> None:
        for item_id in item_ids & records.keys():
            if records[item_id].open:
                records[item_id] = replace(records[item_id], resolving=True)

    if item_ids and conflicts_path(state_dir).exists():
        _update(state_dir, mark)


def retry_refusal(root: Path, record: ConflictRecord) -> str | None:
    """Why the item cannot be retried now (its worktree locked or mid-operation),
    or ``None``. A branch already gone needs nothing kept."""
    why = retire_refusal(root, record.branch, Path(record.worktree))
    if why is None or why == f"no branch {record.branch}":
        return None
    return f"item {record.item_id} cannot be retried: {why}"


def retry(root: Path, state_dir: Path, item_id: str) -> ConflictRecord:
    """Retry item ``item_id`` on the new tip: its attempt kept under a safety ref,
    its worktree and branch removed, the record marked retried (see the module).
    Done already (the record says so, the branch is gone): nothing more. The
    item's status is the caller's (recover answers it, reconcile unblocks it)."""
    record = read_conflicts(state_dir).get(item_id)
    if record is None:
        raise ReconcileError(f"item {item_id} has no recorded merge conflict")
    why = retry_refusal(root, record)
    if why is not None:
        raise ReconcileError(why)
    try:
        kept: Retired | None = retire(root, record.branch, f"{RETRIED_REF_PREFIX}{item_id}/",
                                      Path(record.worktree))
    except GitError as exc:
        if exc.message != f"no branch {record.branch}":
            raise ReconcileError(f"item {item_id} cannot be retried: {exc.message}") from exc
        kept = None  # dropped already (by hand, or by a retry a crash cut short)
    done = replace(record, retried=True,
                   retried_ref=kept.ref if kept is not None else record.retried_ref)
    _update(state_dir, lambda records: records.__setitem__(item_id, done))
    return done


def resolve_start(record: ConflictRecord) -> str:
    """The first command of a resolution by hand, as one command to run from
    anywhere: the rebase onto the branch, in the item's worktree."""
    return f"git -C {shlex.quote(str(record.worktree))} rebase {shlex.quote(record.onto)}"


def resolve_commands(record: ConflictRecord, root: Path) -> list[str]:
    """The commands to resolve the conflict by hand in the item's worktree, then land it."""
    tree = shlex.quote(str(record.worktree))
    how = ("then make the checks pass there, and commit" if record.failed_check is not None
           else "resolve each path, git add it, git rebase --continue")
    return [f"cd {tree}",
            f"git rebase {shlex.quote(record.onto)}   ({how})",
            f"cd {shlex.quote(str(root))}",
            f"git forge reconcile --integrate {record.item_id}"]
