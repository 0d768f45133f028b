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

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, NotRequired, TypedDict

from git_forge import decisions
from git_forge.backlog.bookkeeping import describe_changes, only_applied_answers
from git_forge.backlog.model import match_id
from git_forge.backlog.store import BacklogStore
from git_forge.errors import ForgeError
from git_forge.locks import locked
from git_forge.reconcile.attribution import GroupJSON, Plan, StashJSON, plan
from git_forge.reconcile.conflicts import (
    ConflictRecord,
    RetriedJSON,
    clear_conflict,
    read_conflicts,
    retry,
    retry_refusal,
)
from git_forge.reconcile.errors import ReconcileError
from git_forge.reconcile.evidence import gather
from git_forge.reconcile.execution import Action, ActionJSON, Decision, execute
from git_forge.reconcile.item_trees import ItemTree, ItemTreeJSON, item_trees, loop_branch
from git_forge.reconcile.merge_queue import Conflicted, Integrated, Outcome, integrate_item
from git_forge.reconcile.messages import item_branch, items_settled
from git_forge.reconcile.preflight import queued_apart
from git_forge.reconcile.stranded import stranded
from git_forge.tree.commit import commit_paths
from git_forge.tree.fast_status import head_blob
from git_forge.tree.git_status import porcelain
from git_forge.tree.porcelain import StatusEntry
from git_forge.tree.repo import open_repo
from git_forge.workspace import Workspace

#: Given what attribution found, the decision for each group to act on (a group
#: left out is left as it is, and reported as nothing).
Decide = Callable[[Plan], Mapping[str, Decision]]
#: Given the plan and the items whose branch is an open merge conflict, what to do
#: with each unintegrated item branch: ``integrate``, ``retry`` (a conflict's
#: only) or ``leave`` (the default for one left out).
ChooseBranches = Callable[[Plan, frozenset[str]], Mapping[str, str]]


class QueuedBacklogJSON(TypedDict):
    """backlog.json's queued change: what it changes, and whose answers it holds."""

    path: str
    changes: str
    recoverAnswers: list[str]


class BranchJSON(ItemTreeJSON):
    """An unintegrated item branch, with the commands that inspect, land or drop it."""

    hints: list[str]


class IntegratedJSON(TypedDict):
    itemId: str
    outcome: Literal["integrated"]
    commits: list[str]
    tip: str
    kept: str | None


class ConflictedJSON(TypedDict):
    itemId: str
    outcome: Literal["conflict"]
    commit: str
    paths: list[str]
    collidedWith: list[str]
    reason: str


class RefusedJSON(TypedDict):
    itemId: str
    outcome: Literal["refused"]
    reason: str


#: One merge-queue outcome as ``reconcile --json`` lists it.
IntegrationJSON = IntegratedJSON | ConflictedJSON | RefusedJSON


class ReconcileJSON(TypedDict):
    """The ``reconcile --json`` document (also recover's ``tree``)."""

    groups: list[GroupJSON]
    stashes: list[StashJSON]
    actions: list[ActionJSON]
    branches: NotRequired[list[BranchJSON]]
    integrations: NotRequired[list[IntegrationJSON]]
    landed: NotRequired[list[str]]
    retried: NotRequired[list[RetriedJSON]]
    queuedBacklog: NotRequired[QueuedBacklogJSON]


@dataclass(frozen=True)
class QueuedBacklog:
    """backlog.json changed since HEAD and still a valid backlog: queued for the next
    run, which commits it first — not stranded work (``preflight.queued_apart``)."""

    path: str
    #: What changed, as the commit that records it will say: ``change 003, 004``.
    changes: str
    #: The items whose recorded answers are the whole change: recover's own change,
    #: left uncommitted (``--no-commit``, left at its prompt, or a pass cut short).
    answered: tuple[str, ...] = ()

    def to_json(self) -> QueuedBacklogJSON:
        return {"path": self.path, "changes": self.changes,
                "recoverAnswers": list(self.answered)}


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
    #: Items whose conflict was resolved by hand and landed: now done.
    landed: tuple[str, ...] = ()
    #: Conflicts retried on the new tip (their attempts kept under a ref).
    retried: tuple[ConflictRecord, ...] = ()
    #: What the operator is told beside (a landing whose bookkeeping stayed uncommitted).
    notes: tuple[str, ...] = ()
    #: backlog.json's queued change left uncommitted afterwards, if any.
    queued: QueuedBacklog | None = None

    @property
    def clean(self) -> bool:
        """No stranded work is left in the tree, nor in an item's worktree or branch."""
        return not self.remaining and not self.trees_left

    def to_json(self) -> ReconcileJSON:
        """The ``reconcile --json`` document (also recover's ``tree``). ``branches``
        and ``integrations`` appear only when there are any."""
        document: ReconcileJSON = {
            "groups": [group.to_json() for group in self.plan.groups],
            "stashes": [stash.to_json() for stash in self.plan.stashes],
            "actions": [action.to_json() for action in self.actions]}
        if self.plan.branches:
            document["branches"] = [{**tree.to_json(), "hints": tree.hints(self.plan.onto),
                                     "next": tree.next_step(self.plan.onto)}
                                    for tree in self.plan.branches]
        if self.integrations:
            document["integrations"] = [integration_json(o) for o in self.integrations]
        if self.landed:
            document["landed"] = list(self.landed)
        if self.retried:
            document["retried"] = [{"itemId": r.item_id, "ref": r.retried_ref,
                                    "paths": list(r.paths)} for r in self.retried]
        if self.queued is not None:
            document["queuedBacklog"] = self.queued.to_json()
        return document


