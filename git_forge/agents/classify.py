"""What an agent's attempt came to, beyond its signal: done with its work, a
usage limit to wait out (or one no clock lifts), a command line the program
refused, or a failure with a signature the circuit breaker compares across
attempts (``exit 1: not logged in``).

A failure's *kind* is a short, stable phrase; its signature is the exit code and
the kind, so two attempts that failed for the same reason compare equal however
their messages differ in detail.

The structured fields decide first, the words last. Claude Code's error result
carries ``api_error_status`` (429 a limit, 401/403 a credential, 500/529 the
server's trouble), ``api_error`` (``usage_limit_reached``) and, with its
rejected ``rate_limit_event`` or its synthetic message's ``api_error_params``,
the limit's ``resetsAt``. Its words for a server error end "try again in a
moment": no time, and never a usage limit. The words rules are for what has no
structure (Codex's messages, a plain agent's last lines)."""

from __future__ import annotations

import re
from collections.abc import Callable
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
    #: The program refused its command line (an unknown flag): no item is at
    #: fault and no retry can help — stop the run with the program's words.
    COMMAND_REFUSED = "command_refused"


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

    @property
    def agents_own(self) -> bool:
        """Whether the failure is the agent's by kind (``AGENT_KINDS``), not an item's."""
        return self.kind in AGENT_KINDS


NOT_LOGGED_IN = "not logged in"
COMMAND_NOT_FOUND = "command not found"
COMMAND_LINE_REFUSED = "command line refused"
#: Gemini CLI does not trust the folder (run without ``--skip-trust``): exit 55.
UNTRUSTED_FOLDER = "folder not trusted"
#: The failure a usage limit is once it is reported again after its announced end.
AFTER_ITS_RESET = "usage limit reported after its reset"
#: Failures that are the agent program's whatever the item it works on — its login,
#: its installation, its command line, its account's limit: no other item can succeed
#: while one lasts, so the circuit breaker counts them on one item too.
AGENT_KINDS = frozenset({NOT_LOGGED_IN, COMMAND_NOT_FOUND, COMMAND_LINE_REFUSED, AFTER_ITS_RESET,
                         UNTRUSTED_FOLDER})


_NOT_LOGGED_IN = re.compile(
    r"invalid api key|please run /login|not logged in|log ?in required|login required|"
    r"authentication[_ ]error|oauth token (?:has )?expired|\b401 unauthorized|"
    r"\b(?:status|error|http)[: ]*401\b", re.IGNORECASE)
_HARD_LIMIT = re.compile(r"disabled by your admin|spend limit|credit balance is too low|"
                         r"quota exceeded", re.IGNORECASE)
_TIME_LIMIT = re.compile(
    r"hit your (?:[\w-]+ )?limit|usage limit|session limit|rate limit reached|"
    r"limit reached\|", re.IGNORECASE)
#: Words that are a limit only when a time follows them (not "in a moment").
_TRY_AGAIN = re.compile(r"try again (?:at|in)\b", re.IGNORECASE)
#: The server's own trouble, in the words: never a usage limit.
_SERVER_ERROR = re.compile(r"API Error:?\s*(?:5\d\d|529)\b", re.IGNORECASE)
#: A command-line parser's refusal (clap: Codex; commander.js: Claude Code, Copilot
#: CLI; yargs: Gemini CLI, Qwen Code).
_USAGE_ERROR = re.compile(
    r"^(?:error: (?:unexpected argument|unknown option|unknown command|too many arguments|"
    r"invalid value|a value is required|the argument .* cannot be used|"
    r"missing required argument|option .* argument .* is invalid|"
    r"the following required arguments)"
    # yargs (Gemini CLI, Qwen Code): ``Unknown argument: bogus``
    r"|Unknown arguments?: |Not enough non-option arguments|Invalid values?:)",
    re.IGNORECASE | re.MULTILINE)
_API_ERROR = re.compile(r"API Error:?[ \t]*([^\n]*)", re.IGNORECASE)
_API_STATUS = re.compile(r"^(\d{3})\b")
_API_TYPE = re.compile(r'"type"\s*:\s*"(\w+_error)"')
#: A failed plain agent's stdout counts as words only in its last lines.
PLAIN_LINES = 20


#: The longest failure kind quoted from an agent's words.
KIND_LIMIT = 80


def _kind_of(errors: list[str]) -> str | None:
    """A failure's kind in the agent's own final words (``Reached maximum number of
    turns (1)``, ``We're currently experiencing high demand…``): their first line,
    cut before any address (it may differ between attempts) and to ``KIND_LIMIT``."""
    if not errors:
        return None
    line = re.split(r"[,(]?\s*(?:url:\s*)?https?://", _first_line(errors[-1]), maxsplit=1)[0]
    line = line.strip().rstrip(".,:;")
    return (line if len(line) <= KIND_LIMIT else line[:KIND_LIMIT - 1] + "…") or None


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return " ".join(line.split())
    return ""


#: A profile's own reading of a failure, before the shared rules (``Profile.failure``):
#: its facts, exit code, its words (stderr and the stream's errors) and now.
FailureReader = Callable[[Facts, "int | None", str, datetime], "Classified | None"]


