"""What an agent's attempt came to, beyond its signal: done with its work, a
usage limit to wait out (or one no clock lifts), or a failure with a signature
the circuit breaker compares across attempts (``exit 1: not logged in``).

A failure's *kind* is a short, stable phrase; its signature is the exit code and
the kind, so two attempts that failed for the same reason compare equal however
their messages differ in detail."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum

from git_forge.agents.limits import reset_time
from git_forge.agents.streams import Facts


class Verdict(Enum):
    #: The agent ran to an end of its own (its signal decides what that was).
    RAN = "ran"
    #: It failed: retried, then deferred — or, repeated, the circuit breaker trips.
    FAILED = "failed"
    #: A usage limit with a time it lifts: wait, then retry the same item.
    LIMIT_WAIT = "limit_wait"
    #: A limit no clock lifts (disabled by an admin, a spend limit): stop the run.
    LIMIT_STOP = "limit_stop"


@dataclass(frozen=True)
class Classified:
    verdict: Verdict
    #: The failure's kind (``not logged in``, ``API Error: Rate limit reached``…).
    kind: str | None = None
    #: When a time-based limit lifts (UTC); ``None`` for a limit whose time did not
    #: parse (the loop then waits its default).
    reset_at: datetime | None = None
    #: The agent's own words about it (for the operator).
    message: str | None = None

    def signature(self, exit_code: int | None) -> str:
        return f"exit {exit_code}: {self.kind or 'failed'}"


_NOT_LOGGED_IN = re.compile(
    r"invalid api key|please run /login|not logged in|log ?in required|login required|"
    r"authentication[_ ]error|oauth token (?:has )?expired|\b401 unauthorized|"
    r"\b(?:status|error|http)[: ]*401\b", re.IGNORECASE)
_HARD_LIMIT = re.compile(r"disabled by your admin|spend limit|credit balance is too low",
                         re.IGNORECASE)
_TIME_LIMIT = re.compile(
    r"hit your (?:\w+ )?limit|usage limit|session limit|rate limit reached|"
    r"try again (?:at|in)\b|limit reached\|", re.IGNORECASE)
_API_ERROR = re.compile(r"API Error:?[ \t]*([^\n]*)", re.IGNORECASE)
_API_STATUS = re.compile(r"^(\d{3})\b")
_API_TYPE = re.compile(r'"type"\s*:\s*"(\w+_error)"')
#: A failed plain agent's stdout counts as words only in its last lines.
PLAIN_LINES = 20


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return " ".join(line.split())
    return ""


def classify(facts: Facts, exit_code: int | None, stderr: str, *, stdout: str = "",
             structured: bool = False, now: datetime | None = None) -> Classified:
    """Classify one finished attempt from its parsed stream, exit code, stderr and
    the end of its stdout. An agent whose stream says it finished its work ran,
    whatever its exit code (Codex may exit non-zero after a completed turn). With
    a ``structured`` stream only its non-JSON lines count as words (a limit
    message Claude prints as plain text); a plain stream's last lines count only
    when the attempt failed (a done agent may talk of limits)."""
    if facts.completed_turn:
        return Classified(Verdict.RAN)
    now = now or datetime.now(UTC)
    if structured:
        plain = "\n".join(line for line in stdout.splitlines()
                          if line.strip() and not line.lstrip().startswith("{"))
    else:
        plain = ("\n".join(stdout.splitlines()[-PLAIN_LINES:])
                 if exit_code not in (0, None) else "")
    said = "\n".join(filter(None, [facts.final_text if _is_error(facts) else "",
                                   *facts.errors, plain, stderr]))
    if facts.rejected_limit is not None:
        epoch = facts.rejected_limit.get("resetsAt")
        reset = (datetime.fromtimestamp(epoch, UTC)
                 if isinstance(epoch, int | float) and not isinstance(epoch, bool)
                 and 0 < epoch < 1e11 else None)
        return Classified(Verdict.LIMIT_WAIT, "usage limit", reset,
                          f"usage limit ({facts.rejected_limit.get('rateLimitType') or 'rate'})")
    hard = _HARD_LIMIT.search(said)
    if hard:
        return Classified(Verdict.LIMIT_STOP, "usage limit no clock lifts",
                          message=_line_of(said, hard.start()))
    limit = _TIME_LIMIT.search(said)
    if limit:
        line = _line_of(said, limit.start())
        if "API Error" in line and not re.search(r"try again|resets?", said, re.IGNORECASE):
            # An API rate limit with no time: a failed attempt, retried as usual.
            return Classified(Verdict.FAILED, _api_error(line), message=line)
        return Classified(Verdict.LIMIT_WAIT, "usage limit", reset_time(said, now), line)
    if _NOT_LOGGED_IN.search(said):
        return Classified(Verdict.FAILED, "not logged in", message=_first_line(said))
    if exit_code == 127:
        return Classified(Verdict.FAILED, "command not found", message=_first_line(stderr))
    if _is_error(facts):
        return Classified(Verdict.FAILED, _api_error(facts.final_text) or
                          f"error result ({(facts.result or {}).get('subtype') or 'is_error'})",
                          message=_first_line(facts.final_text))
    if facts.errors:
        return Classified(Verdict.FAILED, _api_error(facts.errors[-1]) or "turn failed",
                          message=_first_line(facts.errors[-1]))
    if structured and exit_code not in (0, None) and facts.result is None:
        return Classified(Verdict.FAILED, None, message=_first_line(stderr) or None)
    return Classified(Verdict.RAN)


def _is_error(facts: Facts) -> bool:
    """Claude's ``is_error: true`` — a failed attempt even with exit 0."""
    return bool(facts.result is not None and facts.result.get("is_error") is True)


def _api_error(text: str) -> str | None:
    """``API Error: Rate limit reached``; ``API Error: 529 overloaded_error`` for one
    carrying a status and a JSON body (whose request id would differ every time)."""
    match = _API_ERROR.search(text)
    if not match:
        return None
    detail = match.group(1).strip()
    status = _API_STATUS.match(detail)
    kind = _API_TYPE.search(detail)
    if status or kind:
        words = [part for part in (status and status.group(1), kind and kind.group(1)) if part]
        return "API Error: " + " ".join(words)
    detail = re.split(r"[{(\[]", detail, maxsplit=1)[0].strip().rstrip(".")
    detail = detail[:60].rstrip()
    return f"API Error: {detail}" if detail else "API Error"


def _line_of(text: str, position: int) -> str:
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    return " ".join(text[start:end if end >= 0 else len(text)].split())
