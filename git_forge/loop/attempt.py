"""One agent start as the loop reads it, beyond the process: its profile's stream
reader (fed stdout as the supervisor drains it), the assistant's text for
``--follow``, the receipt the supervisor keeps in the manifest, and — once it
ended — its signal and what its failure was.

A structured agent (Claude Code, Codex) says its signal in its final result
text, never in the JSON around it; Claude's ``is_error: true`` is a failed
attempt whatever its exit code. A generic agent's signal is its stdout's last
line, when that is a signal, and its failure is classified only when it gave none.
"""

from __future__ import annotations

import threading
from collections import deque
from datetime import datetime

from git_forge.agents.classify import Classified, Verdict, classify
from git_forge.agents.profiles import Profile
from git_forge.agents.receipt import Receipt, ReceiptJSON, Session, added_since
from git_forge.agents.streams import Facts
from git_forge.loop.process_events import duration_ms
from git_forge.loop.signals import NO_SIGNAL, Signal, parse_signal
from git_forge.safetext import safe_text
from git_forge.supervisor.follow import shown_line, skipped_note
from git_forge.supervisor.manifest import Manifest

#: Lines of the agent's stderr a circuit breaker's message quotes.
STDERR_LINES = 5


#: The most lines of streamed text kept for ``--follow`` between two looks.
FOLLOWED_LINES = 10_000


class FollowedText:
    """The assistant's text as it streams, held for the loop's ``--follow`` until
    its next look: at most ``FOLLOWED_LINES`` lines (memory stays flat whatever the
    agent says); a follower that fell behind is told how many it missed and where
    they are. Written by the supervisor's reader thread, taken by the loop's."""

    def __init__(self, where: str) -> None:
        self.where = where
        self._lines: deque[str] = deque()
        self._skipped = 0
        self._lock = threading.Lock()

    def add(self, text: str) -> None:
        lines = [shown_line(line.encode("utf-8", "replace"), self.where)
                 for line in text.removesuffix("\n").split("\n")]  # blank lines too
        with self._lock:
            self._lines.extend(lines)
            while len(self._lines) > FOLLOWED_LINES:
                self._lines.popleft()
                self._skipped += 1

    def take(self) -> list[str]:
        """The lines since the last call, a note first for those left out."""
        with self._lock:
            lines = [skipped_note(self._skipped, self.where)] if self._skipped else []
            lines.extend(self._lines)
            self._lines.clear()
            self._skipped = 0
        return lines


class Attempt:
    """The reader of one agent start, and what it read."""

    def __init__(self, profile: Profile, *, follow: bool = False,
                 resumed: Session | None = None, agent: str | None = None,
                 fallback: bool = False, where: str = "git forge proc output") -> None:
        self.profile = profile
        #: Which agent its receipt names (a run with a fallback agent names each).
        self.agent = agent
        #: It runs on the fallback agent.
        self.fallback = fallback
        #: The session this start resumes (``None``: a fresh one).
        self.resumed = resumed
        #: The assistant's text as it streams, for the loop's ``--follow`` (``where``:
        #: the command that shows all of the agent's output).
        self.followed = FollowedText(where)
        sink = self.followed.add if follow and profile.structured else None
        self.reader = profile.reader(sink) if profile.structured else None
        self._lock = threading.Lock()
        self._facts: Facts | None = None
        self.receipt: Receipt | None = None

    def observe(self, stream: str, data: bytes) -> None:
        """The supervisor's observer: the profile's reader is fed stdout."""
        if stream == "stdout" and self.reader is not None:
            self.reader.feed(data)

    def facts(self) -> Facts:
        """What the stream said (read once, after the output was drained)."""
        with self._lock:
            if self._facts is None:
                self._facts = self.reader.finish() if self.reader is not None else Facts()
            return self._facts

    def make_receipt(self, manifest: Manifest) -> ReceiptJSON:
        """The supervisor's receipt hook: this start's receipt, kept in its manifest.
        It says what this start added: where the agent reports the session's running
        totals, what the resumed session had reported before is taken off."""
        facts = self.facts()
        tokens = (facts.input_tokens, facts.output_tokens, facts.cached_tokens)
        before = self._reported_before()
        if before is not None:
            tokens = (added_since(tokens[0], before[0]), added_since(tokens[1], before[1]),
                      added_since(tokens[2], before[2]))
        self.receipt = Receipt(
            duration_ms=duration_ms(manifest), exit_code=manifest.result.exit_code,
            session_id=facts.session_id,
            resumed=self.resumed.session_id if self.resumed else None, turns=facts.turns,
            input_tokens=tokens[0], output_tokens=tokens[1], cached_tokens=tokens[2],
            cost_usd=facts.cost_usd, agent=self.agent)
        return self.receipt.to_json()

    def _reported_before(self) -> tuple[int | None, int | None, int | None] | None:
        """The running totals the resumed session reported before this start."""
        facts = self.facts()
        if (not facts.running_totals or self.resumed is None
                or self.resumed.session_id != facts.session_id):
            return None
        return self.resumed.reported

    def ended_in(self) -> Session | None:
        """The session a retry resumes, with the running totals reported so far: the
        one this start resumed when it reported none of its own (it ended before the
        agent said which; Gemini CLI's failed request), unless the one it reported was
        refused."""
        facts = self.facts()
        if facts.session_id is None:
            return self.resumed if "sessionId" not in facts.refused else None
        reported: tuple[int | None, int | None, int | None] | None
        if facts.running_totals:
            reported = (facts.input_tokens, facts.output_tokens, facts.cached_tokens)
        elif self.resumed is not None and self.resumed.session_id == facts.session_id:
            reported = self.resumed.reported  # ended before it reported: as they were
        else:
            reported = None
        return Session(facts.session_id, reported)

    def read(self, stdout: bytes, stderr: bytes, exit_code: int | None,
             cut_off: bool, now: datetime | None = None) -> tuple[Signal, Classified]:
        """The attempt's signal and verdict, from its stream (structured profiles)
        or the tail of its stdout (generic). A ``cut_off`` attempt (timed out,
        idle, stopped) gives no signal and is an ordinary failure. Times the agent
        told without a day are read as of ``now`` (when it ended; default: now)."""
        if cut_off:
            return NO_SIGNAL, Classified(Verdict.FAILED)
        facts = self.facts()
        err = safe_text(stderr, final=True).text
        out = safe_text(stdout, final=True).text
        if self.profile.structured:
            verdict = classify(facts, exit_code, err, stdout=out, structured=True, now=now,
                               own=self.profile.failure)
            if verdict.verdict is not Verdict.RAN:
                return NO_SIGNAL, verdict
            return parse_signal(safe_text(facts.final_text.encode(), final=True).text), verdict
        signal = parse_signal(out)
        if signal is not NO_SIGNAL:
            return signal, Classified(Verdict.RAN)
        return NO_SIGNAL, classify(facts, exit_code, err, stdout=out, now=now)


def stderr_lines(stderr: bytes, count: int = STDERR_LINES) -> list[str]:
    """The last ``count`` non-empty lines of ``stderr`` (safe text)."""
    text = safe_text(stderr, final=True).text
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return [line for line in lines if line][-count:]