def integration_json(outcome: Outcome) -> IntegrationJSON:
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
                   integrate: Sequence[str] = (),
                   choose_branches: ChooseBranches | None = None) -> ReconcileReport:
    """Reconcile the stranded work in ``workspace``'s tree as ``decide`` says.

    ``recovery_paths``: recover's own backlog change, its own group (a queued
    backlog change is no group otherwise: ``preflight.queued_apart``). ``decide``
    is called once, also when nothing is stranded (so it can refuse a decision
    for a group that does not exist). ``integrate``: items whose ``forge/<id>``
    branch to integrate onto the branch checked out here, after the decisions;
    an item without such a branch is refused before anything changes. Every
    failure is a ``ForgeError``. ``choose_branches``: a dialogue's choices for
    the unintegrated item branches (integrated with ``integrate``'s; a retried
    conflict goes back to pending, its bookkeeping committed).
    """
    repo = open_repo(workspace.root)
    recovery = set(recovery_paths)

    def stranded_now() -> tuple[list[StatusEntry], StatusEntry | None]:
        """The stranded entries, and backlog.json's queued change apart from them."""
        work, queued, _corrupt = queued_apart(
            stranded(porcelain(repo), workspace.root, workspace.state_dir,
                     workspace.backlog_file), workspace.root, workspace.backlog_file)
        return work, queued

    def trees_now() -> list[ItemTree]:
        return item_trees(workspace.root, workspace.state_dir, workspace.backlog_file)

    trees = trees_now()
    onto = loop_branch(workspace.root) if trees or integrate else None
    work, queued = stranded_now()
    ours = [queued] if queued is not None and queued.path in recovery else []
    found = plan(workspace.root, gather(workspace.state_dir), work + ours,
                 recovery_paths=recovery, trees=trees, onto=onto)
    integrate = _check_integrations(integrate, trees, onto)
    decisions = decide(found)
    chosen: Mapping[str, str] = {}
    if choose_branches is not None and found.branches and onto is not None:
        chosen = choose_branches(found, frozenset(
            item for item, record in read_conflicts(workspace.state_dir).items()
            if record.open))
    retries = [item for item, what in chosen.items() if what == "retry"]
    _check_retries(workspace, retries)
    actions = execute(repo, found, decisions) if decisions else []
    integrate = [*integrate, *(item for item, what in chosen.items()
                               if what == "integrate" and item not in integrate)]
    integrations = tuple(integrate_item(workspace.root, workspace.state_dir, item, str(onto))
                         for item in integrate)
    retried, retry_notes = retry_items(workspace, retries)
    landed, notes = land(workspace, [o.item_id for o in integrations
                                     if isinstance(o, Integrated)])
    # Nothing was stranded a moment ago and nothing was done: no second status read.
    remaining, queued = stranded_now() if found.groups or landed or retried else ([], queued)
    left = [tree for tree in trees_now() if tree.stranded] if trees else []
    return ReconcileReport(found, tuple(actions), tuple(remaining), integrations, tuple(left),
                           landed, retried, retry_notes + notes,
                           queued_backlog(workspace, queued) if queued is not None else None)


def queued_backlog(workspace: Workspace, entry: StatusEntry) -> QueuedBacklog:
    """What the queued backlog change ``entry`` is: its changes, and whether it is
    recover's answers alone — the decision record's answers explain every
    difference from HEAD (``bookkeeping.only_applied_answers``) — rather than any
    item's work (every item's commit touches backlog.json, so the last of them is
    no evidence of whose the change is). A record that cannot be read names no
    answers: the change is still described."""
    try:
        work = workspace.backlog_file.read_bytes()
        head = head_blob(workspace.root, entry.path)
    except (OSError, ForgeError):
        return QueuedBacklog(entry.path, "update the backlog")
    answered: list[str] = []
    if head is not None:
        try:
            document = decisions.load(decisions.open_record(workspace.backlog_dir,
                                                            workspace.config.state_dir))
        except ForgeError:
            document = None
        latest = decisions.latest_entries(document["decisions"]) if document else {}
        answers = {item_id: answer for item_id, decision in latest.items()
                   if isinstance(answer := decision.get("answer"), str)}
        answered = only_applied_answers(head, work, answers) if answers else []
    return QueuedBacklog(entry.path, describe_changes(head, work), tuple(answered))


