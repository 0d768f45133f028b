"""Readers of the structured streams agents write: Claude Code's ``stream-json``
and Codex's ``exec --json`` JSONL, and the plain stream of any other command.

Each reader is fed the agent's stdout as it arrives and keeps only what matters
afterwards — the final text (where the signal is), the session id, the usage,
what failed — never the transcript, so its memory is flat in the transcript's
size. Lines are only parsed as JSON when their event type is one of the few it
reads (a substring test first): the bulk of a transcript, message and tool
events, costs a ``find`` each. Unknown fields and event types are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from git_forge.agents.lines import LineBuffer

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
    #: Messages of failures the stream reported (Codex ``turn.failed`` / ``error``).
    errors: list[str] = field(default_factory=list)
    completed_turn: bool = False
    turns: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    duration_ms: int | None = None


def _json_line(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


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
    #: Event-type substrings worth parsing; every other line is skipped unparsed.
    WANTED: tuple[bytes, ...] = ()

    def __init__(self, follow: TextSink | None = None) -> None:
        super().__init__(follow)
        self._lines = LineBuffer()

    def feed(self, data: bytes) -> None:
        for line, cut in self._lines.feed(data):
            self._line(line, cut)

    def finish(self) -> Facts:
        for line, cut in self._lines.finish():
            self._line(line, cut)
        return self.facts

    def _line(self, line: bytes, cut: bool) -> None:
        if cut or not any(wanted in line for wanted in self.WANTED):
            return
        event = _json_line(line)
        if event is not None:
            self.event(event)

    def event(self, event: dict[str, Any]) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


class ClaudeStream(_JsonLines):
    """``claude -p --output-format stream-json --verbose``."""

    WANTED = (b'"system"', b'"result"', b'"rate_limit_event"', b'"assistant"')

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        facts = self.facts
        session = _text(event.get("session_id"))
        if session:
            facts.session_id = session
        if kind == "assistant":
            if self.follow is not None:
                text = _assistant_text(event)
                if text:
                    self.follow(text)
        elif kind == "rate_limit_event":
            info = event.get("rate_limit_info")
            if isinstance(info, dict) and info.get("status") == "rejected":
                facts.rejected_limit = info
        elif kind == "result":
            facts.result = event
            facts.final_text = _text(event.get("result")) or ""
            facts.turns = _int(event.get("num_turns"))
            facts.duration_ms = _int(event.get("duration_ms"))
            cost = event.get("total_cost_usd")
            if isinstance(cost, int | float) and not isinstance(cost, bool):
                facts.cost_usd = float(cost)
            usage = event.get("usage")
            if isinstance(usage, dict):
                facts.input_tokens = _int(usage.get("input_tokens"))
                facts.output_tokens = _int(usage.get("output_tokens"))
                cached = [_int(usage.get(key)) for key in
                          ("cache_read_input_tokens", "cache_creation_input_tokens")]
                if any(value is not None for value in cached):
                    facts.cached_tokens = sum(value or 0 for value in cached)


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


class CodexStream(_JsonLines):
    """``codex exec --json -`` (and ``codex exec resume … --json -``)."""

    WANTED = (b'"thread.started"', b'"turn.completed"', b'"turn.failed"', b'"error"',
              b'_message"')

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        facts = self.facts
        if kind == "thread.started":
            facts.session_id = _text(event.get("thread_id")) or facts.session_id
        elif kind == "turn.completed":
            facts.completed_turn = True
            facts.turns = (facts.turns or 0) + 1
            usage = event.get("usage")
            if isinstance(usage, dict):
                for name, key in (("input_tokens", "input_tokens"),
                                  ("output_tokens", "output_tokens"),
                                  ("cached_tokens", "cached_input_tokens")):
                    value = _int(usage.get(key))
                    if value is not None:
                        setattr(facts, name, (getattr(facts, name) or 0) + value)
        elif kind in ("turn.failed", "error"):
            error = event.get("error")
            message = _text(error.get("message")) if isinstance(error, dict) else None
            message = message or _text(event.get("message"))
            if message:
                facts.errors.append(message)
        elif isinstance(kind, str) and kind.startswith("item."):
            item = event.get("item")
            if isinstance(item, dict) and (item.get("type") or item.get("item_type")) in (
                    "agent_message", "assistant_message"):
                text = _text(item.get("text"))
                if text is not None and kind == "item.completed":
                    facts.final_text = text
                    if self.follow is not None:
                        self.follow(text)
