"""What an agent's result means for its item, and the bookkeeping each outcome does.

Written once, for every place an agent runs (``places``): the place does the git
work — in the main checkout at once, in an item's worktree on the merge thread —
and this module decides what it means for the item, the backlog, the journal,
the run's state and the progress.

* **done**: the item is marked done and its work handed to the place, which lands
  it on the loop's branch (``Landed``: the item's commit is there) or cannot
  (``NotLanded``: the item goes back to what it was and is blocked with the reason:
  an item is never left done without its work on the branch);
* **blocked, needs-human**: the agent's leftovers are cleared by the place (kept as
  the item's abandoned work, as exact paths, under ``refs/forge/abandoned/<id>/…``),
  the item is marked blocked and that is recorded;
* **no signal**: retried while the item has retries left (``again``: the attempt's
  changes set aside, or left for the session the retry resumes), then deferred
  (blocked);
* **done, but a verification gate failed** (``verify_failed``): retried the same
  way, its changes left in the tree and the failure in the next prompt, then
  deferred with the gate's reason.
"""

from enum import Enum
from typing import TypedDict

from git_forge.backlog.item import NO_REASON, Item
from git_forge.exit_codes import LOOP_ERROR
from git_forge.gates.verdict import Verdict
from git_forge.loop import receipts
from git_forge.loop.context import RunContext
from git_forge.loop.errors import LoopError
from git_forge.loop.iteration import AgentResult
from git_forge.loop.places import Landing, NotLanded, Place
from git_forge.loop.summary import LeftPathJSON, UncommittedJSON, left_words
from git_forge.reconcile import messages
from git_forge.reconcile.conflicts import clear_conflict
from git_forge.supervisor.lifecycle import ProcessError
from git_forge.tree.errors import GitError
from git_forge.tree.porcelain import StatusEntry, quote_path
from git_forge.words import counted


class UncommittedFields(TypedDict, total=False):
    """``item_completed``'s fields for work not all committed (events.md)."""

    uncommitted: list[LeftPathJSON]
    uncommittedIn: str


class LeftNotes(TypedDict, total=False):
    """A blocked item's notes, when the tree kept what it could not keep."""

    notes: str


class Outcome(Enum):
    """How one iteration ended for its item."""

    DONE = "done"
    BLOCKED = "blocked"
    NEEDS_HUMAN = "needs_human"
    DEFERRED = "deferred"
    RETRY = "retry"
    #: Done, its work handed to the merge thread: the outcome comes with its landing.
    LANDING = "landing"

    @property
    def label(self) -> str:
        """The word the progress shows (``needs-human``)."""
        return self.value.replace("_", "-")


def settle(run: RunContext, place: Place, item: Item, result: AgentResult) -> Outcome:
    """Act on ``result`` for ``item``: its bookkeeping, the place's git work, and
    what the progress is told."""
    signal = result.signal
    if signal.kind == "done":
        return done(run, place, item, result)
    if signal.kind in ("blocked", "needs_human"):
        return block(run, place, item, signal.reason or NO_REASON,
                     needs_human=signal.kind == "needs_human", result=result)
    return no_signal(run, place, item, result)


def done(run: RunContext, place: Place, item: Item, result: AgentResult) -> Outcome:
    """Mark the item done and have its work landed on the loop's branch."""
    before = run.store.get(item.id)
    # Done first: the commit carries the mark. Not fsynced here: the place makes it
    # durable, with the journal, right before the git work that lands the item
    # (``context.on_disk``) — in a parallel run on the merge thread, once for the
    # items it lands together, and never on the loop's thread.
    run.store.transition(item.id, "done", durable=False)
    try:
        landing = place.land(item, result.listed)
    except BaseException:
        run.store.replace(before)  # never left done without its commit
        raise
    if landing is None:
        return Outcome.LANDING
    return landed(run, place, before, landing, result.handle)


