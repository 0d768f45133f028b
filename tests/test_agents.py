"""Reading Claude Code's and Codex's streams, and classifying what an attempt was."""

from __future__ import annotations

import json
import tracemalloc
from datetime import UTC, datetime, timedelta

import pytest
from agent_streams import (
    claude_assistant,
    claude_init,
    claude_rate_limit,
    claude_result,
    claude_tool_use,
    codex_command,
    codex_error,
    codex_message,
    codex_thread,
    codex_turn_completed,
    codex_turn_failed,
    codex_turn_started,
)

from git_forge.agents.classify import Verdict, classify
from git_forge.agents.limits import reset_time
from git_forge.agents.profiles import GENERIC, PROFILES, profile_for
from git_forge.agents.receipt import Receipt, Totals
from git_forge.agents.streams import ClaudeStream, CodexStream

NOW = datetime(2026, 12, 1, 11, 30, tzinfo=UTC)


def feed(reader, lines: list[str], *, chunk: int = 7) -> None:
    """In odd-sized pieces, as a pipe delivers them."""
    data = "".join(f"{text}\n" for text in lines).encode()
    for start in range(0, len(data), chunk):
        reader.feed(data[start:start + chunk])


def test_claude_stream_gives_the_result_text_session_and_usage() -> None:
    followed: list[str] = []
    reader = ClaudeStream(followed.append)
    feed(reader, [claude_init("sess-1"), claude_assistant("sess-1", "Working on it."),
                  claude_tool_use("sess-1"), claude_rate_limit("sess-1", "allowed", 1767270000),
                  '{"type":"some_new_event","x":{"y":1}}', "not json at all",
                  claude_result("sess-1", "All done.\nFORGE_DONE", cost=0.5, turns=4)])
    facts = reader.finish()
    assert facts.final_text == "All done.\nFORGE_DONE"
    assert facts.session_id == "sess-1" and facts.turns == 4 and facts.cost_usd == 0.5
    assert (facts.input_tokens, facts.output_tokens, facts.cached_tokens) == (1200, 650, 4800)
    assert facts.rejected_limit is None  # "allowed" is not a limit
    assert followed == ["Working on it."]
    assert classify(facts, 0, "").verdict is Verdict.RAN


def test_claude_is_error_with_exit_0_is_a_failed_attempt() -> None:
    reader = ClaudeStream()
    feed(reader, [claude_init("s"), claude_result("s", "API Error: Rate limit reached",
                                                  is_error=True)])
    verdict = classify(reader.finish(), 0, "", structured=True)
    assert verdict.verdict is Verdict.FAILED
    assert verdict.kind == "API Error: Rate limit reached"
    assert verdict.signature(0) == "exit 0: API Error: Rate limit reached"


def test_a_rejected_rate_limit_is_a_wait_until_its_reset() -> None:
    reader = ClaudeStream()
    resets = int((NOW + timedelta(hours=2)).timestamp())
    feed(reader, [claude_init("s"), claude_rate_limit("s", "rejected", resets),
                  claude_result("s", f"Claude AI usage limit reached|{resets}", is_error=True)])
    verdict = classify(reader.finish(), 1, "", structured=True, now=NOW)
    assert verdict.verdict is Verdict.LIMIT_WAIT
    assert verdict.reset_at == datetime.fromtimestamp(resets, UTC)


