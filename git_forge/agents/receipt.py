"""What one agent start cost: a receipt per iteration, and totals over several.

Only what the agent itself reports is recorded: Claude Code reports its cost in
USD, Codex reports tokens only — so a Codex receipt has no cost, never an
invented price. Wire names (camelCase) appear only at the JSON edge."""

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, NotRequired, TypedDict

from git_forge.words import counted, usd

#: The largest cost in USD one figure may hold (an attempt's, or a sum of them). An
#: agent's stream is untrusted: ``1e999`` parses as infinity, a negative cost would
#: lift ``--max-cost``, and two costs near the float maximum sum to infinity, which
#: no JSON writer may write. Anything outside ``0 ..`` this is not a cost.
MAX_COST_USD = 1e9
#: The largest count (tokens, turns, milliseconds) one figure may hold: what a JSON
#: reader in any language still reads exactly.
MAX_COUNT = 2**53


def cost_of(value: Any) -> float | None:
    """``value`` as a cost in USD, or ``None`` (unknown) when it is not one: not a
    number, negative, NaN, infinite or beyond ``MAX_COST_USD``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0 <= value <= MAX_COST_USD else None  # NaN compares false


def count_of(value: Any) -> int | None:
    """``value`` as a count, or ``None`` (unknown) when it is not one: not an
    integer, negative or beyond ``MAX_COUNT``."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_COUNT else None


class TokensJSON(TypedDict):
    """An attempt's tokens, each ``None`` when the agent did not report it."""

    input: int | None
    output: int | None
    cached: int | None


class ReceiptJSON(TypedDict):
    """A receipt as the manifest's ``receipt`` and the journal's ``llm_exited`` hold it."""

    durationMs: int | None
    exitCode: int | None
    sessionId: str | None
    resumed: str | None
    turns: int | None
    tokens: TokensJSON
    costUsd: float | None
    #: Which agent ran the attempt: only in a run with a fallback agent.
    agent: NotRequired[str]


class TokenCountsJSON(TypedDict):
    input: int
    output: int
    cached: int


class ChecksJSON(TypedDict):
    """The verification gates run after an item's attempts (``loop.verify``)."""

    runs: int
    failed: int
    durationMs: int


class TotalsJSON(TypedDict):
    """Receipts summed (the receipts ledgers, ``status --json``'s ``costs``)."""

    attempts: int
    durationMs: int
    tokens: TokenCountsJSON
    #: ``null`` while no agent reported a cost, never an invented zero.
    costUsd: float | None
    #: Present once a verification gate ran for the item (the run).
    verify: NotRequired[ChecksJSON]


class Receipt(NamedTuple):
    duration_ms: int | None = None
    exit_code: int | None = None
    session_id: str | None = None
    #: The session this attempt resumed (``None``: a fresh one).
    resumed: str | None = None
    turns: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    #: The profile that ran it, in a run with a fallback agent (``None``: not said).
    agent: str | None = None

    def with_(self, **changes: Any) -> "Receipt":
        return self._replace(**changes)

    def to_json(self) -> ReceiptJSON:
        document: ReceiptJSON = {
            "durationMs": self.duration_ms, "exitCode": self.exit_code,
            "sessionId": self.session_id, "resumed": self.resumed, "turns": self.turns,
            "tokens": {"input": self.input_tokens, "output": self.output_tokens,
                       "cached": self.cached_tokens},
            "costUsd": self.cost_usd}
        if self.agent is not None:
            document["agent"] = self.agent
        return document

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> "Receipt":
        """Tolerant: a missing or odd field is unknown (``None``), never an error —
        a figure that is not a cost or a count (``cost_of``, ``count_of``) too."""
        found = document.get("tokens")
        tokens: dict[str, object] = found if isinstance(found, dict) else {}
        code = document.get("exitCode")

        def text(value: Any) -> str | None:
            return value if isinstance(value, str) else None

        return cls(duration_ms=count_of(document.get("durationMs")),
                   exit_code=code if type(code) is int else None,
                   session_id=text(document.get("sessionId")),
                   resumed=text(document.get("resumed")),
                   turns=count_of(document.get("turns")),
                   input_tokens=count_of(tokens.get("input")),
                   output_tokens=count_of(tokens.get("output")),
                   cached_tokens=count_of(tokens.get("cached")),
                   cost_usd=cost_of(document.get("costUsd")))


