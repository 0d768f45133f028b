"""When a usage limit lifts, read from what the agent said.

Forms seen from Claude Code and Codex (tolerant of the wording around them):

* an epoch in seconds: ``"resetsAt": 1767270000``, ``Claude AI usage limit reached|1767270000``;
* a clock time in a named zone: ``resets 5:01pm (UTC)``, ``resets 1pm (Europe/Lisbon)``;
* a clock time without a zone (the machine's): ``try again at 4:43 PM``, ``try again at 15:45``;
* a day and a clock time: ``resets Dec 5, 5:51pm (UTC)``, ``try again at Dec 5th, 2026
  5:41 PM``, ``try again at 2026-12-01 15:45`` (or an ISO-8601 instant);
* a duration: ``try again in 2 hours 5 minutes``, ``in 1h 30m``, ``in 45s``, ``in 3 days``.

Both programs print the time they were given cut to the minute (``resetsAt``
17:01:39 is ``5:01pm``), so a time told to the minute means the *end* of that
minute: waiting only until its start comes back inside the minute and meets the
limit again. A clock time without a day is today's; one that has already passed
today (within ``PASSED``) is a limit that has lifted — now, not tomorrow — and
only a time further behind than that means tomorrow (``resets 12:30am`` said at
11:50pm). ``try again in a moment`` holds no time.

Everything is returned in UTC. ``None`` means the text holds no time (the caller
waits a configured default and says so). The text is the agent's, so it may lie:
a time further ahead than ``LATEST`` (``try again at 9999-12-31 23:59``, ``in
99999999999 days``) is read as that far, never as a date no clock can add a margin
to; the loop clamps its waits further (``loop.limitWaitMax``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo

_EPOCH = re.compile(r"(?:\|\s*|resets?(?:At)?\"?\s*[:=]?\s*)(\d{10})(?:\.\d+)?\b")
#: What introduces a time the limit lifts at.
_AT = r"(?:resets?|try again at|available again at|until)\s+(?:at\s+|on\s+)?"
#: A clock time: ``5:01pm``, ``4:43 PM``, ``15:45``, ``1pm``, with a zone in brackets.
_TIME = (r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<ampm>[ap]\.?\s?m\.?)?"
         r"(?:\s*\((?P<zone>[A-Za-z_+\-/0-9]+)\))?")
_CLOCK = re.compile(_AT + _TIME, re.IGNORECASE)
#: A day by its month's name: ``Dec 5``, ``Dec 5th, 2026``, ``December 5,``.
_MONTH_DAY = re.compile(
    _AT + r"(?P<month>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+"
    r"(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?:(?P<year>\d{4}),?\s+)?(?:at\s+)?" + _TIME,
    re.IGNORECASE)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DATE_TIME = re.compile(
    _AT + r"(?P<stamp>\d{4}-\d{2}-\d{2}[ T]\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?"
    r"(?:Z|[+-]\d{2}:?\d{2})?)", re.IGNORECASE)
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
        return ZoneInfo(name)
    except (KeyError, ValueError, OSError):
        return None


def _clock(match: re.Match[str]) -> tuple[int, int] | None:
    """The hour and minute of a ``_TIME`` match, on a 24-hour clock; ``None`` when it
    is no clock time (a bare number: ``resets 5`` could be anything)."""
    hour, minute = int(match.group("hour")), int(match.group("minute") or 0)
    ampm = (match.group("ampm") or "").lower().replace(".", "").replace(" ", "")
    if not (ampm or match.group("minute") is not None or match.group("zone")):
        return None
    if ampm and not 1 <= hour <= 12:
        return None
    if ampm == "pm" and hour < 12:
        hour += 12
    elif ampm == "am" and hour == 12:
        hour = 0
    return (hour, minute) if hour < 24 and minute < 60 else None


#: A clock time without a day that passed less than this long ago has lifted
#: (now); one further behind is tomorrow's.
PASSED = timedelta(hours=12)
#: A day without a year that passed more than this long ago is next year's.
_PASSED_DAY = timedelta(days=183)


def _minute_end(moment: datetime) -> datetime:
    """The end of the minute ``moment`` (told to the minute) names."""
    return moment + timedelta(minutes=1)


def _wall_clock(now: datetime, zone: tzinfo | None) -> datetime:
    """``now`` as a clock on the wall shows it: in ``zone``, or on the machine's clock
    (naive: ``astimezone`` then places a time by the machine's rules for *its* day, so
    one past a change to or from summer time gets that day's offset, not today's)."""
    return now.astimezone(zone) if zone is not None else now.astimezone().replace(tzinfo=None)


def _clock_time(match: re.Match[str], now: datetime) -> datetime | None:
    clock = _clock(match)
    if clock is None:
        return None
    local_now = _wall_clock(now, _zone(match.group("zone")))
    moment = _minute_end(local_now.replace(hour=clock[0], minute=clock[1], second=0,
                                           microsecond=0))
    if now - moment.astimezone(UTC) > PASSED:
        moment += timedelta(days=1)
    return moment.astimezone(UTC)


def _day_and_time(match: re.Match[str], now: datetime) -> datetime | None:
    clock = _clock(match)
    if clock is None:
        return None
    local_now = _wall_clock(now, _zone(match.group("zone")))
    month = _MONTHS.index(match.group("month")[:3].lower()) + 1
    year = int(match.group("year") or local_now.year)
    try:
        moment = local_now.replace(year=year, month=month, day=int(match.group("day")),
                                   hour=clock[0], minute=clock[1], second=0, microsecond=0)
        if match.group("year") is None and now - moment.astimezone(UTC) > _PASSED_DAY:
            moment = moment.replace(year=year + 1)
    except ValueError:  # no such day (Feb 30th)
        return None
    return _minute_end(moment).astimezone(UTC)


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
    match = _MONTH_DAY.search(text)
    if match:
        moment = _day_and_time(match, now)
        if moment is not None:
            return _believable(moment, now)
    match = _DURATION.search(text)
    if match:
        seconds = 0.0
        for amount, unit in _PART.findall(match.group("span")):
            seconds += float(amount) * _UNIT_SECONDS[unit[0].lower()]
        if seconds > 0:
            return now + timedelta(seconds=min(seconds, LATEST.total_seconds()))
    match = _CLOCK.search(text)
    return _clock_time(match, now) if match else None