@pytest.mark.parametrize(("said", "expected"), [
    # Told to the minute (the programs cut their reset time to it): the minute's end.
    ("You've hit your limit · resets 1pm (Europe/Lisbon)",
     datetime(2026, 12, 1, 13, 1, tzinfo=UTC)),
    ("You've hit your session limit · resets 3:30pm (UTC)",
     datetime(2026, 12, 1, 15, 31, tzinfo=UTC)),
    ("You've hit your 5-hour limit · resets Dec 5, 5:51pm (UTC)",
     datetime(2026, 12, 5, 17, 52, tzinfo=UTC)),
    ("You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit "
     "https://chatgpt.com/settings/usage to purchase more credits or try again at Dec 5th, "
     "2026 5:41 PM.", datetime(2026, 12, 5, 17, 42, tzinfo=UTC)),
    ("You’ve hit your usage limit. … or try again at 4:43 PM.",
     datetime(2026, 12, 1, 16, 44, tzinfo=UTC)),
    ("Claude AI usage limit reached|1767270000", datetime.fromtimestamp(1767270000, UTC)),
    ("You've hit your usage limit. Try again in 2 hours 5 minutes.",
     NOW + timedelta(hours=2, minutes=5)),
    ("rate limited: try again in 45s", NOW + timedelta(seconds=45)),
    ("Usage limit reached, try again at 2026-12-02 08:00:00Z",
     datetime(2026, 12, 2, 8, tzinfo=UTC)),
])
def test_limit_messages_say_when_they_lift(said: str, expected: datetime) -> None:
    verdict = classify(ClaudeStream().finish(), 1, said, now=NOW)
    assert verdict.verdict is Verdict.LIMIT_WAIT
    assert verdict.reset_at == expected


def test_a_clock_time_already_past_today_has_lifted_not_tomorrow() -> None:
    # 11:30 now: 9am has passed today (the limit lifted), it is not tomorrow's 9am.
    assert reset_time("resets 9am (UTC)", NOW) == datetime(2026, 12, 1, 9, 1, tzinfo=UTC)
    # Inside the minute told, the minute's end is still ahead.
    inside = NOW.replace(minute=43, second=30)
    assert reset_time("try again at 11:43 AM", inside) == NOW.replace(minute=44)
    # Only a time far behind (past midnight, said late at night) is tomorrow's.
    late = datetime(2026, 12, 1, 23, 50, tzinfo=UTC)
    assert reset_time("resets 12:30am (UTC)", late) == datetime(2026, 12, 2, 0, 31, tzinfo=UTC)
    assert reset_time("nothing about time here", NOW) is None


@pytest.mark.parametrize(("said", "expected"), [
    ("resets Jan 2, 1am (UTC)", datetime(2027, 1, 2, 1, 1, tzinfo=UTC)),  # next year's
    ("resets Nov 30, 1am (UTC)", datetime(2026, 11, 30, 1, 1, tzinfo=UTC)),  # just passed
    ("try again at Feb 30th, 2027 5:41 PM", None),  # no such day
    ("try again at 13 PM", None),
    ("try again in a moment", None),
])
def test_days_without_a_year_and_times_that_are_none(said: str,
                                                     expected: datetime | None) -> None:
    assert reset_time(said, NOW) == expected


@pytest.mark.parametrize("said", ["Your usage allocation has been disabled by your admin",
                                  "You've hit your spend limit for this month"])
def test_a_limit_no_clock_lifts_stops(said: str) -> None:
    verdict = classify(ClaudeStream().finish(), 1, said, now=NOW)
    assert verdict.verdict is Verdict.LIMIT_STOP
    assert said in verdict.message


def test_a_limit_message_printed_as_plain_text_in_a_structured_stream() -> None:
    reader = ClaudeStream()
    feed(reader, ["You've hit your limit · resets 1pm (Europe/Lisbon)"])
    verdict = classify(reader.finish(), 1, "", structured=True,
                       stdout="You've hit your limit · resets 1pm (Europe/Lisbon)\n", now=NOW)
    assert verdict.verdict is Verdict.LIMIT_WAIT and verdict.reset_at is not None


def test_not_logged_in_and_command_not_found_have_stable_signatures() -> None:
    reader = ClaudeStream()
    feed(reader, [claude_init("s"), claude_result("s", "Invalid API key · Please run /login",
                                                  is_error=True, cost=0.0, turns=1)])
    first = classify(reader.finish(), 1, "", structured=True)
    second = classify(ClaudeStream().finish(), 1, "Error: Invalid API key · Please run /login")
    assert first.kind == second.kind == "not logged in"
    assert first.signature(1) == second.signature(1) == "exit 1: not logged in"
    missing = classify(ClaudeStream().finish(), 127, "sh: claude: not found")
    assert missing.signature(127) == "exit 127: command not found"