def landed(run: RunContext, place: Place, before: Item, landing: Landing,
           handle: str | None) -> Outcome:
    """What landing a done item's work came to: done, or blocked with the reason
    (the item put back as it was ``before`` its done mark)."""
    item_id = before.id
    if isinstance(landing, NotLanded):
        run.store.replace(before)
        return block(run, place, before, landing.reason, needs_human=landing.needs_human,
                     clear=not landing.cleared, handle=handle)
    if landing.integrated is not None:
        run.journal.append("item_integrated", itemId=item_id,
                           commits=list(landing.integrated.commits), tip=landing.integrated.tip)
    left: UncommittedFields = {}
    if landing.left:  # never plainly done: what was not committed, and where it is
        run.uncommitted[item_id] = UncommittedJSON(itemId=item_id, where=landing.left_in,
                                                   paths=list(landing.left))
        left = {"uncommitted": list(landing.left), "uncommittedIn": landing.left_in}
    run.journal.append("item_completed", itemId=item_id, title=before.title,
                       commit=landing.commit, **left)
    run.state = run.state._replace(completed_items=(*run.state.completed_items, item_id))
    clear_conflict(run.workspace.state_dir, item_id)  # a retried conflict landed
    if landing.integrated is not None and landing.integrated.kept:
        run.progress.note(f"item {item_id}: its worktree is kept: {landing.integrated.kept}")
    _settled(run, item_id, "clean")
    detail = landing.commit[:12]
    if landing.left:
        detail += ", but not all of it: " + left_words(run.uncommitted[item_id])
    run.progress.finished(run.store.get(item_id), Outcome.DONE.label, detail)
    return Outcome.DONE


def no_signal(run: RunContext, place: Place, item: Item, result: AgentResult) -> Outcome:
    """Retry while attempts are left (the item stays in progress), then defer it."""
    item_id = item.id
    retries = run.options.retries
    attempts = run.attempts[item_id] = run.attempts.get(item_id, 0) + 1
    why = result.what_happened
    if attempts <= retries:
        run.save(last_signal="error")
        run.progress.finished(item, Outcome.RETRY.label,
                              f"{why}; attempt {attempts} of {retries + 1}")
        again(run, place, item, result.listed)
        return Outcome.RETRY
    return block(run, place, item, deferral_reason(why, attempts, _in_all(run, item.id)),
                 deferred=True,
                 result=result)


def verify_failed(run: RunContext, place: Place, item: Item, result: AgentResult,
                  verdict: Verdict) -> Outcome:
    """The attempt said done and a verification gate failed: a failed attempt.
    Retried while attempts are left — its changes stay in the tree for the retry,
    whose prompt carries the failure — then deferred with the gate's reason."""
    item_id = item.id
    retries = run.options.retries
    attempts = run.attempts[item_id] = run.attempts.get(item_id, 0) + 1
    reason = verdict.reason or "verify failed"
    if attempts <= retries:
        run.save(last_signal="error")
        run.progress.finished(item, Outcome.RETRY.label,
                              f"{reason}; attempt {attempts} of {retries + 1}")
        run.verify_failures[item_id] = verdict.excerpt
        place.contain(item)
        return Outcome.RETRY
    return block(run, place, item, deferral_reason(reason, attempts, _in_all(run, item.id)),
                 deferred=True,
                 result=result)


def again(run: RunContext, place: Place, item: Item,
          listed: list[StatusEntry] | None) -> None:
    """``item`` runs again (no signal with attempts left, or a usage limit waited out).

    A retry that resumes the agent's session (Claude Code, Codex: ``loop.resumeSessions``)
    finds the attempt's changes where that session left them, and its prompt says they
    are still there. Any other retry starts from a clean tree: the attempt's changes
    are kept as the item's abandoned work first, and its prompt names the ref. Either
    way a retry never runs on changes it knows nothing of.
    """
    fallback = run.agent.on_fallback()  # the agent the retry runs on
    if run.agent.session_for(item.id, run.options.resume_sessions, fallback) is not None:
        place.contain(item)
    else:
        place.clear(item, listed, again=True)


