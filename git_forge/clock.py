"""Every timestamp git-forge writes, one function per use, all in UTC.

Three shapes, each named by what it is for rather than by how it is made:

* ``wire_now`` — ``2026-11-29T10:11:12Z``: second precision, what backlog.json,
  state.json, the decision record and a lock's holder label hold.
* ``precise_now`` / ``precise_stamp`` — ``2026-11-29T10:11:12.345Z``: millisecond
  precision, what the supervisor's manifests and the events journal hold (events
  in one second must still sort); ``parse_stamp`` reads either shape back.
* ``compact_stamp`` / ``compact_precise_stamp`` — ``20261129T101112Z`` (and with
  microseconds): no separators git or a file system could object to, for safety
  ref names, run ids and archived file names.

Standard library only, and nothing else of git-forge: any module may import it.
``datetime`` is imported where a timestamp is made or read (the common-case boundary,
ARCHITECTURE.md): ``status`` and ``decision list`` import this module and, on their
common path, call none of it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime


def wire_now() -> str:
    """Now as ``2026-11-29T10:11:12Z`` — the timestamp of every durable record."""
    from datetime import UTC, datetime  # common-case boundary

    return wire_stamp(datetime.now(UTC))


def wire_stamp(moment: datetime) -> str:
    """``moment`` as ``wire_now`` writes it (a usage limit's end in state.json)."""
    from datetime import UTC  # common-case boundary

    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def precise_stamp(moment: datetime) -> str:
    """``moment`` as ``2026-11-29T10:11:12.345Z`` — a manifest's or an event's time."""
    from datetime import UTC  # common-case boundary

    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def precise_now() -> str:
    """Now as ``precise_stamp`` writes it."""
    from datetime import UTC, datetime  # common-case boundary

    return precise_stamp(datetime.now(UTC))


def parse_stamp(value: str) -> datetime:
    """A timestamp written by this module (or any ISO-8601 text) back to a moment;
    ``ValueError`` when it is not one."""
    from datetime import datetime  # common-case boundary

    return datetime.fromisoformat(value)


def compact_stamp() -> str:
    """Now as ``20261129T101112Z`` — for a safety ref's name and a run id."""
    from datetime import UTC, datetime  # common-case boundary

    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def compact_precise_stamp() -> str:
    """Now as ``20261129T101112345678Z`` (microseconds) — for an archived file's name,
    where two archives in one second must not collide."""
    from datetime import UTC, datetime  # common-case boundary

    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
