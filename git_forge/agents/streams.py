"""Readers of the structured streams agents write: Claude Code's ``stream-json``,
Codex's ``exec --json`` JSONL, Gemini CLI's and Qwen Code's ``stream-json``,
Copilot CLI's ``--output-format json`` and OpenCode's ``run --format json``
JSONL, and the plain stream of any other command.

Each reader is fed the agent's stdout as it arrives and keeps only what matters
afterwards — the final text (where the signal is), the session id, the usage,
what failed — never the transcript, so its memory is flat in the transcript's
size. Lines are only parsed as JSON when their event type is one of the few it
reads (a substring test first): the bulk of a transcript, message and tool
events, costs a ``find`` each. Unknown fields and event types are ignored.

A stream is untrusted text. A session id goes on the retry's command line, so only
one of a conservative shape is kept (``session_problem``); a cost or a count that
is not one (``1e999``, ``NaN``, a negative) is unknown. Either is noted in
``Facts.refused``, for the loop to say so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from git_forge.agents.receipt import cost_of, count_of

#: Called with assistant text as it streams (``loop run --follow`` shows it).
TextSink = Callable[[str], None]


@dataclass
class Facts:
    """What a stream said that the loop acts on."""

    final_text: str = ""
    session_id: str | None = None
    #: Claude's ``result`` event: subtype, is_error, …; ``None`` when none came.
    result: dict[str, Any] | None = None
    #: A rejected rate limit: ``{"resetsAt": epoch, "rateLimitType": …}``.
    rejected_limit: dict[str, Any] | None = None
    #: Messages of failures the stream reported, the final one last (Codex
    #: ``turn.failed`` / ``error``, Claude's error result's ``errors``).
    errors: list[str] = field(default_factory=list)
    #: The last retry the agent reported making of its own (Claude's
    #: ``system/api_retry``: ``529 overloaded``; Codex's ``Reconnecting... 2/5 (…)``):
    #: not a failure of its own — the final error, if any, comes after it.
    retrying: str | None = None
    #: Warnings the agent reported (Codex's ``item.type: error`` items), the last few.
    warnings: list[str] = field(default_factory=list)
    #: The agent finished its work: Claude's non-error ``result``, Codex's last
    #: turn ``turn.completed`` (it may exit non-zero after one: the events win).
    completed_turn: bool = False
    #: The token counts are the session's running totals, not this process's
    #: (Codex's ``turn.completed`` usage on ``exec resume``): the receipt takes
    #: what an earlier attempt of the session reported off them.
    running_totals: bool = False
    turns: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    duration_ms: int | None = None
    #: What the stream reported that is not kept, by its receipt name (``sessionId``,
    #: ``costUsd``, ``tokens.input``…), and why.
    refused: dict[str, str] = field(default_factory=dict)

    def session(self, value: Any) -> None:
        """A session id the stream reported: kept when it may go on a command line."""
        if not isinstance(value, str) or not value:
            return
        problem = session_problem(value)
        if problem is None:
            self.session_id = value
            self.refused.pop("sessionId", None)
        else:
            self.session_id = None
            self.refused["sessionId"] = f"{problem}: a retry starts a fresh session"

    def cost(self, value: Any) -> float | None:
        """A reported cost in USD, or ``None`` (unknown, noted) when it is not one."""
        cost = cost_of(value)
        if cost is None and value is not None:
            self.refused["costUsd"] = f"{_shown(value)} is not a cost: recorded as unknown"
        return cost

    def count(self, name: str, value: Any) -> int | None:
        """A reported count, or ``None`` (unknown, noted) when it is not one."""
        count = count_of(value)
        if count is None and value is not None:
            self.refused[name] = f"{_shown(value)} is not a count: recorded as unknown"
        return count


#: A session id that may go on a command line: letters, digits, ``-_.:``, not
#: starting with ``-`` (it would be read as an option), at most 128 characters.
SESSION_LIMIT = 128
_SESSION = re.compile(r"[A-Za-z0-9_.:][A-Za-z0-9_.:-]*")


def session_problem(session: str) -> str | None:
    """Why ``session`` may not be put on an agent's command line, or ``None``.
    The programs' ids are UUIDs (OpenCode's ``ses_…``); anything else came from a
    stream that lies: an id of ``--dangerously-skip-permissions`` must never become
    that flag, nor one of ``latest`` or ``3`` resume another session."""
    if len(session) > SESSION_LIMIT:
        return f"a session id of {len(session):,} characters (at most {SESSION_LIMIT})"
    if session.startswith("-"):
        return f"a session id starting with '-' ({_shown(session)})"
    if not _SESSION.fullmatch(session):
        return (f"a session id holding characters other than letters, digits, "
                f"'-', '_', '.', ':' ({_shown(session)})")
    if session.isdigit() or session.lower() == "latest" or not any(
            char.isalnum() for char in session):
        # what a program's --resume reads as another session (Gemini CLI, Qwen Code: an
        # index, the latest one), or a path (``..``)
        return f"a session id that names no one session ({_shown(session)})"
    return None


def _shown(value: Any) -> str:
    """A reported value as a note quotes it: its repr, at most 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _json_line(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class StreamReader:
    """The plain reader: the final text is the stream's last 64 KiB (a generic
    agent prints its signal as its last line)."""

    TAIL = 64 * 1024

    def __init__(self, follow: TextSink | None = None) -> None:
        self.facts = Facts()
        self.follow = follow
        self._tail = bytearray()

    def feed(self, data: bytes) -> None:
        self._tail += data
        if len(self._tail) > 2 * self.TAIL:
            del self._tail[:len(self._tail) - self.TAIL]

    def finish(self) -> Facts:
        self.facts.final_text = bytes(self._tail[-self.TAIL:]).decode("utf-8", "replace")
        return self.facts


class _JsonLines(StreamReader):
    """A JSONL reader that parses only the lines naming an event it reads.

    Each wanted event name is searched over each chunk at once (``bytes.find``);
    only the lines it hits are cut out and parsed. A line longer than
    ``LINE_LIMIT`` is dropped whole (its event could not be parsed anyway)."""

    #: Event-type names worth parsing (as they appear in quotes on their line).
    WANTED: tuple[bytes, ...] = ()
    #: Wanted only when someone follows the assistant's text.
    FOLLOWED: tuple[bytes, ...] = ()
    LINE_LIMIT = 8 * 1024 * 1024

    def __init__(self, follow: TextSink | None = None) -> None:
        super().__init__(follow)
        names = self.WANTED + (self.FOLLOWED if follow is not None else ())
        self._names = tuple(b'"' + name + b'"' for name in names)
        #: The start of a line whose newline has not come yet.
        self._pending = bytearray()
        self._dropping = False  # inside an overlong line, until its newline

    def feed(self, data: bytes) -> None:
        start = 0
        if self._dropping or self._pending:
            newline = data.find(b"\n")
            if newline < 0:
                if not self._dropping:
                    self._pending += data
                    if len(self._pending) > self.LINE_LIMIT:
                        self._pending.clear()
                        self._dropping = True
                        self.dropped()
                return
            if not self._dropping:
                self._pending += data[:newline]
                line = bytes(self._pending)
                self._lines(line, 0, len(line))
            self._pending.clear()
            self._dropping = False
            start = newline + 1
        last = data.rfind(b"\n", start)
        if last >= 0:
            self._lines(data, start, last)
            start = last + 1
        if start < len(data):
            if len(data) - start > self.LINE_LIMIT:
                self._dropping = True
                self.dropped()
            else:
                self._pending += data[start:]

    def finish(self) -> Facts:
        if self._pending and not self._dropping:
            line = bytes(self._pending)
            self._lines(line, 0, len(line))
        self._pending.clear()
        return self.facts

    def _lines(self, chunk: bytes, begin: int, end: int) -> None:
        """Parse the wanted lines of ``chunk[begin:end]``."""
        hits: list[int] = []
        for name in self._names:  # one bytes.find pass per name: faster than a regex
            at = chunk.find(name, begin, end)
            while at >= 0:
                hits.append(at)
                at = chunk.find(name, at + len(name), end)
        if len(self._names) > 1:
            hits.sort()
        done = begin
        for at in hits:
            if at < done:
                continue  # a second name on a line already read
            start = chunk.rfind(b"\n", begin, at) + 1 or begin
            stop = chunk.find(b"\n", at, end)
            stop = end if stop < 0 else stop
            done = stop
            if stop - start > self.LINE_LIMIT:
                self.dropped()
            elif self.worth(chunk, start, stop):
                event = _json_line(chunk[start:stop])
                if event is not None:
                    self.event(event)

    def worth(self, chunk: bytes, start: int, stop: int) -> bool:
        """Whether a line naming a wanted event is worth parsing at all."""
        return True

    def dropped(self) -> None:
        """A line was too long to read: what it said is unknown (a reader whose final
        text is its last message's forgets the one before)."""

    def forget(self, name: bytes) -> None:
        """Search no more for ``name`` (what it gave is known): one pass less per chunk."""
        self._names = tuple(each for each in self._names if each != b'"' + name + b'"')

    def event(self, event: dict[str, Any]) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


class ClaudeStream(_JsonLines):
    """``claude -p --output-format stream-json --verbose``."""

    #: A rate-limit event comes every turn, and only a rejected one matters: the
    #: word searched for is its status, so the allowed ones cost nothing (the
    #: synthetic assistant message of a limit carries it too, in its
    #: ``api_error_params``). ``system`` is searched for until the init line gave the
    #: session id; ``api_retry`` names the retries Claude Code makes of its own.
    WANTED: tuple[bytes, ...] = (b"system", b"result", b"rejected", b"api_retry")
    FOLLOWED = (b"assistant",)

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        facts = self.facts
        session = event.get("session_id")
        if session:
            facts.session(session)
            if kind == "system":
                self.forget(b"system")  # the init line: the result says the session again
        if kind == "assistant":
            params = event.get("api_error_params")
            self._rate_limit(params.get("rate_limit_info") if isinstance(params, dict) else None)
            if self.follow is not None:
                text = _assistant_text(event)
                if text:
                    self.follow(text)
        elif kind == "rate_limit_event":
            self._rate_limit(event.get("rate_limit_info"))
        elif kind == "system" and event.get("subtype") == "api_retry":
            status, error = event.get("error_status"), _text(event.get("error"))
            words = [str(status) if type(status) is int else "", error or ""]
            facts.retrying = " ".join(word for word in words if word)[:200] or "retrying"
        elif kind == "result":
            facts.result = event
            facts.completed_turn = event.get("is_error") is not True
            facts.final_text = _text(event.get("result")) or ""
            errors = event.get("errors")
            if isinstance(errors, list):  # error_max_turns: "result" is null, words here
                facts.errors.extend(error for error in errors[-5:] if isinstance(error, str))
            facts.turns = facts.count("turns", event.get("num_turns"))
            facts.duration_ms = facts.count("durationMs", event.get("duration_ms"))
            facts.cost_usd = facts.cost(event.get("total_cost_usd"))
            usage = event.get("usage")
            if isinstance(usage, dict):
                facts.input_tokens = facts.count("tokens.input", usage.get("input_tokens"))
                facts.output_tokens = facts.count("tokens.output", usage.get("output_tokens"))
                cached = [facts.count("tokens.cached", usage.get(key)) for key in
                          ("cache_read_input_tokens", "cache_creation_input_tokens")]
                if "tokens.cached" in facts.refused:
                    facts.cached_tokens = None
                elif any(value is not None for value in cached):
                    facts.cached_tokens = sum(value or 0 for value in cached)
            # Claude Code 2.1.332 reports the session's cost so far as total_cost_usd
            # on --resume, and this process's in model_usage_since_last_result.
            since = event.get("model_usage_since_last_result")
            if isinstance(since, dict):
                facts.cost_usd = facts.cost(_summed_cost(since))

    def _rate_limit(self, info: Any) -> None:
        if isinstance(info, dict) and info.get("status") == "rejected":
            self.facts.rejected_limit = info


def _summed_cost(usage_by_model: dict[str, Any]) -> Any:
    """The sum of each model's ``costUSD``: a cost, or the first figure that is none
    (``Facts.cost`` then records it as unknown, and why)."""
    total = 0.0
    for usage in usage_by_model.values():
        value = usage.get("costUSD") if isinstance(usage, dict) else None
        cost = cost_of(value)
        if cost is None:
            return value
        total += cost
    return total


def _assistant_text(event: dict[str, Any]) -> str:
    message = event.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(part.get("text", "") for part in content
                   if isinstance(part, dict) and part.get("type") == "text"
                   and isinstance(part.get("text"), str))


#: Codex's own retry of a request: ``Reconnecting... 2/5 (We're currently …)``.
_RECONNECTING = re.compile(r"Reconnecting\.*\s*\d+/\d+")


class CodexStream(_JsonLines):
    """``codex exec --json -`` (and ``codex exec --json … resume THREAD -``). Its
    ``turn.completed`` usage is the thread's running total (on a resumed thread,
    every earlier attempt's tokens are in it too)."""

    WANTED = (b"thread.started", b"turn.completed", b"turn.failed", b"error",
              b"agent_message", b"assistant_message")

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        facts = self.facts
        if kind == "thread.started":
            facts.session(event.get("thread_id"))
        elif kind == "turn.completed":
            facts.completed_turn = True
            facts.turns = (facts.turns or 0) + 1
            facts.running_totals = True
            usage = event.get("usage")
            if isinstance(usage, dict):  # the thread's totals so far: the last one holds
                facts.input_tokens = facts.count("tokens.input", usage.get("input_tokens"))
                facts.output_tokens = facts.count("tokens.output", usage.get("output_tokens"))
                facts.cached_tokens = facts.count("tokens.cached",
                                                  usage.get("cached_input_tokens"))
        elif kind in ("turn.failed", "error"):
            if kind == "turn.failed":
                facts.completed_turn = False  # the last turn decides: it failed
            error = event.get("error")
            message = _text(error.get("message")) if isinstance(error, dict) else None
            message = message or _text(event.get("message"))
            if message and _RECONNECTING.match(message):
                facts.retrying = message[:200]
            elif message and (kind == "error" or message not in facts.errors[-1:]):
                facts.errors.append(message)  # turn.failed repeats the error before it
                del facts.errors[:-5]
        elif isinstance(kind, str) and kind.startswith("item."):
            item = event.get("item")
            item_type = (item.get("type") or item.get("item_type")) if isinstance(item, dict) \
                else None
            if item_type == "error" and kind == "item.completed":  # a warning, not a failure
                message = _text(item.get("message")) if isinstance(item, dict) else None
                if message:
                    facts.warnings = [*facts.warnings[-4:], message[:500]]
            elif isinstance(item, dict) and item_type in ("agent_message", "assistant_message"):
                text = _text(item.get("text"))
                if text is not None and kind == "item.completed":
                    facts.final_text = text
                    if self.follow is not None:
                        self.follow(text)


#: The most of an assistant's text a reader keeps as it streams in pieces: the
#: signal is at its end.
TEXT_LIMIT = 64 * 1024
#: The most of one error message a reader keeps (it is shown, and compared).
ERROR_LIMIT = 2000


def _error(facts: Facts, message: str) -> None:
    """``message`` as the stream's latest failure (its first ``ERROR_LIMIT`` characters)."""
    facts.errors = [*facts.errors[-4:], message[:ERROR_LIMIT]]


class GeminiStream(_JsonLines):
    """``gemini --output-format stream-json`` (Gemini CLI 0.61): ``init`` names the
    session; the assistant's words come as ``message`` deltas, and its final text
    is what it said after its last tool result (``result`` does not repeat it);
    ``result`` says ``success`` or ``error`` with its message, and the tokens of this
    process's requests (``input_tokens`` counts the cached ones too; no cost)."""

    WANTED = (b"init", b"message", b"tool_use", b"tool_result", b"result")

    def __init__(self, follow: TextSink | None = None) -> None:
        super().__init__(follow)
        self._said: list[str] = []
        self._length = 0
        #: The model answered at least once: only then is the session saved to resume.
        self._answered = False
        #: What was said since the last whole line shown (``--follow`` shows lines).
        self._shown = ""

    def dropped(self) -> None:
        self._said.clear()
        self._length = 0

    def _show(self, text: str, *, flush: bool = False) -> None:
        """Deltas are pieces of lines: the follower is given whole lines."""
        if self.follow is None:
            return
        pending = (self._shown + text)[-TEXT_LIMIT:]
        lines, _, self._shown = pending.rpartition("\n") if not flush else (pending, "", "")
        if lines:
            self.follow(lines)

    def worth(self, chunk: bytes, start: int, stop: int) -> bool:
        # a user's message (the prompt itself) is no assistant text: never parsed
        return chunk.find(b'"role":"user"', start, stop) < 0

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        facts = self.facts
        if kind == "init":
            facts.session(event.get("session_id"))
            self.forget(b"init")
        elif kind == "message" and event.get("role") == "assistant":
            self._answered = True
            text = _text(event.get("content"))
            if text:
                self._said.append(text)
                self._length += len(text)
                while self._length > TEXT_LIMIT and len(self._said) > 1:
                    self._length -= len(self._said.pop(0))
                self._show(text)
        elif kind == "tool_result":  # what it said before a tool ran is not its answer
            self._answered = True
            self._said.clear()
            self._length = 0
            self._show("", flush=True)
        elif kind == "result":
            self._show("", flush=True)
            facts.final_text = "".join(self._said)[-TEXT_LIMIT:]
            facts.completed_turn = event.get("status") == "success"
            error = event.get("error")
            message = _text(error.get("message")) if isinstance(error, dict) else None
            if message:
                _error(facts, message)
            stats = event.get("stats")
            if isinstance(stats, dict):
                facts.input_tokens = facts.count("tokens.input", stats.get("input_tokens"))
                facts.output_tokens = facts.count("tokens.output", stats.get("output_tokens"))
                facts.cached_tokens = facts.count("tokens.cached", stats.get("cached"))
                facts.duration_ms = facts.count("durationMs", stats.get("duration_ms"))
            if not self._answered and not facts.output_tokens:
                # failed before the model said anything: Gemini CLI saved no session, and
                # resuming it fails ("No previous sessions found"): a retry starts afresh
                facts.session_id = None


#: Qwen Code's failed request, in its final text: ``[API Error: 401 Incorrect API key …]``.
_QWEN_API_ERROR = re.compile(r"^\[API Error: ")


class QwenStream(ClaudeStream):
    """``qwen --output-format stream-json`` (Qwen Code 0.15): Claude Code's events
    (``system``/``init``, ``assistant``, ``result``) with three differences — no
    cost; on a resumed session ``result.usage`` is the whole session's so far; and
    a failed request may end in a ``result`` that is no error (0.15: ``is_error:
    false``, exit 0) whose text is ``[API Error: …]``, which is read as the failure it
    is. Its own retries come as ``system``/``retry`` events (0.24)."""

    WANTED = (*ClaudeStream.WANTED, b"retry")

    def event(self, event: dict[str, Any]) -> None:
        super().event(event)
        facts = self.facts
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "retry":
            data = event.get("data")
            attempt = data.get("attempt") if isinstance(data, dict) else None
            facts.retrying = f"retry {attempt}" if type(attempt) is int else "retrying"
        elif kind == "result":
            facts.running_totals = True
            error = event.get("error")
            message = _text(error.get("message")) if isinstance(error, dict) else None
            if message:
                _error(facts, message)
            if _QWEN_API_ERROR.match(facts.final_text):
                facts.completed_turn = False
                _error(facts, facts.final_text)


class CopilotStream(_JsonLines):
    """``copilot --output-format json`` (Copilot CLI 1.0): events ``{type, data}``;
    the final text is the ``data.content`` of the last ``assistant.message``; a failed
    session says so in ``session.error`` (``errorType``: ``rate_limit``,
    ``authentication``…, ``statusCode``, its message); ``result`` names the session
    and its exit code. It reports no tokens and no cost (premium requests only)."""

    WANTED = (b"assistant.message", b"session.error", b"assistant.turn_retry", b"result")

    def dropped(self) -> None:
        self.facts.final_text = ""

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        facts = self.facts
        data = event.get("data")
        data = data if isinstance(data, dict) else {}
        if kind == "assistant.message":  # the last one's words, even none, are its answer
            text = _text(data.get("content")) or ""
            facts.final_text = text[-TEXT_LIMIT:]
            facts.turns = (facts.turns or 0) + 1
            if text and self.follow is not None:
                self.follow(text)
        elif kind == "assistant.turn_retry":
            reason = _text(data.get("reason"))
            facts.retrying = f"retrying ({reason})" if reason else "retrying"
        elif kind == "session.error":
            message = _text(data.get("message")) or _text(data.get("errorType")) or "error"
            _error(facts, message)
            facts.result = {"errorType": data.get("errorType"),
                            "statusCode": data.get("statusCode")}
        elif kind == "result":
            facts.session(event.get("sessionId"))
            code = event.get("exitCode")
            facts.completed_turn = code == 0 and not facts.errors


class OpenCodeStream(_JsonLines):
    """``opencode run --format json`` (OpenCode 1.18): no start or result event — each
    event names the session (``sessionID``); the final text is the last ``text``
    part; each ``step_finish`` carries that step's tokens and what it cost by the
    model's prices in the user's own config (summed here; a sum of nothing but zeros
    is no cost reported, never an invented one), and the last one's ``reason`` is
    ``stop`` when the model finished; a failure is an ``error`` event
    (``error.data``: its message and ``statusCode``)."""

    WANTED = (b"text", b"tool_use", b"step_finish", b"error")

    def __init__(self, follow: TextSink | None = None) -> None:
        super().__init__(follow)
        self._tokens: list[int | None] = [0, 0, 0]
        self._cost = 0.0
        self._stopped = False

    def dropped(self) -> None:
        self.facts.final_text = ""

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        facts = self.facts
        facts.session(event.get("sessionID"))
        part = event.get("part")
        part = part if isinstance(part, dict) else {}
        if kind == "text":
            text = _text(part.get("text"))
            if text:
                facts.final_text = text[-TEXT_LIMIT:]
                if self.follow is not None:
                    self.follow(text)
        elif kind == "tool_use":  # what it said before a tool ran is not its answer
            facts.final_text = ""
        elif kind == "step_finish":
            facts.turns = (facts.turns or 0) + 1
            self._stopped = part.get("reason") == "stop"
            tokens = part.get("tokens")
            tokens = tokens if isinstance(tokens, dict) else {}
            cache = tokens.get("cache")
            read = cache.get("read") if isinstance(cache, dict) else None
            for index, (name, value) in enumerate((("tokens.input", tokens.get("input")),
                                                   ("tokens.output", tokens.get("output")),
                                                   ("tokens.cached", read))):
                count, total = facts.count(name, value), self._tokens[index]
                # a step that did not say, or said what is no count: the sum is unknown
                self._tokens[index] = None if count is None or total is None else count_of(
                    total + count)
            cost = facts.cost(part.get("cost"))
            self._cost = cost_of(self._cost + (cost or 0.0)) or 0.0
            facts.input_tokens, facts.output_tokens, facts.cached_tokens = self._tokens
            facts.cost_usd = self._cost if self._cost > 0 else None
        elif kind == "error":
            error = event.get("error")
            data = error.get("data") if isinstance(error, dict) else None
            data = data if isinstance(data, dict) else {}
            message = _text(data.get("message")) or (
                _text(error.get("name")) if isinstance(error, dict) else None) or "error"
            _error(facts, message)
            facts.result = {"statusCode": data.get("statusCode"),
                            "errorType": "opencode"}
        facts.completed_turn = self._stopped and not facts.errors
