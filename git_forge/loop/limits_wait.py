"""Usage limits are waits, not failures.

When an agent hits a usage limit with a time it lifts (Claude's rejected rate
limit with its ``resetsAt``, ``resets 1pm (Europe/Lisbon)``, ``try again in 2
hours``), the loop puts the item back to pending, records ``waitingUntil`` in
state.json and a ``usage_limit_wait`` event, and sleeps until then plus a small
margin — on the run's stop event, so Ctrl-C and ``loop stop`` end the wait at
once — then retries the same item. A run started while a recorded wait is still
ahead waits too. A limit whose time did not parse waits ``loop.limitWait``
minutes, and says so; ``--on-limit stop`` ends the run instead (exit 4).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from git_forge.agents.classify import Classified
from git_forge.clock import parse_stamp, wire_stamp
from git_forge.loop import notify
from git_forge.loop.context import RunContext

#: The wait goes on this long after the announced time (the agent's clock and
#: ours may differ): a fiftieth of the wait, at least 1 s, at most a minute.
MARGIN_MIN, MARGIN_MAX, MARGIN_SHARE = 1.0, 60.0, 0.02
#: How often a wait wakes to look for a ``loop stop`` and to redraw its countdown.
WAKE_SECONDS = 1.0


def until_of(verdict: Classified, default_minutes: float,
             now: datetime | None = None) -> tuple[datetime, str]:
    """When the limit lifts, and the words that say so (and whether it was a guess)."""
    now = now or datetime.now(UTC)
    said = verdict.message or verdict.kind or "usage limit"
    if verdict.reset_at is not None and verdict.reset_at > now:
        return verdict.reset_at, said
    if verdict.reset_at is not None:  # already past: try again after the margin
        return now, said
    return (now + timedelta(minutes=default_minutes),
            f"{said} (no time given: waiting loop.limitWait, {default_minutes:g} min)")


def margin(seconds: float) -> float:
    return min(MARGIN_MAX, max(MARGIN_MIN, seconds * MARGIN_SHARE))


def recorded_wait(value: str | None, now: datetime | None = None) -> datetime | None:
    """A ``waitingUntil`` an earlier run recorded, when it is still ahead."""
    if not value:
        return None
    try:
        until = parse_stamp(value)
    except ValueError:
        return None
    if until.tzinfo is None:
        until = until.replace(tzinfo=UTC)
    return until if until > (now or datetime.now(UTC)) else None


def wait_out(run: RunContext, until: datetime, reason: str, item_id: str | None,
             source: str = "agent") -> bool:
    """Record the wait, tell the operator, sleep until ``until`` plus the margin;
    ``False`` when a stop ended it (``waitingUntil`` then stays recorded)."""
    stamp = wire_stamp(until)
    run.save(waiting_until=stamp, current_item=None)
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
    while True:
        left = (deadline - datetime.now(UTC)).total_seconds()
        if left <= 0:
            break
        run.progress.countdown(left)
        if run.agent.wake.wait(min(WAKE_SECONDS, left)) or run.stop():
            return False
    run.save(waiting_until=None)
    run.journal.append("usage_limit_resumed", itemId=item_id)
    return True