def retry_items(workspace: Workspace, item_ids: Sequence[str]
                ) -> tuple[tuple[ConflictRecord, ...], tuple[str, ...]]:
    """Retry conflicts on the new tip from reconcile (``conflicts.retry``): each
    item back to pending, that bookkeeping committed (``[forge] backlog: 003
    pending (retry on the new tip)``). The records, and the notes."""
    if not item_ids:
        return (), ()
    done = tuple(retry(workspace.root, workspace.state_dir, item) for item in item_ids)

    def unblock(store: BacklogStore) -> list[str]:
        blocked = [item for item in item_ids if store.get(item).status == "blocked"]
        for item in blocked:
            store.unblock(item)
        return blocked

    return done, _bookkeeping(workspace, unblock, "pending (retry on the new tip)")


def land(workspace: Workspace, item_ids: Sequence[str]) -> tuple[tuple[str, ...],
                                                               tuple[str, ...]]:
    """Items whose recorded merge conflict is over because their branch was just
    integrated (resolved by hand): each is done and its record gone, and that
    bookkeeping committed (``[forge] backlog: 003 done``). The landed ids, and the
    notes."""
    if not item_ids:
        return (), ()
    recorded = read_conflicts(workspace.state_dir)
    ids = [item for item in item_ids if item in recorded]
    if not ids:
        return (), ()

    def done(store: BacklogStore) -> list[str]:  # by the loop's steps: ``model.mark_done``
        undone = [item.id for item in store.items() if item.id in ids and item.status != "done"]
        return store.done(undone) if undone else []

    notes = _bookkeeping(workspace, done, "done")
    for item in ids:
        clear_conflict(workspace.state_dir, item)
    return tuple(ids), notes


def _bookkeeping(workspace: Workspace, change: Callable[[BacklogStore], list[str]],
                 what: str) -> tuple[str, ...]:
    """Make ``change`` to the backlog (it returns the ids it changed) and commit it
    as ``[forge] backlog: <ids> <what>`` — unless backlog.json held changes of its
    own before, which are the operator's: then it is left uncommitted, and the
    note says so."""
    backlog_rel = workspace.relative(workspace.backlog_file)
    was_dirty = any(entry.path == backlog_rel for entry in porcelain(open_repo(workspace.root)))
    changed = change(BacklogStore(workspace.backlog_file))
    if not changed:
        return ()
    if was_dirty:
        return (f"{backlog_rel} had changes of its own: item{'s' if len(changed) != 1 else ''} "
                f"{', '.join(changed)} "
                f"{what} there, not committed",)
    with locked(workspace.backlog_file):  # fresh: a fast-forward may have moved the index
        commit_paths(open_repo(workspace.root), [backlog_rel],
                     items_settled([(what, changed)]))
    return ()


def _check_retries(workspace: Workspace, item_ids: Sequence[str]) -> None:
    """Refuse a retry its worktree cannot take now, before anything changes."""
    if not item_ids:
        return
    recorded = read_conflicts(workspace.state_dir)
    for item in item_ids:
        record = recorded.get(item)
        why = (f"item {item} has no recorded merge conflict" if record is None
               else retry_refusal(workspace.root, record))
        if why is not None:
            raise ReconcileError(why)


def _check_integrations(items: Sequence[str], trees: list[ItemTree], onto: str | None
                        ) -> list[str]:
    """The items ``--integrate`` names (``3`` is ``003``: ``match_id``), each with a
    branch to integrate; refused for an item with no branch, with nothing to put it
    on, or whose worktree is in the middle of a rebase, merge, cherry-pick… (its
    branch is not what the operator is making of it yet: they finish that first)."""
    if not items:
        return []
    if onto is None:
        raise ReconcileError("HEAD is detached: check out the branch to integrate onto first")
    branches = sorted(tree.item_id for tree in trees if tree.branch is not None)
    named = [match_id(item, branches) or item for item in items]
    unknown = [item for item in named if item not in branches]
    if unknown:
        known = ", ".join(branches) or "none"
        raise ReconcileError(f"no branch {item_branch(unknown[0])} to integrate "
                             f"(items with a branch: {known})")
    for tree in trees:
        if tree.item_id in named and tree.operation is not None and tree.worktree is not None:
            raise ReconcileError(f"cannot integrate item {tree.item_id} yet — "
                                 f"{tree.operation.refusal(tree.worktree)}")
    return named
