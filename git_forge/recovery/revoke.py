"""``git forge decision revoke ITEM``: take back an answer recorded by mistake.

The decision record is append-only, so a revoke is a new entry that supersedes
the answer: a deferral of the same question (``answer: null``, ``deferred:
true``) — the one shape the record's closed schema has for "no decision", which
feature-forge's own ``decision-list`` reads as it reads any deferral, and which
``recover`` asks again. The answer stays in the record, below it.

The item goes back to waiting for that decision, blocked as it was before the
answer: on what the answer answered, needing a human, blocked or deferred as the
item's ``answeredKind`` says (``model.revoke_answer``) — with its ``humanAnswer``
gone, so no agent gets it.

What can be taken back is an answer no agent has acted on: one still waiting in
the item for its next attempt, or one recorded but not yet applied (the item is
still blocked). An answer given with ``backlog answer``, which the record never
saw, is taken back the same way (the item holds it, and it is newer than
anything recorded): the item waits again and the deferral entry, for what the
answer answered, records that it does. An item that ran with the answer (in
progress, done, or blocked on another question since) is refused, as is an
applied ``retry`` of a merge conflict (its worktree and branch are gone; the
attempt is kept under
``refs/forge/retried/…``). The backlog is changed first and the record second:
cut short between the two, the item already waits and a second revoke records
the entry. Only the embedded runner's backlog can be put back; an external
runner's contract has no verb for it.
"""

from dataclasses import dataclass
from typing import TypedDict

from git_forge import decisions
from git_forge.backlog.item import Item
from git_forge.backlog.model import match_id
from git_forge.backlog.topology import id_key
from git_forge.errors import ForgeError, UsageError
from git_forge.reconcile.conflicts import RETRY_ANSWER
from git_forge.recovery.procedure import one_pass_at_a_time, refuse_not_set_up
from git_forge.runner.base import Runner
from git_forge.runner.embedded import EmbeddedRunner
from git_forge.workspace import Workspace


class RevokedJSON(TypedDict):
    """``decision revoke --json``."""

    itemId: str
    revokedAnswer: str
    status: str
    needsHuman: bool
    deferred: bool
    blockedReason: str | None
    putBack: bool
    decision: decisions.DecisionJSON
    #: The other items the same answer was given to at once (its ``clusterId``),
    #: which keep it: each is revoked on its own.
    sharedWith: list[str]


@dataclass(frozen=True)
class Revoked:
    """What a revoke did: the answer taken back, the item as it waits now, and the
    entry that supersedes the answer."""

    item_id: str
    answer: str
    item: Item
    #: The item held the answer and was put back (False: it was waiting already).
    put_back: bool
    entry: decisions.DecisionJSON
    shared_with: tuple[str, ...] = ()

    def to_json(self) -> RevokedJSON:
        return {"itemId": self.item_id, "revokedAnswer": self.answer,
                "status": str(self.item.status), "needsHuman": self.item.needs_human,
                "deferred": self.item.deferred, "blockedReason": self.item.blocked_reason,
                "putBack": self.put_back, "decision": self.entry,
                "sharedWith": list(self.shared_with)}


def revoke(workspace: Workspace, runner: Runner, item_ref: str, *,
           actor: str | None = None) -> Revoked:
    """Take back ``item_ref``'s latest answer (refusals: ``UsageError``, exit 2,
    nothing changed). One at a time with ``recover`` on this backlog (its lock)."""
    if not isinstance(runner, EmbeddedRunner):
        raise UsageError("decision revoke puts the item back in the embedded runner's "
                         f"backlog; the {runner.describe()} runner has no verb for it — revoke "
                         "the answer in that runner, then record a deferral with git forge "
                         "decision record --deferred")
    refuse_not_set_up(workspace)
    rec = decisions.open_record(workspace.backlog_dir, workspace.config.state_dir)
    with one_pass_at_a_time(workspace, "git forge decision revoke"):
        items = runner.list_items()
        item_id = match_id(item_ref, [item.id for item in items])
        if item_id is None:
            raise UsageError(f"no item {item_ref} in the backlog")
        item = next(i for i in items if i.id == item_id)
        document = decisions.load(rec)
        latest = decisions.latest_entries(document["decisions"]).get(item_id) if document \
            else None
        answer = latest.get("answer") if latest is not None else None
        held = item.human_answer if item.status == "pending" else None
        if held is not None and held != answer:  # given with backlog answer, unrecorded
            answer, question, applied = held, item.answered_reason or "", False
        elif latest is None or answer is None:
            why = "nothing is recorded for it" if latest is None else \
                "its latest decision is a deferral: it is waiting for one already"
            raise UsageError(f"item {item_id} has no answer to revoke ({why})")
        else:
            question = latest.get("question") or ""
            applied = latest.get("appliedAt") is not None
        if item.status == "blocked":
            if applied and item.blocked_reason != question:
                raise UsageError(f"item {item_id} has run with that answer already and now "
                                 "waits on another question: answer that one with git forge "
                                 "recover")
            put_back = False
        elif item.status == "pending" and item.human_answer == answer:
            if answer == RETRY_ANSWER and applied:
                raise UsageError(f"item {item_id}'s retry on the new tip is done already: its "
                                 "worktree and branch were removed (its attempt is kept under "
                                 f"refs/forge/retried/{item_id}/…) and cannot be put back")
            item = runner.store.revoke_answer(item_id, answer, question=question)
            put_back = True
        else:
            raise UsageError(f"item {item_id} has run with that answer already (it is "
                             f"{item.status}): there is nothing to take back")
        try:
            written = decisions.record_all(rec, [decisions.NewDecision(item_id, question)],
                                           actor=actor)
        except ForgeError as exc:
            raise ForgeError(f"item {item_id} waits for a decision again, but the decision "
                             f"record could not be written: {exc.message} — run git forge "
                             f"decision revoke {item_id} again to record it",
                             exit_code=exc.exit_code) from exc
        cluster = latest.get("clusterId") if latest is not None else None
        shared = tuple(sorted(
            (other for other, entry in decisions.latest_entries(document["decisions"]).items()
             if cluster and other != item_id and entry.get("clusterId") == cluster
             and entry.get("answer") == answer), key=id_key)) if document else ()
        return Revoked(item_id, answer, item, put_back, written["decisions"][-1], shared)
