"""Usage limits are waits, not failures.

When an agent hits a usage limit with a time it lifts (Claude's rejected rate
limit with its ``resetsAt``, ``resets 1pm (Europe/Lisbon)``, ``try again in 2
hours``), the loop puts the item back to pending, records ``waitingUntil`` in
state.json and a ``usage_limit_wait`` event, and sleeps until then plus a small
margin — on the run's stop event, so Ctrl-C and ``loop stop`` end the wait at
once — then retries the same item. A run started while a recorded wait is still
ahead waits too. A limit whose time did not parse waits ``loop.limitWait``
minutes, and says so; ``--on-limit stop`` ends the run instead (exit 4).

What the agent says may lie. No wait is longer than ``loop.limitWaitMax`` (a
week): a later end is waited that long, and said so; a recorded ``waitingUntil``
that no run could have written (beyond that, or not a time) is discarded with a
journal note, never a crash of every later run. A limit reported again once its
own announced end has passed is not a wait any more: waited out once (the
agent's clock and ours may differ), then a failed attempt — retried, deferred,
counted by the circuit breaker — never an agent restarted every second.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from git_forge.agents.classify import AFTER_ITS_RESET, Classified, Verdict
from git_forge.clock import parse_stamp, wire_stamp
from git_forge.loop import notify
from git_forge.loop.context import RunContext
from git_forge.words import duration

#: The wait goes on this long after the announced time (the agent's clock and
#: ours may differ): a fiftieth of the wait, at least 1 s, at most a minute.
MARGIN_MIN, MARGIN_MAX, MARGIN_SHARE = 1.0, 60.0, 0.02
#: How often a wait wakes to look for a ``loop stop`` and to redraw its countdown.
WAKE_SECONDS = 1.0


def until_of(verdict: Classified, default_minutes: float, max_minutes: float,
             now: datetime | None = None) -> tuple[datetime, str]:
    """When the limit lifts, at most ``max_minutes`` ahead, and the words that say
    so (and whether it was a guess, or a time not believed)."""
    now = now or datetime.now(UTC)
    said = verdict.message or verdict.kind or "usage limit"
    latest = now + timedelta(minutes=max_minutes)
    if verdict.reset_at is not None and verdict.reset_at > latest:
        return latest, (f"{said} (it says {wire_stamp(verdict.reset_at)}: waiting at most "
                        f"loop.limitWaitMax, {duration(max_minutes)})")
    if verdict.reset_at is not None and verdict.reset_at > now:
        return verdict.reset_at, said
    if verdict.reset_at is not None:  # already past: try again after the margin
        return now, said
    minutes = min(default_minutes, max_minutes)
    return (now + timedelta(minutes=minutes),
            f"{said} (no time given: waiting loop.limitWait, {duration(minutes)})")


def after_its_reset(run: RunContext, verdict: Classified,
                    now: datetime | None = None) -> Classified:
    """``verdict`` as the loop acts on it: a limit whose announced end had already
    passed when the agent ended (``now``) is waited out once; reported so again, it
    is a failed attempt (see the module). Consecutive attempts count, across items."""
    agent = run.agent
    lifted = (verdict.verdict is Verdict.LIMIT_WAIT and verdict.reset_at is not None
              and verdict.reset_at <= (now or datetime.now(UTC)))
    if not lifted:
        agent.limits_after_reset = 0
        return verdict
    agent.limits_after_reset += 1
    if agent.limits_after_reset == 1:
        return verdict
    return Classified(Verdict.FAILED, AFTER_ITS_RESET, message=verdict.message)


def margin(seconds: float) -> float:
    return min(MARGIN_MAX, max(MARGIN_MIN, seconds * MARGIN_SHARE))


def recorded_wait(value: str | None, max_minutes: float,
                  now: datetime | None = None) -> tuple[datetime | None, str | None]:
    """A ``waitingUntil`` an earlier run recorded, when it is still ahead; or why it
    is discarded: not a time, or further ahead than any wait (``max_minutes``)."""
    if not value:
        return None, None
    now = now or datetime.now(UTC)
    try:
        until = parse_stamp(value)
        if until.tzinfo is None:
            until = until.replace(tzinfo=UTC)
        if until - now > timedelta(minutes=max_minutes):
            return None, (f"it is further ahead than loop.limitWaitMax "
                          f"({duration(max_minutes)})")
    except (ValueError, OverflowError):
        return None, "it is not a time"
    return (until if until > now else None), None


def wait_out(run: RunContext, until: datetime, reason: str, item_id: str | None,
             source: str = "agent") -> bool:
    """Record the wait, tell the operator, sleep until ``until`` plus the margin;
    ``False`` when a stop ended it (``waitingUntil`` then stays recorded).

    In the main checkout, ``item_id``'s attempt left its changes in the tree for
    the retry: state.json keeps naming it as the item in flight while the wait
    lasts, so a run killed during it (``kill -9``) leaves them attributed to the
    item (reconcile, the pre-launch check), not as changes no run made."""
    stamp = wire_stamp(until)
    serial = run.options.parallel == 1
    run.save(waiting_until=stamp, current_item=item_id if serial else None,
             **({"running_items": ()} if serial else {}))  # no agent runs meanwhile
    run.journal.append("usage_limit_wait", itemId=item_id, until=stamp, reason=reason,
                       source=source)
    run.journal.sync()  # a killed loop's successor reads the wait from state.json
    # One limit (the account's) is one notification, whichever item or run met it.
    run.agent.notifier.send(notify.USAGE_LIMIT, stamp, itemId=item_id, until=stamp,
                            reason=reason)
    run.progress.limit_wait(stamp, reason)
    now = datetime.now(UTC)
    total = max(0.0, (until - now).total_seconds())
    deadline = until + timedelta(seconds=margin(total))
    try:
        while True:
            left = (deadline - datetime.now(UTC)).total_seconds()
            if left <= 0:
                break
            run.progress.countdown(left)
            if run.agent.wake.wait(min(WAKE_SECONDS, left)) or run.stop():
                return False
    finally:
        run.progress.countdown(0)  # the wait is over, whichever way: its line goes
    run.save(waiting_until=None, **({"running_items": None} if serial else {}))
    run.journal.append("usage_limit_resumed", itemId=item_id)
    return True
