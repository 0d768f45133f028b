"""Author and committer of the commits git-forge makes, decided the way git decides.

``repo.default_signature`` reads configuration only; git honours the
environment first. For each role (author, committer), highest first:

* name: ``GIT_<ROLE>_NAME``, then ``<role>.name``, then ``user.name``;
* email: ``GIT_<ROLE>_EMAIL``, then ``<role>.email``, then ``user.email``,
  then ``EMAIL``;
* date: ``GIT_<ROLE>_DATE`` (git's raw ``@<seconds> <zone>``, RFC 2822 or
  ISO 8601), else now.

Configuration is read with git's precedence (``gitconfig.config_values``).
Where git would finally guess a name from the password database and an email
from the host name, git-forge stops with a clear error instead: commits made
unattended must not carry an accidental identity.
"""

from __future__ import annotations

import os
import re
import time
from datetime import datetime
from typing import Literal

import pygit2

from git_forge.tree.errors import GitError
from git_forge.tree.gitconfig import config_values
from git_forge.tree.repo import Repo

Role = Literal["author", "committer"]

SET_IDENTITY_HINT = (
    'tell git who you are: git config --global user.name "Your Name" and '
    'git config --global user.email "you@example.com"'
)

_RAW_DATE = re.compile(r"^@?(\d+)(?:\s+([+-])(\d\d):?(\d\d))?$")
_ISO_DATE = re.compile(
    r"^(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d(?::\d\d)?)(?:\.\d+)?"
    r"\s*(Z|[+-]\d\d:?\d\d)?$"
)


def _local_offset_minutes(timestamp: float) -> int:
    offset = datetime.fromtimestamp(timestamp).astimezone().utcoffset()
    return int(offset.total_seconds() // 60) if offset is not None else 0


def parse_git_date(value: str) -> tuple[int, int]:
    """``(seconds since the epoch, offset in minutes)`` from a ``GIT_*_DATE`` value.

    Accepts the forms git documents for these variables: the raw
    ``[@]<seconds> <+/-hhmm>``, RFC 2822 (``Thu, 07 Apr 2005 22:13:13 +0200``)
    and ISO 8601 (``2005-04-07T22:13:13[+02:00|Z]``); a form without a zone is
    local time, as in git. Anything else is a ``GitError``.
    """
    text = value.strip()
    raw = _RAW_DATE.match(text)
    if raw and (text.startswith("@") or raw.group(2) or int(raw.group(1)) >= 100_000_000):
        seconds = int(raw.group(1))
        if raw.group(2) is None:
            return seconds, _local_offset_minutes(seconds)
        minutes = int(raw.group(3)) * 60 + int(raw.group(4))
        return seconds, -minutes if raw.group(2) == "-" else minutes
    iso = _ISO_DATE.match(text)
    if iso:
        day, clock, zone = iso.groups()
        if clock.count(":") == 1:
            clock += ":00"
        if zone == "Z":
            zone = "+00:00"
        elif zone and ":" not in zone:
            zone = f"{zone[:3]}:{zone[3:]}"
        try:
            moment = datetime.fromisoformat(f"{day}T{clock}{zone or ''}")
        except ValueError:
            moment = None
        if moment is not None:
            if moment.tzinfo is None:
                moment = moment.astimezone()
            offset = moment.utcoffset()
            return int(moment.timestamp()), int(offset.total_seconds() // 60) if offset else 0
    import email.utils  # ~15 ms to import, for the rare RFC 2822 date only

    parsed = email.utils.parsedate_tz(text)
    if parsed is not None and parsed[9] is not None:
        return int(email.utils.mktime_tz(parsed)), parsed[9] // 60
    raise GitError(f"invalid date format: {value}")


def _first(*values: str | None) -> str | None:
    for value in values:
        if value:
            return value
    return None


def signature(repo: Repo, role: Role) -> pygit2.Signature:
    """The author or committer signature git would use in ``repo`` right now.

    Raises ``GitError`` naming the missing part and the two ``git config``
    commands when no name or no email is configured anywhere.
    """
    return _signatures(repo, (role,))[0]


def author_and_committer(repo: Repo) -> tuple[pygit2.Signature, pygit2.Signature]:
    """Both signatures of a new commit; fails before anything is written."""
    author, committer = _signatures(repo, ("author", "committer"))
    return author, committer


def _signatures(repo: Repo, roles: tuple[Role, ...]) -> list[pygit2.Signature]:
    """The signature of each of ``roles``, from one pass over the configuration at
    most (each pass reads every config file, and a commit needs both roles)."""
    env = os.environ
    given = {role: (env.get(f"GIT_{role.upper()}_NAME"), env.get(f"GIT_{role.upper()}_EMAIL"))
             for role in roles}
    keys = [key for role in roles if not all(given[role])
            for key in (f"{role}.name", "user.name", f"{role}.email", "user.email")]
    found = config_values(repo, keys) if keys else {}  # read only when it is needed
    return [_signature(role, *given[role], found) for role in roles]


def _signature(role: Role, name: str | None, mail: str | None,
               found: dict[str, str | None]) -> pygit2.Signature:
    env = os.environ
    upper = role.upper()
    if not name or not mail:
        name = _first(name, found[f"{role}.name"], found["user.name"])
        mail = _first(mail, found[f"{role}.email"], found["user.email"], env.get("EMAIL"))
    missing = [part for part, value in (("name", name), ("email", mail)) if not value]
    if missing:
        raise GitError(f"no git identity ({role} {' and '.join(missing)} unknown): "
                       f"{SET_IDENTITY_HINT}")
    assert name is not None and mail is not None
    date = env.get(f"GIT_{upper}_DATE")
    if date:
        try:
            seconds, offset = parse_git_date(date)
        except GitError as exc:
            raise GitError(f"{exc.message} (from GIT_{upper}_DATE)") from None
    else:
        seconds = int(time.time())
        offset = _local_offset_minutes(seconds)
    return pygit2.Signature(name, mail, seconds, offset)