def classify(facts: Facts, exit_code: int | None, stderr: str, *, stdout: str = "",
             structured: bool = False, now: datetime | None = None,
             own: FailureReader | None = None) -> Classified:
    """Classify one finished attempt from its parsed stream, exit code, stderr and
    the end of its stdout. An agent whose stream says it finished its work ran,
    whatever its exit code (Codex may exit non-zero after a completed turn). With
    a ``structured`` stream only its non-JSON lines count as words (a limit
    message Claude prints as plain text); a plain stream's last lines count only
    when the attempt failed (a done agent may talk of limits). ``own``: the
    profile's reading, which decides first where it knows."""
    if facts.completed_turn:
        return Classified(Verdict.RAN)
    now = now or datetime.now(UTC)
    if own is not None:
        known = own(facts, exit_code, "\n".join(filter(None, [*facts.errors, stderr])), now)
        if known is not None:
            return known
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
                 and 0 < epoch < 1e11 else reset_time(said, now))
        return Classified(Verdict.LIMIT_WAIT, "usage limit", reset,
                          f"usage limit ({facts.rejected_limit.get('rateLimitType') or 'rate'})")
    if structured and facts.session_id is None and facts.result is None:
        refused = _USAGE_ERROR.search(stderr)
        if refused and exit_code not in (0, None):
            return Classified(Verdict.COMMAND_REFUSED, COMMAND_LINE_REFUSED,
                              message=_line_of(stderr, refused.start()))
    api = _api_error_of(facts, said, now)
    hard = _HARD_LIMIT.search(said)
    if hard and (api is None or api.verdict is Verdict.FAILED):
        # Its status is an ordinary one (Claude's "Credit balance is too low" is a 400,
        # an allocation an admin disabled a 403): the words say no retry can help.
        return Classified(Verdict.LIMIT_STOP, "usage limit no clock lifts",
                          message=_line_of(said, hard.start()))
    if api is not None:
        return api
    worded = _TIME_LIMIT.search(said)
    limit = worded or _TRY_AGAIN.search(said)
    reset = reset_time(said, now) if limit else None
    if limit and (reset is not None or worded):
        line = _line_of(said, limit.start())
        if _SERVER_ERROR.search(line):
            return Classified(Verdict.FAILED, _api_error(line), message=line)
        if "API Error" in line and reset is None:
            # An API rate limit with no time: a failed attempt, retried as usual.
            return Classified(Verdict.FAILED, _api_error(line), message=line)
        return Classified(Verdict.LIMIT_WAIT, "usage limit", reset, line)
    if _NOT_LOGGED_IN.search(said):
        return Classified(Verdict.FAILED, NOT_LOGGED_IN, message=_first_line(said))
    if exit_code == 127:
        return Classified(Verdict.FAILED, COMMAND_NOT_FOUND, message=_first_line(stderr))
    if _is_error(facts):
        words = _result_words(facts)
        subtype = (facts.result or {}).get("subtype")
        kind = (_api_error(words) or _kind_of(facts.errors) or
                f"error result ({subtype if isinstance(subtype, str) else 'is_error'})")
        return Classified(Verdict.FAILED, kind, message=_first_line(words) or None)
    if facts.errors:
        return Classified(Verdict.FAILED, _api_error(facts.errors[-1]) or _kind_of(facts.errors)
                          or "turn failed", message=_first_line(facts.errors[-1]))
    if structured and exit_code not in (0, None) and facts.result is None:
        return Classified(Verdict.FAILED, None,
                          message=error_line(stderr) or facts.retrying or None)
    return Classified(Verdict.RAN)


def _api_error_of(facts: Facts, said: str, now: datetime) -> Classified | None:
    """What Claude Code's error result says in its structured fields, or ``None``
    when it says nothing there (then the words decide)."""
    result = facts.result
    if not _is_error(facts) or result is None:
        return None
    status = result.get("api_error_status")
    status = status if type(status) is int and 100 <= status <= 599 else None  # an HTTP status
    error = result.get("api_error")
    kind = result.get("api_error_type")
    kind = kind if isinstance(kind, str) and re.fullmatch(r"\w{1,40}", kind) else None
    words = _result_words(facts)
    line = _first_line(words) or None
    if error == "usage_limit_reached" or status == 429:
        # A subscriber's limit says when it resets; an API key's 429 says "later".
        return Classified(Verdict.LIMIT_WAIT, "usage limit", reset_time(said, now),
                          line or "usage limit")
    if status in (401, 403) or kind in ("authentication_error", "permission_error"):
        return Classified(Verdict.FAILED, NOT_LOGGED_IN, message=line)
    if status is not None:
        return Classified(Verdict.FAILED, " ".join(
            part for part in ("API Error:", str(status), kind) if part), message=line)
    return None


def error_line(text: str) -> str | None:
    """The line of ``text`` that says what went wrong: the last ``error: …`` /
    ``fatal: …`` line (a program's usage text after it ends with "For more
    information, try '--help'.", which says nothing), else its last line."""
    lines = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith(("error:", "fatal:")):
            return line
    return lines[-1] if lines else None


