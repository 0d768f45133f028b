"""What an agent's result means for its item, and the bookkeeping each outcome does.

The runner keeps the tree clean on its own account: a done item is committed
with its work; a blocked, needs-human or deferred outcome stashes the agent's
leftovers (only those paths) and commits the backlog change alone. An attempt
without a signal is retried while the item has retries left, then deferred.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from git_forge.backlog.item import Item
from git_forge.exit_codes import LOOP_ERROR
from git_forge.loop.context import RunContext, actionable, commit, dirty
from git_forge.loop.errors import LoopError
from git_forge.loop.iteration import AgentResult, remove_prompt_files
from git_forge.reconcile import messages
from git_forge.reconcile.conflicts import clear_conflict
from git_forge.supervisor.lifecycle import ProcessError
from git_forge.tree.errors import GitError
from git_forge.tree.git_status import ListingMeanwhile
from git_forge.tree.porcelain import StatusEntry, quote_path
from git_forge.tree.stash import stash_paths


class Outcome(Enum):
    """How one iteration ended for its item."""

    DONE = "done"
    BLOCKED = "blocked"
    NEEDS_HUMAN = "needs_human"
    DEFERRED = "deferred"
    RETRY = "retry"
    STOPPED = "stopped"

    @property
    def label(self) -> str:
        """The word the progress shows (``needs-human``)."""
        return self.value.replace("_", "-")


def settle(run: RunContext, item: Item, result: AgentResult) -> Outcome:
    """Act on ``result`` for ``item``: its bookkeeping, commit or stash, and what
    the progress is told. A stopped result settles nothing (the session ends the run)."""
    if result.stopped:
        return Outcome.STOPPED
    signal = result.signal
    if signal.kind == "done":
        return _done(run, item, result.listed)
    if signal.kind in ("blocked", "needs_human"):
        outcome = _blocked(run, item, signal.reason or "no reason given",
                           needs_human=signal.kind == "needs_human", listed=result.listed)
    else:
        outcome = _no_signal(run, item, result)
    if outcome in _WAITING:
        _keep_output(run, item, result.handle)
    return outcome


#: Outcomes that leave the item waiting on a human: its last attempt's output is
#: what they will read, so ``proc prune`` keeps it whatever the run's age.
_WAITING = frozenset({Outcome.BLOCKED, Outcome.NEEDS_HUMAN, Outcome.DEFERRED})


def _keep_output(run: RunContext, item: Item, handle: str) -> None:
    try:
        run.supervisor.keep(handle)
    except ProcessError as exc:  # the item is settled; losing the mark only lets a prune have it
        run.progress.note(f"item {item.id}: its output could not be marked to keep: {exc}")


def _done(run: RunContext, item: Item, listed: list[StatusEntry] | None) -> Outcome:
    commit_id = _complete(run, item, listed)
    if commit_id is None:  # the commit failed: _complete blocked the item instead
        reason = str(run.store.get(item.id).blocked_reason)
        run.save(last_signal="blocked", current_item=None)
        run.progress.finished(item, Outcome.BLOCKED.label, reason)
        return Outcome.BLOCKED
    clear_conflict(run.workspace.state_dir, item.id)  # a retried conflict, done serially
    run.save(last_signal="clean", current_item=None)
    run.progress.finished(item, Outcome.DONE.label, commit_id[:12])
    return Outcome.DONE


def _blocked(run: RunContext, item: Item, reason: str, *, needs_human: bool,
             listed: list[StatusEntry] | None) -> Outcome:
    outcome = Outcome.NEEDS_HUMAN if needs_human else Outcome.BLOCKED
    _block(run, item, reason, needs_human=needs_human, listed=listed)
    run.save(last_signal=outcome.value, current_item=None)
    run.progress.finished(item, outcome.label, reason)
    return outcome


def _no_signal(run: RunContext, item: Item, result: AgentResult) -> Outcome:
    """Retry while attempts are left (the item stays in progress), then defer it."""
    item_id = item.id
    retries = run.options.retries
    attempts = run.attempts[item_id] = run.attempts.get(item_id, 0) + 1
    why = result.what_happened
    if attempts <= retries:
        run.save(last_signal="error")
        run.progress.finished(item, Outcome.RETRY.label,
                              f"{why}; no signal; attempt {attempts} of {retries + 1}")
        return Outcome.RETRY
    reason = deferral_reason(why, attempts)
    _block(run, item, reason, deferred=True, listed=result.listed)
    run.save(last_signal="error", current_item=None)
    run.progress.finished(item, Outcome.DEFERRED.label, reason)
    return Outcome.DEFERRED


def deferral_reason(what: str, attempts: int) -> str:
    return f"{what} — deferred after {attempts} attempt" + ("s" if attempts != 1 else "")


def _block(run: RunContext, item: Item, reason: str, *, needs_human: bool = False,
           deferred: bool = False, listed: list[StatusEntry] | None = None) -> None:
    """Stash the agent's leftovers, mark the item blocked, commit that alone.

    A leftover git-forge cannot stash as git would (a submodule's own changes,
    a nested repository, …) stays in the tree, named in the item's notes and
    the journal; the item keeps the agent's reason and the run goes on. Only a
    failed bookkeeping commit ends the run (the repository refuses commits).
    """
    remove_prompt_files(run.workspace.state_dir)
    item_id = item.id
    leftovers = [p for p in dirty(run, listed) if p != run.backlog_rel]
    stashable = actionable(run, item_id, leftovers, "stash")
    stashed = False
    if stashable:
        try:
            stash_paths(run.repo, stashable, messages.abandoned_work(item_id))
            stashed = True
        except GitError as exc:
            for path in stashable:
                run.kept_back[path] = f"the stash failed: {exc.message}"
            run.progress.note(f"item {item_id}: its leftover changes could not be stashed "
                              f"and stay in the tree: {exc.message}")
    left = [path for path in leftovers if path in run.kept_back]
    fields: dict[str, Any] = {}
    if left:
        named = ", ".join(quote_path(path) for path in left)
        note = f"left in the tree, not stashed: {named} (see git forge reconcile)"
        fields["notes"] = "\n".join(filter(None, [run.store.get(item_id).notes, note]))
    run.store.transition(item_id, "blocked", blocked_reason=reason, needs_human=needs_human,
                         deferred=deferred, **fields)
    subject = reason.splitlines()[0] if reason else "no reason given"
    try:
        commit(run, [run.backlog_rel], messages.item_blocked(item_id, subject),
               allow_empty=True)
    except GitError as exc:
        run.journal.append("item_blocked", itemId=item_id, reason=reason)
        raise LoopError(f"item {item_id} is blocked, but its bookkeeping commit failed: "
                        f"{exc.message}", exit_code=LOOP_ERROR) from exc
    extra = {"leftInTree": left} if left else {}
    state = run.state
    if needs_human:
        run.journal.append("needs_human", None, itemId=item_id, reason=reason, **extra)
        run.state = state._replace(needs_human_items=(*state.needs_human_items, item_id))
    else:
        run.journal.append("item_blocked", None, itemId=item_id, reason=reason, **extra)
        run.state = (state._replace(deferred_items=(*state.deferred_items, item_id)) if deferred
                     else state._replace(blocked_items=(*state.blocked_items, item_id)))
    if stashed:
        run.progress.note(f"item {item_id}: its leftover changes were stashed "
                          f"({messages.abandoned_work(item_id)})")


def _complete(run: RunContext, item: Item, listed: list[StatusEntry] | None) -> str | None:
    """Mark the item done and commit it with its work; the commit id.

    A changed path git-forge cannot commit as git would stays in the tree (see
    ``actionable``). If the commit itself fails, the item is never left done
    without one: its entry goes back to what it was and it is blocked with the
    reason (``None`` is returned).
    """
    remove_prompt_files(run.workspace.state_dir)
    item_id = item.id
    before = run.store.get(item_id)
    # The listing predates the done mark: taken as the agent's tree ended (``listed``),
    # or by git on the other core while the mark and the journal are made durable
    # (both before the commit). So backlog.json, which the mark changed, is committed
    # whatever git saw.
    if listed is None:
        with ListingMeanwhile(run.repo) as listing:
            run.store.transition(item_id, "done")
            run.journal.sync()
            listed = listing.entries()
    else:
        run.store.transition(item_id, "done")
        run.journal.sync()
    changed = dirty(run, listed)
    if run.backlog_rel not in changed:
        changed.append(run.backlog_rel)
    paths = actionable(run, item_id, changed, "commit")
    try:
        commit_id = commit(run, paths, messages.item_done(item_id, item.title), allow_empty=True)
    except GitError as exc:
        run.store.replace(before)  # never left done without its commit
        _block(run, before, f"the agent signalled done, but the commit failed: {exc.message}")
        return None
    run.journal.append("item_completed", itemId=item_id, title=item.title, commit=commit_id)
    run.state = run.state._replace(completed_items=(*run.state.completed_items, item_id))
    return commit_id

