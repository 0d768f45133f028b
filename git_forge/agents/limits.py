"""When a usage limit lifts, read from what the agent said.

Forms seen from Claude Code and Codex (tolerant of the wording around them):

* an epoch in seconds: ``"resetsAt": 1767270000``, ``Claude AI usage limit reached|1767270000``;
* a clock time in a named zone: ``resets 1pm (Europe/Lisbon)``, ``resets 1:30 pm (UTC)``;
* a clock time without a zone (the machine's): ``try again at 3:45 PM``, ``try again at 15:45``;
* a date and time: ``try again at 2026-12-01 15:45`` (or an ISO-8601 instant);
* a duration: ``try again in 2 hours 5 minutes``, ``in 1h 30m``, ``in 45s``, ``in 3 days``.

A clock time means its next occurrence after ``now``. Everything is returned in
UTC. ``None`` means the text holds no time (the caller waits a configured default
and says so). The text is the agent's, so it may lie: a time further ahead than
``LATEST`` (``try again at 9999-12-31 23:59``, ``in 99999999999 days``) is read as
that far, never as a date no clock can add a margin to; the loop clamps its waits
further (``loop.limitWaitMax``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, tzinfo

_EPOCH = re.compile(r"(?:\|\s*|resets?(?:At)?\"?\s*[:=]?\s*)(\d{10})(?:\.\d+)?\b")
_CLOCK = re.compile(
    r"(?:resets?|try again at|available again at|until)\s+(?:at\s+)?"
    r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<ampm>[ap]\.?\s?m\.?)?"
    r"(?:\s*\((?P<zone>[A-Za-z_+\-/0-9]+)\))?", re.IGNORECASE)
_DATE_TIME = re.compile(
    r"(?:resets?|try again at|until)\s+(?:at\s+)?"
    r"(?P<stamp>\d{4}-\d{2}-\d{2}[ T]\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)",
    re.IGNORECASE)
_DURATION = re.compile(r"(?:try again|retry|available again)\s+in\s+(?P<span>[^.;,\n]*)",
                       re.IGNORECASE)
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(d|days?|h|hrs?|hours?|m|mins?|minutes?|s|secs?|seconds?)\b",
                   re.IGNORECASE)
_UNIT_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
#: The furthest ahead a limit's end is read: no usage limit lasts a year.
LATEST = timedelta(days=366)


def _believable(moment: datetime, now: datetime) -> datetime:
    """``moment`` (an end the agent gave), at most ``LATEST`` ahead of ``now``."""
    return min(moment, now + LATEST)


def _zone(name: str | None) -> tzinfo | None:
    if not name:
        return None
    if name.upper() in ("UTC", "GMT", "Z"):
        return UTC
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(name)
    except (KeyError, ValueError, OSError, ImportError):
        return None


def _next_clock(hour: int, minute: int, zone: tzinfo | None, now: datetime) -> datetime:
    local_now = now.astimezone(zone) if zone is not None else now.astimezone()
    candidate = local_now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if candidate <= local_now:
        candidate += timedelta(days=1)
    return candidate.astimezone(UTC)


def reset_time(text: str, now: datetime | None = None) -> datetime | None:
    """When the limit that ``text`` reports lifts, in UTC, or ``None``."""
    now = now or datetime.now(UTC)
    match = _EPOCH.search(text)
    if match:
        return _believable(datetime.fromtimestamp(int(match.group(1)), UTC), now)
    match = _DATE_TIME.search(text)
    if match:
        stamp = match.group("stamp").replace(" ", "T").replace("Z", "+00:00")
        try:
            moment = datetime.fromisoformat(stamp)
        except ValueError:
            moment = None
        if moment is not None:
            try:
                if moment.tzinfo is None:
                    moment = moment.astimezone()
                return _believable(moment.astimezone(UTC), now)
            except OverflowError:  # beyond year 9999 once in UTC
                return now + LATEST
    match = _DURATION.search(text)
    if match:
        seconds = 0.0
        for amount, unit in _PART.findall(match.group("span")):
            seconds += float(amount) * _UNIT_SECONDS[unit[0].lower()]
        if seconds > 0:
            return now + timedelta(seconds=min(seconds, LATEST.total_seconds()))
    match = _CLOCK.search(text)
    if match:
        hour, minute = int(match.group("hour")), int(match.group("minute") or 0)
        ampm = (match.group("ampm") or "").lower().replace(".", "").replace(" ", "")
        if ampm == "pm" and hour < 12:
            hour += 12
        elif ampm == "am" and hour == 12:
            hour = 0
        if hour < 24 and minute < 60 and (ampm or match.group("minute") is not None
                                          or match.group("zone")):
            return _next_clock(hour, minute, _zone(match.group("zone")), now)
    return None