def _result_words(facts: Facts) -> str:
    """An error result's words: its ``result`` text, else its last ``errors`` entry."""
    return facts.final_text or (facts.errors[-1] if facts.errors else "")


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


#: The server's own trouble, whose status Gemini CLI exits with (modulo 256): only
#: those, since other statuses would read as its own exit codes (554 as 42, an
#: input error; 553 as 41, no auth method).
_SERVER_EXITS = {status % 256: status for status in (500, 502, 503, 504)}
#: Gemini CLI's words, read in its ``result`` error only (never in free stderr, whose
#: stack traces are full of numbers): a refused credential, a used-up quota.
_GEMINI_AUTH = re.compile(r"UNAUTHENTICATED|PERMISSION_DENIED|API key not valid|"
                          r"\[API Error: (?:\{\"error\":\{\"code\":)?40[13]\b")
_GEMINI_LIMIT = re.compile(r"RESOURCE_EXHAUSTED|exhausted your (?:daily )?quota|"
                           r"\[API Error: (?:\{\"error\":\{\"code\":)?429\b")


def gemini_failure(facts: Facts, exit_code: int | None, said: str,
                   now: datetime) -> Classified | None:
    """Gemini CLI 0.61's failures: it exits with the HTTP status of the request that
    failed, modulo 256 — 173 for a 429 (its per-day quota, which it never retries,
    says no time: the loop waits its default), 145 for a 401 —, 41 when no auth
    method is set, 55 in a folder it does not trust; its ``result`` error says the
    same in words. Its stderr counts only for those two exact complaints."""
    words = "\n".join(facts.errors)
    line = _first_line(facts.errors[-1]) if facts.errors else error_line(said)
    if exit_code == 55 and "not running in a trusted directory" in said:
        return Classified(Verdict.COMMAND_REFUSED, UNTRUSTED_FOLDER, message=line)
    if exit_code == 429 % 256 or _GEMINI_LIMIT.search(words):
        return Classified(Verdict.LIMIT_WAIT, "usage limit", reset_time(words, now),
                          line or "usage limit")
    if (exit_code in (401 % 256, 403 % 256) or _GEMINI_AUTH.search(words)
            or (exit_code == 41 and "Invalid auth method" in said)):
        return Classified(Verdict.FAILED, NOT_LOGGED_IN, message=line)
    if exit_code in _SERVER_EXITS:
        return Classified(Verdict.FAILED, f"API Error: {_SERVER_EXITS[exit_code]}",
                          message=line)
    return None


_QWEN_STATUS = re.compile(r"\[API Error: (\d{3})\b")
_QWEN_NO_CLOCK = re.compile(r"exceeded your current quota|insufficient_quota|billing",
                            re.IGNORECASE)


def qwen_failure(facts: Facts, exit_code: int | None, said: str,
                 now: datetime) -> Classified | None:
    """Qwen Code's failed request, ``[API Error: <status> …]`` in its final text or
    error: 401/403 not logged in; a 429 for a quota the account has used up (OpenAI's
    ``insufficient_quota``: billing, no clock lifts it) stops the run, another waits."""
    found = _QWEN_STATUS.search(said)
    if found is None:
        return None
    status, line = int(found.group(1)), _line_of(said, found.start())
    if status in (401, 403):
        return Classified(Verdict.FAILED, NOT_LOGGED_IN, message=line)
    if status == 429:
        if _QWEN_NO_CLOCK.search(said):
            return Classified(Verdict.LIMIT_STOP, "usage limit no clock lifts", message=line)
        return Classified(Verdict.LIMIT_WAIT, "usage limit", reset_time(said, now), line)
    return Classified(Verdict.FAILED, f"API Error: {status}", message=line)


def copilot_failure(facts: Facts, exit_code: int | None, said: str,
                    now: datetime) -> Classified | None:
    """Copilot CLI's ``session.error`` (and OpenCode's ``error``, read into the same
    fields): ``rate_limit`` or a 429 after their own retries (no time given: waited
    out the loop's default; a used-up quota stops the run), ``authentication`` or a
    401/403 not logged in, else its status."""
    error = facts.result or {}
    kind, status = error.get("errorType"), error.get("statusCode")
    line = _first_line(facts.errors[-1]) if facts.errors else None
    if kind is None and status is None:
        return None
    if kind == "rate_limit" or status == 429:
        if _QWEN_NO_CLOCK.search(said):
            return Classified(Verdict.LIMIT_STOP, "usage limit no clock lifts", message=line)
        return Classified(Verdict.LIMIT_WAIT, "usage limit", reset_time(said, now), line)
    if kind == "authentication" or status in (401, 403):
        return Classified(Verdict.FAILED, NOT_LOGGED_IN, message=line)
    if type(status) is int:
        return Classified(Verdict.FAILED, f"API Error: {status}", message=line)
    return Classified(Verdict.FAILED, f"session error ({kind})" if isinstance(kind, str)
                      and kind.isidentifier() else "session error", message=line)