def test_codex_stream_gives_the_last_message_thread_and_tokens() -> None:
    reader = CodexStream()
    feed(reader, [codex_thread("th-9"), codex_turn_started(), codex_command("pytest -q"),
                  codex_message("Looking at the tests."), codex_turn_completed(100, 60, 10),
                  codex_turn_started(), codex_message("Done.\nFORGE_DONE", "item_9"),
                  codex_turn_completed(300, 210, 30)])
    facts = reader.finish()
    assert facts.final_text == "Done.\nFORGE_DONE" and facts.session_id == "th-9"
    # Each turn.completed holds the thread's totals so far: the last one is the whole.
    assert (facts.input_tokens, facts.cached_tokens, facts.output_tokens) == (300, 210, 30)
    assert facts.running_totals
    assert facts.cost_usd is None  # Codex reports no cost: none is invented
    # It may exit non-zero after a successful turn: the events are trusted.
    assert classify(facts, 1, "", structured=True).verdict is Verdict.RAN


def test_codex_usage_limit_and_failure() -> None:
    reader = CodexStream()
    feed(reader, [codex_thread("th"), codex_turn_started(),
                  codex_error("You've hit your usage limit. Try again in 3 hours."),
                  codex_turn_failed("You've hit your usage limit. Try again in 3 hours.")])
    verdict = classify(reader.finish(), 1, "", structured=True, now=NOW)
    assert verdict.verdict is Verdict.LIMIT_WAIT
    assert verdict.reset_at == NOW + timedelta(hours=3)
    failed = CodexStream()
    feed(failed, [codex_thread("th"), codex_turn_failed("stream disconnected before completion")])
    # The kind is the final error's own words (the circuit breaker compares them).
    assert classify(failed.finish(), 1, "", structured=True).kind == (
        "stream disconnected before completion")


def test_profiles_and_resume_argv() -> None:
    claude, codex = PROFILES["claude"], PROFILES["codex"]
    assert profile_for(["claude"]) is claude and profile_for(["claude", "-p"]) is GENERIC
    assert claude.argv(["claude"], ["--model", "opus"]) == [
        "claude", "-p", "--output-format", "stream-json", "--verbose", "--model", "opus"]
    assert claude.argv(["claude"], ["--model", "opus"], session="s1") == [
        "claude", "-p", "--output-format", "stream-json", "--verbose", "--model", "opus",
        "--resume=s1"]
    flags = ["--sandbox", "workspace-write"]
    assert codex.argv(["codex"], flags) == [
        "codex", "exec", "--json", "--sandbox", "workspace-write", "-"]
    # `codex exec resume` takes none of exec's flags after it: they go before `resume`.
    assert codex.argv(["codex"], flags, session="th") == [
        "codex", "exec", "--json", "--sandbox", "workspace-write", "resume", "th", "-"]
    # a command line is the generic profile: run as given, the extra flags after it
    assert GENERIC.argv(["my-agent", "--fast"], ["-v"], session="s") == [
        "my-agent", "--fast", "-v"]


def test_receipts_and_totals() -> None:
    claude = Receipt(duration_ms=1000, exit_code=0, session_id="s", turns=3, input_tokens=10,
                     output_tokens=5, cached_tokens=2, cost_usd=0.25)
    codex = Receipt(duration_ms=500, exit_code=0, input_tokens=100, output_tokens=50)
    assert Receipt.from_json(json.loads(json.dumps(claude.to_json()))) == claude
    assert Totals.of([codex]).cost_usd is None  # tokens only, never a price
    totals = Totals.of([claude, codex, claude])
    assert (totals.attempts, totals.input_tokens, totals.cost_usd) == (3, 120, 0.5)
    assert totals.describe() == "3 attempts, 120 tokens in / 60 out, $0.50"


def test_the_parser_memory_is_flat_in_the_transcript_size() -> None:
    message = (claude_assistant("s", "x" * 2000) + "\n").encode()
    peaks = []
    for copies in (1_000, 10_000):
        reader = ClaudeStream()
        tracemalloc.start()
        for _ in range(copies):
            reader.feed(message)
        reader.feed((claude_result("s", "FORGE_DONE") + "\n").encode())
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert reader.finish().final_text == "FORGE_DONE"
    assert peaks[1] < peaks[0] * 1.5  # ten times the transcript, about the same memory
