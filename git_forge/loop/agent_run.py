"""What the loop does with an attempt before its signal is acted on: the receipt
added to the ledger, a usage limit waited out (or the run stopped at it), the
circuit breaker fed, a session remembered for the retry's resume, the run's
cost checked.

``after_attempt`` answers with a ``Step``: go on and settle the signal
(``SETTLE``), retry the same item without counting the attempt (``RETRY``:
after a limit wait), or end the run (``Ending``, or ``STOPPED`` for a stop
during a wait). A command line the agent program refused ends the run at once
(exit 2, its words): every item would fail the same way, and none is at fault.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum

from git_forge.agents.classify import Verdict
from git_forge.backlog.item import Item
from git_forge.clock import wire_stamp
from git_forge.errors import ForgeError
from git_forge.exit_codes import LOOP_ERROR, LOOP_LIMIT, LOOP_REFUSED
from git_forge.loop import limits_wait, notify, receipts
from git_forge.loop.context import RunContext, commit, dirty
from git_forge.loop.iteration import AgentResult
from git_forge.reconcile import messages
from git_forge.words import duration, usd


class Step(Enum):
    SETTLE = "settle"
    RETRY = "retry"
    STOPPED = "stopped"


@dataclass(frozen=True)
class Ending:
    """The run ends here: its exit code, state.json status and message."""

    code: int
    status: str
    message: str
    error: str | None = None


def record_ending(run: RunContext, ending: Ending) -> None:
    """state.json and the journal say how the run ended (``loop_error`` for an error)."""
    run.save(status=ending.status, current_item=None, error=ending.error)
    if ending.error is not None:
        run.journal.append("loop_error", error=ending.error)
    else:
        run.journal.append("loop_completed", status=ending.status, reason=ending.message,
                           completed=len(run.state.completed_items))


def after_attempt(run: RunContext, taken: Item, result: AgentResult) -> Step | Ending:
    """Act on what ``result`` was beyond its signal (see the module)."""
    agent = run.agent
    item_id = taken.id
    if result.refused:  # a lying stream: what it said is unknown, and the journal says so
        run.journal.append("agent_report_refused", itemId=item_id, refused=result.refused)
        for name, why in result.refused.items():
            run.progress.note(f"item {item_id}: the agent's {name}: {why}")
    if result.receipt is not None:
        agent.spent = agent.spent.add(result.receipt)
        try:
            if agent.ledger is None:
                agent.ledger = receipts.LedgerWriter(run.workspace.state_dir)
            agent.ledger.record(run.state.run_id or "", item_id, result.receipt)
        except ForgeError as exc:  # the receipt stays in the manifest and the journal
            run.progress.note(f"item {item_id}: its receipt could not be added up: "
                              f"{exc.message}")
    agent.remember(item_id, result.session, result.fallback)
    verdict = result.verdict
    if verdict.verdict is Verdict.LIMIT_WAIT:
        agent.breaker.reset()
        return _limit(run, item_id, result)
    if verdict.verdict is Verdict.LIMIT_STOP:
        agent.breaker.reset()
        _back_to_pending(run, item_id)
        reason = verdict.message or "usage limit"
        run.journal.append("usage_limit_stop", itemId=item_id, reason=reason)
        agent.notifier.send(notify.USAGE_LIMIT, f"{item_id}:stop:{reason}", itemId=item_id,
                            reason=reason)
        return Ending(LOOP_LIMIT, "stopped",
                      f"stopped: the agent's usage limit is not lifted by waiting ({reason});"
                      " run the loop again once it is lifted")
    if verdict.verdict is Verdict.COMMAND_REFUSED:
        _back_to_pending(run, item_id)
        words = verdict.message or result.what_happened
        run.journal.append("agent_command_refused", itemId=item_id, reason=words)
        return Ending(LOOP_REFUSED, "error",
                      f"stopped: the agent refused its command line ({words}); no item is "
                      "at fault — fix loop.agentArgs / --agent-arg and run the loop again",
                      error=f"the agent refused its command line: {words}")
    tripped = agent.breaker.record(taken, result.failure_signature(), verdict.message,
                                   result.stderr_lines, agents_own=verdict.agents_own)
    if tripped is None:
        return Step.SETTLE
    restored = []
    for before in tripped.items:
        run.store.replace(before)
        restored.append(before.id)
    if run.backlog_rel in dirty(run):  # a deferral in the streak was committed: undo it
        commit(run, [run.backlog_rel], messages.breaker_reset(restored))
    message = tripped.message()
    run.journal.append("circuit_breaker", itemIds=restored, signature=tripped.signature,
                       attempts=tripped.attempts, stderr=list(tripped.stderr))
    agent.notifier.send(notify.BREAKER, f"{','.join(restored)}:{tripped.signature}",
                        itemIds=restored, signature=tripped.signature,
                        stderr=list(tripped.stderr))
    run.state = run.state._replace(deferred_items=tuple(
        i for i in run.state.deferred_items if i not in restored))
    return Ending(LOOP_ERROR, "error", message, error=message.splitlines()[0])


def _minutes_run(run: RunContext) -> float:
    """How long the run has run (``--max-duration`` counts it)."""
    return (time.monotonic() - run.began) / 60


def _limit(run: RunContext, item_id: str, result: AgentResult) -> Step | Ending:
    """A limit with a time it lifts: wait it out and retry, or stop (``--on-limit stop``)."""
    options = run.options
    until, reason = limits_wait.until_of(result.verdict, options.limit_wait_minutes,
                                         options.limit_wait_max_minutes)
    waits = options.on_limit == "wait" or (options.on_limit == "fallback" and result.fallback)
    if options.max_duration_minutes is not None and waits:
        minutes = _minutes_run(run)
        left = (options.max_duration_minutes - minutes) * 60
        if (until - datetime.now(UTC)).total_seconds() > left:  # it would outlast the run
            _back_to_pending(run, item_id)
            run.journal.append("max_duration_reached", minutes=round(minutes, 3),
                               maxDurationMinutes=options.max_duration_minutes)
            return Ending(LOOP_LIMIT, "stopped",
                          f"stopped: the agent's usage limit ({reason}) lifts at "
                          f"{wire_stamp(until)}, after --max-duration "
                          f"{options.max_duration_minutes:g} min ends the run")
    if run.store.get(item_id).status == "in_progress":
        run.store.transition(item_id, "pending")  # state.json's item in flight: wait_out's
    if options.on_limit == "fallback" and not result.fallback:
        # the item retries at once on the fallback agent, as every item does until
        # the agent's limit lifts (a new session: the attempt's changes are kept)
        run.agent.fallback_until = until
        stamp = wire_stamp(until)
        name = options.profile_of(True).name if options.profile_of(True).named \
            else options.fallback_agent[0]
        run.journal.append("agent_fallback", itemId=item_id, until=stamp, reason=reason,
                           agent=name)
        run.progress.note(f"the agent's usage limit lasts until {stamp} ({reason}): "
                          f"{item_id} and the items after it run on {name} until then")
        return Step.RETRY
    if options.on_limit == "stop":
        run.save(current_item=None)
        stamp = wire_stamp(until)
        run.save(waiting_until=stamp)
        run.journal.append("usage_limit_wait", itemId=item_id, until=stamp, reason=reason,
                           source="agent", onLimit="stop")
        run.agent.notifier.send(notify.USAGE_LIMIT, stamp, itemId=item_id, until=stamp,
                                reason=reason)
        return Ending(LOOP_LIMIT, "stopped",
                      f"stopped at the agent's usage limit ({reason}); it lifts at {stamp}: "
                      "come back then (git forge loop run waits for it if started earlier)")
    if not limits_wait.wait_out(run, until, reason, item_id):
        return Step.STOPPED
    return Step.RETRY


def _back_to_pending(run: RunContext, item_id: str) -> None:
    if run.store.get(item_id).status == "in_progress":
        run.store.transition(item_id, "pending")
    run.save(current_item=None)


def over_budget(run: RunContext) -> Ending | None:
    """The run's caps: no new iteration once this run's recorded cost reaches
    ``--max-cost``, its agents' tokens (in and out) ``--max-tokens``, or its age
    ``--max-duration`` (the agents still running finish, each within its timeout)."""
    options, spent = run.options, run.agent.spent
    cost = spent.cost_usd
    if options.max_cost_usd is not None and cost is not None and cost >= options.max_cost_usd:
        run.journal.append("max_cost_reached", costUsd=round(cost, 6),
                           maxCostUsd=options.max_cost_usd)
        return Ending(LOOP_LIMIT, "stopped",
                      f"stopped: this run's agents cost {usd(cost)}, reaching --max-cost "
                      f"{usd(options.max_cost_usd)} ({spent.describe()})")
    tokens = spent.input_tokens + spent.output_tokens
    if options.max_tokens is not None and tokens >= options.max_tokens:
        run.journal.append("max_tokens_reached", tokens=tokens, maxTokens=options.max_tokens)
        return Ending(LOOP_LIMIT, "stopped",
                      f"stopped: this run's agents used {tokens:,} tokens, reaching "
                      f"--max-tokens {options.max_tokens:,} ({spent.describe()})")
    minutes = _minutes_run(run)
    if options.max_duration_minutes is not None and minutes >= options.max_duration_minutes:
        run.journal.append("max_duration_reached", minutes=round(minutes, 3),
                           maxDurationMinutes=options.max_duration_minutes)
        return Ending(LOOP_LIMIT, "stopped",
                      f"stopped: this run has run {duration(minutes)}, reaching "
                      f"--max-duration {options.max_duration_minutes:g} min "
                      f"({spent.describe()})")
    return None
