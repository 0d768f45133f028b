"""Author and committer of the commits git-forge makes, decided the way git decides.

``repo.default_signature`` reads configuration only; git honours the
environment first. For each role (author, committer), highest first:

* name: ``GIT_<ROLE>_NAME``, then ``<role>.name``, then ``user.name``;
* email: ``GIT_<ROLE>_EMAIL``, then ``<role>.email``, then ``user.email``,
  then ``EMAIL``;
* date: ``GIT_<ROLE>_DATE``, read by git itself (``git var``: every format git
  accepts), else now.

Configuration is git's answer (``gitconfig.config_values``).
Where git would finally guess a name from the password database and an email
from the host name, git-forge stops with a clear error instead: commits made
unattended must not carry an accidental identity.
"""

from __future__ import annotations

import os
import time
from datetime import datetime
from typing import Literal

import pygit2

from git_forge.tree.errors import GitError
from git_forge.tree.gitcli import git_result
from git_forge.tree.gitconfig import config_values
from git_forge.tree.repo import Repo

Role = Literal["author", "committer"]

SET_IDENTITY_HINT = (
    'tell git who you are: git config --global user.name "Your Name" and '
    'git config --global user.email "you@example.com"'
)


def _local_offset_minutes(timestamp: float) -> int:
    offset = datetime.fromtimestamp(timestamp).astimezone().utcoffset()
    return int(offset.total_seconds() // 60) if offset is not None else 0


def _git_date(repo: Repo, role: Role, name: str, mail: str) -> tuple[int, int]:
    """``(seconds since the epoch, offset in minutes)`` of ``GIT_<ROLE>_DATE`` as
    git reads it: the date of ``git var GIT_<ROLE>_IDENT`` for this name and email.
    A date git refuses is a ``GitError`` in git's words."""
    upper = role.upper()
    env = {**repo.git_env(), f"GIT_{upper}_NAME": name, f"GIT_{upper}_EMAIL": mail}
    args = ["var", f"GIT_{upper}_IDENT"]
    result = git_result(args, cwd=repo.workdir, env=env)
    if result.returncode != 0:
        said = os.fsdecode(result.stderr).strip().removeprefix("fatal: ")
        raise GitError(f"{said} (from GIT_{upper}_DATE)")
    seconds, zone = os.fsdecode(result.stdout).strip().rsplit(" ", 2)[1:]
    minutes = int(zone[1:3]) * 60 + int(zone[3:5])
    return int(seconds), -minutes if zone.startswith("-") else minutes


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
    return [_signature(repo, role, *given[role], found) for role in roles]


def _signature(repo: Repo, role: Role, name: str | None, mail: str | None,
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
    if env.get(f"GIT_{upper}_DATE"):
        seconds, offset = _git_date(repo, role, name, mail)
    else:
        seconds = int(time.time())
        offset = _local_offset_minutes(seconds)
    return pygit2.Signature(name, mail, seconds, offset)