def deferral_reason(what: str, attempts: int, in_all: int = 0) -> str:
    """``… — deferred after 3 attempts``: this run's, which its retries bound, and
    every run's when earlier runs tried the item too (``in_all``)."""
    reason = f"{what} — deferred after {counted(attempts, 'attempt')}"
    return f"{reason} in this run ({in_all} in all)" if in_all > attempts else reason


def _in_all(run: RunContext, item_id: str) -> int:
    """The agent starts of ``item_id`` every run recorded (the receipts' count)."""
    return receipts.attempts_of(run.workspace.state_dir, item_id)


def block(run: RunContext, place: Place, item: Item, reason: str, *, needs_human: bool = False,
          deferred: bool = False, result: AgentResult | None = None, clear: bool = True,
          handle: str | None = None) -> Outcome:
    """The agent's leftovers cleared by the place, the item marked blocked (needing
    a human, or deferred) and that recorded.

    A leftover git-forge cannot keep as git would (a submodule's own changes,
    a nested repository, …) stays where it is, named in the item's notes and
    the journal; the item keeps its reason and the run goes on. Only a failed
    bookkeeping commit ends the run (the repository refuses commits).
    """
    item_id = item.id
    left: list[str] = []
    if clear:
        left = place.clear(item, result.listed if result is not None else None)
    fields: LeftNotes = {}
    if left:
        named = ", ".join(quote_path(path) for path in left)
        note = f"left in the tree, not kept: {named} (see git forge reconcile)"
        fields["notes"] = "\n".join(filter(None, [run.store.get(item_id).notes, note]))
    run.store.transition(item_id, "blocked", blocked_reason=reason, needs_human=needs_human,
                         deferred=deferred, **fields)
    subject = reason.splitlines()[0] if reason else "no reason given"
    try:
        place.record(item_id, messages.item_blocked(item_id, subject))
    except GitError as exc:
        run.journal.append("item_blocked", itemId=item_id, reason=reason)
        raise LoopError(f"item {item_id} is blocked, but its bookkeeping commit failed: "
                        f"{exc.message}", exit_code=LOOP_ERROR) from exc
    extra = {"leftInTree": left} if left else {}
    state = run.state
    if needs_human:
        outcome = Outcome.NEEDS_HUMAN
        run.journal.append("needs_human", None, itemId=item_id, reason=reason, **extra)
        run.state = state._replace(needs_human_items=(*state.needs_human_items, item_id))
    else:
        outcome = Outcome.DEFERRED if deferred else Outcome.BLOCKED
        run.journal.append("item_blocked", None, itemId=item_id, reason=reason, **extra)
        run.state = (state._replace(deferred_items=(*state.deferred_items, item_id)) if deferred
                     else state._replace(blocked_items=(*state.blocked_items, item_id)))
    _settled(run, item_id, "error" if deferred else outcome.value)
    run.progress.finished(item, outcome.label, reason)
    handle = handle if handle is not None else result.handle if result is not None else None
    if handle is not None:
        _keep_output(run, item, handle)
    return outcome


def _settled(run: RunContext, item_id: str, last_signal: str) -> None:
    """The run's state after an item settled: its last signal, and the item no
    longer the current one."""
    current = run.state.current_item
    run.save(last_signal=last_signal, current_item=None if current == item_id else current)


def _keep_output(run: RunContext, item: Item, handle: str) -> None:
    """A blocked item waits on a human: its last attempt's output is what they will
    read, so ``proc prune`` keeps it whatever the run's age."""
    try:
        run.supervisor.keep(handle)
    except ProcessError as exc:  # the item is settled; losing the mark only lets a prune have it
        run.progress.note(f"item {item.id}: its output could not be marked to keep: {exc}")