class Session(NamedTuple):
    """A session an attempt ended in, as a retry resumes it: its id, and the running
    totals its agent reported so far when those are the session's (Codex), which the
    next attempt's receipt takes off its own."""

    session_id: str
    #: ``(input, output, cached)`` tokens so far, or ``None``: the agent reports
    #: each process's own.
    reported: tuple[int | None, int | None, int | None] | None = None


def added_since(reported: int | None, before: int | None) -> int | None:
    """What a running total ``reported`` adds to the ``before`` an earlier attempt
    reported: the difference, or the whole when it is smaller (a new count)."""
    if reported is None or before is None or reported < before:
        return reported
    return reported - before


class Totals(NamedTuple):
    """Receipts summed: attempts, duration, tokens, and cost where any was reported."""

    attempts: int = 0
    duration_ms: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    #: ``None`` while no receipt reported a cost (Codex), never an invented zero.
    cost_usd: float | None = None
    #: Verification gates run after the attempts, how many failed, their time.
    checks: int = 0
    checks_failed: int = 0
    checks_ms: int = 0

    def add(self, receipt: Receipt) -> "Totals":
        cost = self.cost_usd
        if receipt.cost_usd is not None:
            cost = (cost or 0.0) + receipt.cost_usd
        return self._replace(attempts=self.attempts + 1,
                             duration_ms=self.duration_ms + (receipt.duration_ms or 0),
                             input_tokens=self.input_tokens + (receipt.input_tokens or 0),
                             output_tokens=self.output_tokens + (receipt.output_tokens or 0),
                             cached_tokens=self.cached_tokens + (receipt.cached_tokens or 0),
                             cost_usd=cost)

    def add_check(self, duration_ms: int, passed: bool) -> "Totals":
        """One verification gate's run after an attempt, added."""
        return self._replace(checks=self.checks + 1,
                             checks_failed=self.checks_failed + (not passed),
                             checks_ms=self.checks_ms + duration_ms)

    @classmethod
    def of(cls, receipts: Iterable[Receipt]) -> "Totals":
        totals = cls()
        for receipt in receipts:
            totals = totals.add(receipt)
        return totals

    def merge(self, other: "Totals") -> "Totals":
        cost = self.cost_usd
        if other.cost_usd is not None:
            cost = (cost or 0.0) + other.cost_usd
        return Totals(self.attempts + other.attempts, self.duration_ms + other.duration_ms,
                      self.input_tokens + other.input_tokens,
                      self.output_tokens + other.output_tokens,
                      self.cached_tokens + other.cached_tokens, cost,
                      self.checks + other.checks, self.checks_failed + other.checks_failed,
                      self.checks_ms + other.checks_ms)

    @classmethod
    def from_json(cls, document: Any) -> "Totals":
        """Tolerant: what is missing or odd counts as nothing (no cost: ``None``)."""
        if not isinstance(document, Mapping):
            return cls()
        found = document.get("tokens")
        tokens: Mapping[str, Any] = found if isinstance(found, Mapping) else {}

        def count(value: Any) -> int:
            return count_of(value) or 0

        found = document.get("verify")
        checks: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        return cls(count(document.get("attempts")), count(document.get("durationMs")),
                   count(tokens.get("input")), count(tokens.get("output")),
                   count(tokens.get("cached")), cost_of(document.get("costUsd")),
                   count(checks.get("runs")), count(checks.get("failed")),
                   count(checks.get("durationMs")))

    def to_json(self) -> TotalsJSON:
        document: TotalsJSON = {
            "attempts": self.attempts, "durationMs": self.duration_ms,
            "tokens": {"input": self.input_tokens, "output": self.output_tokens,
                       "cached": self.cached_tokens},
            "costUsd": None if self.cost_usd is None else round(self.cost_usd, 6)}
        if self.checks:
            document["verify"] = {"runs": self.checks, "failed": self.checks_failed,
                                  "durationMs": self.checks_ms}
        return document

    def describe(self) -> str:
        """``3 attempts, 12.3k tokens in / 4.1k out, $0.42``."""
        def k(count: int) -> str:
            return f"{count / 1000:.1f}k" if count >= 1000 else str(count)

        text = counted(self.attempts, "attempt")
        if self.input_tokens or self.output_tokens:
            text += f", {k(self.input_tokens)} tokens in / {k(self.output_tokens)} out"
        if self.cost_usd is not None:
            text += f", {usd(self.cost_usd)}"
        if self.checks:
            failed = f", {self.checks_failed} failed" if self.checks_failed else ""
            text += f"; {counted(self.checks, 'check')} ({self.checks_ms / 1000:.1f} s{failed})"
        return text
