"""What the real Claude Code (2.1.332, 2.1.197) and Codex (0.171.0) print when things
go wrong, read as git-forge reads it (issue 33, points 1–6).

The lines are the programs' own, from runs against a model server on 127.0.0.1,
with the fields git-forge does not read left out (each event keeps its shape and
every field named here). ``tests/test_real_agents.py`` runs the programs
themselves where they are installed; these hold the formats everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from git_forge.agents.classify import (
    Verdict,
    classify,
    copilot_failure,
    error_line,
    gemini_failure,
    qwen_failure,
)
from git_forge.agents.receipt import added_since
from git_forge.agents.streams import (
    ClaudeStream,
    CodexStream,
    CopilotStream,
    Facts,
    GeminiStream,
    OpenCodeStream,
    QwenStream,
)

#: When the transcripts were taken (16:51 UTC), as the tests' "now".
NOW = datetime(2026, 12, 3, 16, 51, 40, tzinfo=UTC)
SESSION = "42125bca-1a72-4250-a6d6-3d38ef09ecdb"


def _line(event: dict[str, Any]) -> str:
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False)


def _claude(*lines: str) -> Facts:
    reader = ClaudeStream()
    reader.feed("".join(f"{line}\n" for line in lines).encode())
    return reader.finish()


def _codex(*lines: str) -> Facts:
    reader = CodexStream()
    reader.feed("".join(f"{line}\n" for line in lines).encode())
    return reader.finish()


def _synthetic(text: str, error: str, status: int | None = None,
               **fields: Any) -> str:
    """Claude Code's synthetic assistant message for a failed request."""
    event: dict[str, Any] = {
        "type": "assistant",
        "message": {"model": "<synthetic>", "role": "assistant",
                    "content": [{"type": "text", "text": text}]},
        "parent_tool_use_id": None, "session_id": SESSION, "error": error}
    if status is not None:
        event.update({"is_api_error_message": True, "api_error_status": status})
    event.update(fields)
    return _line(event)


def _error_result(text: str | None, *, subtype: str = "success", version: str = "2.1.332",
                  **fields: Any) -> str:
    """Claude Code's ``result`` for a failed attempt (2.1.197 has fewer fields)."""
    event: dict[str, Any] = {"type": "result", "subtype": subtype, "is_error": True,
                             "num_turns": 1, "session_id": SESSION, "total_cost_usd": 0}
    if version != "2.1.197":
        event.update({"terminal_reason": "api_error", "model_usage_since_last_result": {}})
    if text is not None:
        event["result"] = text
    event.update(fields)
    return _line(event)


SERVER_ERROR = ("API Error: {status} {words}. This is a server-side issue, usually temporary — "
                "try again in a moment. If it persists, check your inference gateway "
                "(127.0.0.1:8080).")


# --- point 1: a server error is a failure, never a usage limit ----------------------------------


@pytest.mark.parametrize(("status", "words", "kind", "version"), [
    (529, "Overloaded", "overloaded_error", "2.1.332"),
    (500, "Internal server error", "api_error", "2.1.332"),
    (529, "Overloaded", None, "2.1.197"),
])
def test_a_server_error_is_a_failure_with_its_status_never_a_limit(
        status: int, words: str, kind: str | None, version: str) -> None:
    text = SERVER_ERROR.format(status=status, words=words)
    retry = _line({"type": "system", "subtype": "api_retry", "attempt": 2, "max_retries": 2,
                   "retry_delay_ms": 1229, "error_status": status, "error": "overloaded",
                   "session_id": SESSION})
    typed = {"api_error_type": kind} if kind else {}
    facts = _claude(retry, _synthetic(text, "server_error", **({} if version == "2.1.197" else {
        "api_error_status": status, **typed})),
        _error_result(text, version=version, api_error_status=status, **typed))
    verdict = classify(facts, 1, "", structured=True, now=NOW)
    assert verdict.verdict is Verdict.FAILED
    assert verdict.kind == f"API Error: {status}" + (f" {kind}" if kind else "")
    assert verdict.message == text
    assert facts.retrying == f"{status} overloaded"


def test_try_again_in_a_moment_is_no_time_in_plain_words_either() -> None:
    text = SERVER_ERROR.format(status=529, words="Overloaded")
    verdict = classify(Facts(), 1, text, now=NOW)  # a plain agent saying it on stderr
    assert verdict.verdict is not Verdict.LIMIT_WAIT and verdict.reset_at is None


# --- point 2: Codex's limit times ---------------------------------------------------------------

CODEX_LIMIT = ("You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), "
               "visit https://chatgpt.com/settings/usage to purchase more credits or try again "
               "at {when}.")


def _codex_limit(when: str) -> Facts:
    message = CODEX_LIMIT.format(when=when)
    return _codex(_line({"type": "thread.started",
                         "thread_id": "01a23cd1-e92a-7122-8fc1-6b2760f568a5"}),
                  _line({"type": "turn.started"}), _line({"type": "error", "message": message}),
                  _line({"type": "turn.failed", "error": {"message": message}}))


def _machine_zone(monkeypatch: pytest.MonkeyPatch, name: str) -> Iterator[ZoneInfo]:
    import time

    monkeypatch.setenv("TZ", name)
    time.tzset()
    yield ZoneInfo(name)
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def sao_paulo(monkeypatch: pytest.MonkeyPatch) -> Iterator[ZoneInfo]:
    """The machine's local time zone (Codex's times have none of their own)."""
    yield from _machine_zone(monkeypatch, "America/Sao_Paulo")


@pytest.fixture
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[ZoneInfo]:
    """A machine's time zone with summer time: from 2026-03-08 2 AM to 2026-11-01 2 AM."""
    yield from _machine_zone(monkeypatch, "America/New_York")


@pytest.mark.parametrize(("now_local", "when", "lifts_local"), [
    # Later today: the end of the minute told.
    ((13, 51, 40), "5:01 PM", (2026, 12, 3, 17, 2)),
    # Inside the minute told: its end, seconds away — never tomorrow.
    ((17, 1, 30), "5:01 PM", (2026, 12, 3, 17, 2)),
    # Another day, with its date.
    ((13, 51, 40), "Dec 5th, 2026 5:51 PM", (2026, 12, 5, 17, 52)),
])
def test_codex_says_its_limit_in_local_time_to_the_minute(
        sao_paulo: ZoneInfo, now_local: tuple[int, int, int], when: str,
        lifts_local: tuple[int, ...]) -> None:
    now = datetime(2026, 12, 3, *now_local, tzinfo=sao_paulo).astimezone(UTC)
    verdict = classify(_codex_limit(when), 1, "", structured=True, now=now)
    assert verdict.verdict is Verdict.LIMIT_WAIT
    assert verdict.reset_at == datetime(*lifts_local, tzinfo=sao_paulo).astimezone(UTC)


def test_a_codex_time_already_passed_today_is_now_not_tomorrow(sao_paulo: ZoneInfo) -> None:
    now = datetime(2026, 12, 3, 17, 30, tzinfo=sao_paulo).astimezone(UTC)
    verdict = classify(_codex_limit("5:01 PM"), 1, "", structured=True, now=now)
    assert verdict.verdict is Verdict.LIMIT_WAIT
    assert verdict.reset_at is not None and verdict.reset_at <= now


@pytest.mark.parametrize(("now_local", "when", "lifts_local"), [
    # The day summer time begins: 1 AM is on standard time, 4:43 PM on summer time.
    ((2026, 3, 8, 1, 0), "4:43 PM", (2026, 3, 8, 16, 44)),
    # The day it ends: half past midnight is on summer time, 4:43 PM on standard time.
    ((2026, 11, 1, 0, 30), "4:43 PM", (2026, 11, 1, 16, 44)),
    # A day told on the other side of the change.
    ((2026, 10, 30, 12, 0), "Nov 2nd, 2026 4:43 PM", (2026, 11, 2, 16, 44)),
    ((2026, 3, 6, 12, 0), "Mar 9th, 2026 4:43 PM", (2026, 3, 9, 16, 44)),
])
def test_a_codex_time_across_a_change_to_or_from_summer_time_keeps_its_hour(
        new_york: ZoneInfo, now_local: tuple[int, ...], when: str,
        lifts_local: tuple[int, ...]) -> None:
    # Codex tells the machine's wall clock on the day of the limit's end, whose offset
    # may not be the one in force now: an hour off made the wait an hour too long, or
    # the retry come back an hour early.
    now = datetime(*now_local, tzinfo=new_york).astimezone(UTC)
    verdict = classify(_codex_limit(when), 1, "", structured=True, now=now)
    assert verdict.verdict is Verdict.LIMIT_WAIT
    assert verdict.reset_at == datetime(*lifts_local, tzinfo=new_york).astimezone(UTC)


# --- point 3: Claude's limit texts --------------------------------------------------------------


def test_a_subscribers_limit_without_its_event_reads_the_error_params() -> None:
    # Once the limit's time has passed, Claude Code sends no rate_limit_event: the
    # synthetic message's api_error_params still hold resetsAt.
    text = "You've hit your 5-hour limit · resets Dec 5, 5:51pm (UTC)"
    params = {"rate_limit_info": {"status": "rejected", "resetsAt": 1796493100,
                                  "rateLimitType": "five_hour", "overageStatus": "rejected",
                                  "isUsingOverage": False}}
    facts = _claude(_synthetic(text, "rate_limit", 429, api_error="usage_limit_reached",
                               api_error_params=params, api_error_type="rate_limit_error"),
                    _error_result(text, api_error_status=429, api_error="usage_limit_reached",
                                  api_error_type="rate_limit_error"))
    verdict = classify(facts, 1, "", structured=True, now=NOW)
    assert verdict.verdict is Verdict.LIMIT_WAIT
    assert verdict.reset_at == datetime.fromtimestamp(1796493100, UTC)


@pytest.mark.parametrize(("text", "lifts"), [
    ("You've hit your 5-hour limit · resets 5:01pm (UTC)", datetime(2026, 12, 3, 17, 2,
                                                                    tzinfo=UTC)),
    ("You've hit your 5-hour limit · resets Dec 5, 5:51pm (UTC)",
     datetime(2026, 12, 5, 17, 52, tzinfo=UTC)),
    ("You've hit your session limit · resets 5:20pm (UTC)",
     datetime(2026, 12, 3, 17, 21, tzinfo=UTC)),
])
def test_claudes_limit_words_alone_say_when_it_lifts(text: str, lifts: datetime) -> None:
    facts = _claude(_error_result(text, api_error_status=429, api_error="usage_limit_reached"))
    verdict = classify(facts, 1, "", structured=True, now=NOW)
    assert (verdict.verdict, verdict.reset_at) == (Verdict.LIMIT_WAIT, lifts)


def test_an_api_keys_rate_limit_is_a_limit_with_no_time() -> None:
    text = ("API Error: Request rejected (429) · This request would exceed your account's "
            "rate limit. Please try again later.")
    facts = _claude(_synthetic(text, "rate_limit", 429, api_error_type="rate_limit_error"),
                    _error_result(text, api_error_status=429,
                                  api_error_type="rate_limit_error"))
    verdict = classify(facts, 1, "", structured=True, now=NOW)
    assert verdict.verdict is Verdict.LIMIT_WAIT and verdict.reset_at is None
    assert verdict.message == text


@pytest.mark.parametrize("text", ["Not logged in · Please run /login",
                                  "Invalid API key · Fix external API key"])
def test_a_rejected_credential_is_not_logged_in(text: str) -> None:
    facts = _claude(_synthetic(text, "authentication_failed", 401,
                               api_error_type="authentication_error"),
                    _error_result(text, api_error_status=401,
                                  api_error_type="authentication_error"))
    assert classify(facts, 1, "", structured=True).signature(1) == "exit 1: not logged in"


@pytest.mark.parametrize(("text", "status", "kind"), [
    ("Credit balance is too low", 400, "invalid_request_error"),
    ("Failed to authenticate. API Error: 403 Your usage allocation has been disabled by "
     "your admin", 403, "permission_error"),
])
def test_claudes_limit_no_clock_lifts_stops_whatever_its_status(
        text: str, status: int, kind: str) -> None:
    # An API key out of credit (a 400) and an allocation an admin disabled (a 403), as
    # Claude Code says them: its status alone read them as a failure (400) or as
    # "not logged in" (403), three attempts and the breaker instead of a stop.
    facts = _claude(_synthetic(text, "invalid_request", status, api_error_type=kind),
                    _error_result(text, api_error_status=status, api_error_type=kind))
    verdict = classify(facts, 1, "", structured=True, now=NOW)
    assert (verdict.verdict, verdict.message) == (Verdict.LIMIT_STOP, text)


def test_codexs_quota_exceeded_is_a_limit_no_clock_lifts() -> None:
    # An API key out of credit (OpenAI's 429 insufficient_quota), as Codex says it: the
    # run stops there, as at Claude's "credit balance is too low" — not three failed
    # attempts and the circuit breaker.
    message = "Quota exceeded. Check your plan and billing details."
    facts = _codex(_line({"type": "thread.started",
                          "thread_id": "01a23e1c-9a89-77f2-90db-9c08a6ed3c3e"}),
                   _line({"type": "turn.started"}), _line({"type": "error", "message": message}),
                   _line({"type": "turn.failed", "error": {"message": message}}))
    verdict = classify(facts, 1, "", structured=True, now=NOW)
    assert (verdict.verdict, verdict.message) == (Verdict.LIMIT_STOP, message)


# --- point 4: running totals --------------------------------------------------------------------


def test_claudes_cost_is_this_process_s_not_the_session_s() -> None:
    usage = {"inputTokens": 2540, "outputTokens": 114, "costUSD": 0.00782}
    resumed = _line({"type": "result", "subtype": "success", "is_error": False,
                     "num_turns": 2, "result": "FORGE_DONE", "session_id": SESSION,
                     "total_cost_usd": 0.01548,  # the session's so far (2.1.332 on --resume)
                     "usage": {"input_tokens": 2540, "output_tokens": 114,
                               "cache_creation_input_tokens": 600,
                               "cache_read_input_tokens": 1000},
                     "model_usage_since_last_result": {"claude-sonnet-5-5": usage}})
    assert _claude(resumed).cost_usd == 0.00782
    # 2.1.197 has no model_usage_since_last_result: its total_cost_usd is the process's.
    older = json.loads(resumed)
    del older["model_usage_since_last_result"]
    assert _claude(_line({**older, "total_cost_usd": 0.01188})).cost_usd == 0.01188
    # A figure in it that is no cost makes the cost unknown, and says so.
    lying = {**json.loads(resumed), "model_usage_since_last_result": {
        "a": {"costUSD": 0.5}, "b": {"costUSD": -1}}}
    facts = _claude(_line(lying))
    assert facts.cost_usd is None and "costUsd" in facts.refused


def test_codexs_usage_is_the_threads_running_total() -> None:
    def done(tokens: tuple[int, int, int]) -> Facts:
        return _codex(_line({"type": "thread.started", "thread_id": "th"}),
                      _line({"type": "turn.completed", "usage": {
                          "input_tokens": tokens[0], "cached_input_tokens": tokens[1],
                          "cache_write_input_tokens": 0, "output_tokens": tokens[2],
                          "reasoning_output_tokens": 24}}))
    first, resumed = done((4250, 1600, 122)), done((8700, 3200, 244))
    assert first.running_totals and resumed.running_totals
    added = [added_since(now, before) for now, before in (
        (resumed.input_tokens, first.input_tokens), (resumed.output_tokens, first.output_tokens),
        (resumed.cached_tokens, first.cached_tokens))]
    assert added == [4450, 122, 1600]
    assert added_since(100, 400) == 100  # smaller than before: a new count, whole
    assert added_since(None, 5) is None and added_since(7, None) == 7


# --- point 5: a command line the program refuses ------------------------------------------------

CLAP = ("error: unexpected argument '--sandbox' found\n\n  tip: to pass '--sandbox' as a value, "
        "use '-- --sandbox'\n\nUsage: codex exec resume <SESSION_ID> [PROMPT]\n\n"
        "For more information, try '--help'.\n")


@pytest.mark.parametrize(("stderr", "code", "line"), [
    (CLAP, 2, "error: unexpected argument '--sandbox' found"),
    ("error: unknown option '--bogus'\n", 1, "error: unknown option '--bogus'"),
    ("error: option '--permission-mode <mode>' argument 'nope' is invalid. Allowed choices "
     "are acceptEdits, auto.\n", 1,
     "error: option '--permission-mode <mode>' argument 'nope' is invalid. Allowed choices "
     "are acceptEdits, auto."),
])
def test_a_refused_command_line_is_no_items_failure(stderr: str, code: int, line: str) -> None:
    verdict = classify(Facts(), code, stderr, structured=True)
    assert (verdict.verdict, verdict.message) == (Verdict.COMMAND_REFUSED, line)
    assert error_line(stderr) == line


def test_words_like_a_usage_error_after_the_stream_began_are_the_items() -> None:
    # A session started: the program took its command line; what failed is the item's.
    facts = _codex(_line({"type": "thread.started", "thread_id": "th"}))
    verdict = classify(facts, 2, "error: unexpected argument 'x' found\n", structured=True)
    assert verdict.verdict is Verdict.FAILED


# --- point 6: words carried elsewhere -----------------------------------------------------------


def test_error_max_turns_quotes_its_errors() -> None:
    facts = _claude(_line({"type": "result", "subtype": "error_max_turns", "is_error": True,
                           "num_turns": 2, "session_id": SESSION, "total_cost_usd": 0.00381,
                           "terminal_reason": "max_turns",
                           "errors": ["Reached maximum number of turns (1)"]}))
    assert facts.final_text == "" and facts.errors == ["Reached maximum number of turns (1)"]
    verdict = classify(facts, 1, "", structured=True)
    assert verdict.verdict is Verdict.FAILED
    assert verdict.kind == verdict.message == "Reached maximum number of turns (1)"


def test_codex_reconnecting_is_a_retry_and_the_final_error_is_quoted() -> None:
    final = "We’re currently experiencing high demand, which may cause temporary errors."
    facts = _codex(
        _line({"type": "thread.started", "thread_id": "th"}), _line({"type": "turn.started"}),
        *(_line({"type": "error", "message": f"Reconnecting... {n}/5 ({final})"})
          for n in range(1, 6)),
        _line({"type": "error", "message": final}),
        _line({"type": "turn.failed", "error": {"message": final}}))
    assert facts.errors == [final] and facts.retrying == f"Reconnecting... 5/5 ({final})"
    verdict = classify(facts, 1, "", structured=True)
    assert verdict.verdict is Verdict.FAILED
    assert verdict.kind == final.rstrip(".") and verdict.message == final


def test_a_codex_warning_item_is_no_failure() -> None:
    warning = _line({"type": "item.completed", "item": {
        "id": "item_0", "type": "error",
        "message": "Model metadata for `gpt-forge` not found; defaulting to fallback"}})
    facts = _codex(_line({"type": "thread.started", "thread_id": "th"}), warning,
                   _line({"type": "item.completed", "item": {
                       "id": "item_1", "type": "agent_message", "text": "FORGE_DONE"}}),
                   _line({"type": "turn.completed", "usage": {
                       "input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 2}}))
    assert facts.errors == [] and facts.warnings[0].startswith("Model metadata")
    assert classify(facts, 0, "", structured=True).verdict is Verdict.RAN


def test_a_process_ended_while_retrying_names_the_retry() -> None:
    retry = _line({"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 10,
                   "retry_delay_ms": 586, "error_status": 503, "error": "unavailable",
                   "session_id": SESSION})
    verdict = classify(_claude(retry), 1, "", structured=True)
    assert verdict.verdict is Verdict.FAILED and verdict.message == "503 unavailable"


def test_the_same_minute_is_never_a_day_later(sao_paulo: ZoneInfo) -> None:
    # Codex says 5:01 PM at 5:01:59 PM: the limit lifts within a second, not tomorrow.
    now = datetime(2026, 12, 3, 17, 1, 59, tzinfo=sao_paulo)
    verdict = classify(Facts(errors=[CODEX_LIMIT.format(when="5:01 PM")]), 1, "",
                       structured=True, now=now)
    assert verdict.reset_at is not None
    assert timedelta(0) <= verdict.reset_at - now <= timedelta(seconds=1)


# --- Gemini CLI 0.61 ----------------------------------------------------------------------------

GEMINI_SESSION = "9b559604-5ff1-4ca2-aae3-a353e2f58308"
_GEMINI_STATS = ('"stats":{"total_tokens":3162,"input_tokens":3006,"output_tokens":156,'
                 '"cached":300,"input":2706,"duration_ms":131,"tool_calls":1}')
GEMINI_DONE = (
    '{"type":"init","timestamp":"2026-12-03T17:26:45.867Z","session_id":"'
    + GEMINI_SESSION + '","model":"auto"}',
    '{"type":"message","timestamp":"2026-12-03T17:26:45.868Z","role":"user","content":'
    '"Write forge_out.txt with a greeting, then end your answer with a line FORGE_DONE."}',
    '{"type":"message","timestamp":"2026-12-03T17:26:45.900Z","role":"assistant","content":'
    '"I will write the file.","delta":true}',
    '{"type":"tool_use","timestamp":"2026-12-03T17:26:45.968Z","tool_name":"write_file",'
    '"tool_id":"write_file__write_file_1796318805936_0","parameters":{"file_path":'
    '"$WORK/runs/gemini-done/repo/forge_out.txt","content":"hello from the fake model\\n"}}',
    '{"type":"tool_result","timestamp":"2026-12-03T17:26:45.985Z","tool_id":'
    '"write_file__write_file_1796318805936_0","status":"success"}',
    '{"type":"message","timestamp":"2026-12-03T17:26:45.994Z","role":"assistant","content":'
    '"I wrote forg","delta":true}',
    '{"type":"message","timestamp":"2026-12-03T17:26:45.995Z","role":"assistant","content":'
    '"e_out.txt with the greeting.\\n\\nFORGE_DONE","delta":true}',
    '{"type":"result","timestamp":"2026-12-03T17:26:45.997Z","status":"success",'
    + _GEMINI_STATS + '}',
)


def _gemini(*lines: str) -> Facts:
    reader = GeminiStream()
    data = "".join(f"{line}\n" for line in lines).encode()
    for start in range(0, len(data), 97):  # in pieces, as a pipe gives it
        reader.feed(data[start:start + 97])
    return reader.finish()


def _gemini_error(message: str) -> str:
    return _line({"type": "result", "timestamp": "2026-12-03T17:26:51.156Z", "status": "error",
                  "error": {"type": "unknown", "message": message},
                  "stats": {"total_tokens": 0, "input_tokens": 0, "output_tokens": 0,
                            "cached": 0, "input": 0, "duration_ms": 0, "tool_calls": 0}})


def test_geminis_final_text_is_what_it_said_after_its_last_tool() -> None:
    facts = _gemini(*GEMINI_DONE)
    assert facts.final_text == "I wrote forge_out.txt with the greeting.\n\nFORGE_DONE"
    assert facts.session_id == GEMINI_SESSION and facts.completed_turn
    assert (facts.input_tokens, facts.output_tokens, facts.cached_tokens) == (3006, 156, 300)
    assert facts.cost_usd is None and facts.duration_ms == 131  # no cost, never invented
    assert classify(facts, 0, "", structured=True, own=gemini_failure).verdict is Verdict.RAN


def test_geminis_daily_quota_is_a_limit_with_no_time() -> None:
    facts = _gemini(GEMINI_DONE[0], GEMINI_DONE[1], _gemini_error(
        "[API Error: You have exhausted your daily quota on this model.]\nPlease wait and try "
        "again later. To increase your limits, request a quota increase through AI Studio, "
        "or switch to another /auth method"))
    verdict = classify(facts, 173, "", structured=True, now=NOW, own=gemini_failure)
    assert (verdict.verdict, verdict.reset_at) == (Verdict.LIMIT_WAIT, None)
    # it failed before the model said a word: Gemini CLI saved no session to resume
    assert facts.session_id is None
    assert verdict.message == "[API Error: You have exhausted your daily quota on this model.]"


def test_geminis_refused_key_is_not_logged_in() -> None:
    facts = _gemini(GEMINI_DONE[0], _gemini_error(
        '[API Error: {"error":{"code":401,"message":"Request had invalid authentication '
        'credentials. Expected OAuth 2 access token, login cookie or other valid '
        'authentication credential. See https://developers.google.com/identity/sign-in/web/'
        'devconsole-project.","status":"UNAUTHENTICATED"}}]'))
    verdict = classify(facts, 145, "", structured=True, now=NOW, own=gemini_failure)
    assert (verdict.verdict, verdict.kind) == (Verdict.FAILED, "not logged in")
    assert verdict.agents_own  # no other item would fare better: the breaker counts it alone


@pytest.mark.parametrize(("code", "stderr", "verdict", "kind"), [
    (41, "YOLO mode is enabled. All tool calls will be automatically approved.\n"
         "Invalid auth method selected.\n", Verdict.FAILED, "not logged in"),
    (55, "Gemini CLI is not running in a trusted directory. To proceed, either use "
         "--skip-trust, set the GEMINI_CLI_TRUST_WORKSPACE=true environment variable, or "
         "trust this directory in interactive mode.\n", Verdict.COMMAND_REFUSED,
     "folder not trusted"),
    (244, "", Verdict.FAILED, "API Error: 500"),
])
def test_geminis_exit_codes_say_what_failed(code: int, stderr: str, verdict: Verdict,
                                             kind: str) -> None:
    classified = classify(Facts(), code, stderr, structured=True, now=NOW, own=gemini_failure)
    assert (classified.verdict, classified.kind) == (verdict, kind)


# --- Qwen Code 0.15 -----------------------------------------------------------------------------

QWEN_SESSION = "90821bff-951b-43fd-9842-3d14858a79a0"


def _qwen(*lines: str) -> Facts:
    reader = QwenStream()
    reader.feed("".join(f"{line}\n" for line in lines).encode())
    return reader.finish()


def _qwen_result(text: str, usage: dict[str, int], *, is_error: bool = False) -> str:
    return _line({"type": "result", "subtype": "success", "session_id": QWEN_SESSION,
                  "is_error": is_error, "duration_ms": 168, "num_turns": 1, "result": text,
                  "usage": usage, "permission_denials": []})


QWEN_INIT = _line({"type": "system", "subtype": "init", "session_id": QWEN_SESSION,
                   "model": "fake-model", "permission_mode": "yolo",
                   "qwen_code_version": "0.15.10"})


def test_qwens_refused_key_exits_0_and_is_still_not_logged_in() -> None:
    text = ("[API Error: 401 Incorrect API key provided: sk-fake***********. You can find "
            "your API key at https://platform.openai.com/account/api-keys.]")
    facts = _qwen(QWEN_INIT, _qwen_result(text, {"input_tokens": 0, "output_tokens": 0,
                                                 "cache_read_input_tokens": 0}))
    assert not facts.completed_turn and facts.errors[-1] == text
    verdict = classify(facts, 0, "", structured=True, now=NOW, own=qwen_failure)
    assert (verdict.verdict, verdict.kind) == (Verdict.FAILED, "not logged in")


def test_qwens_insufficient_quota_is_a_limit_no_clock_lifts() -> None:
    text = ("[API Error: 429 You exceeded your current quota, please check your plan and "
            "billing details.]")
    facts = _qwen(QWEN_INIT, _qwen_result(text, {"input_tokens": 0, "output_tokens": 0}))
    verdict = classify(facts, 0, "", structured=True, now=NOW, own=qwen_failure)
    assert verdict.verdict is Verdict.LIMIT_STOP


def test_qwens_usage_on_resume_is_the_sessions_running_total() -> None:
    done = _qwen(QWEN_INIT, _qwen_result("I wrote it.\n\nFORGE_DONE", {
        "input_tokens": 4074, "output_tokens": 274, "cache_read_input_tokens": 400,
        "total_tokens": 4348}))
    assert done.completed_turn and done.final_text.endswith("FORGE_DONE")
    assert done.running_totals and (done.input_tokens, done.output_tokens) == (4074, 274)
    assert done.cost_usd is None


# --- Copilot CLI 1.0 ----------------------------------------------------------------------------

COPILOT_SESSION = "2716dedd-a955-4926-aa0e-08a1e63eadf0"


def _copilot(*lines: str) -> Facts:
    reader = CopilotStream()
    reader.feed("".join(f"{line}\n" for line in lines).encode())
    return reader.finish()


def _copilot_result(code: int) -> str:
    return _line({"type": "result", "timestamp": "2026-12-03T17:39:09.966Z",
                  "sessionId": COPILOT_SESSION, "exitCode": code,
                  "usage": {"premiumRequests": 0, "totalApiDurationMs": 0,
                            "sessionDurationMs": 57987}})


def _copilot_error(kind: str, status: int, message: str) -> str:
    return _line({"type": "session.error", "data": {
        "errorType": kind, "message": message, "statusCode": status},
        "id": "e1", "timestamp": "2026-12-03T17:39:09.960Z"})


def test_copilots_final_text_is_its_last_assistant_message() -> None:
    facts = _copilot(
        _line({"type": "assistant.message_delta", "data": {"deltaContent": "I wrote"}}),
        _line({"type": "assistant.message", "data": {
            "model": "fake-model", "content": "I wrote forge_out.txt with the greeting.\n\n"
            "FORGE_DONE", "toolRequests": []}}),
        _line({"type": "model.call_final_result", "data": {"result": "success"}}),
        _copilot_result(0))
    assert facts.final_text.endswith("\n\nFORGE_DONE") and facts.completed_turn
    assert facts.session_id == COPILOT_SESSION
    assert (facts.input_tokens, facts.cost_usd) == (None, None)  # it reports neither


def test_copilots_rate_limit_after_its_retries_and_its_refused_key() -> None:
    limit = _copilot(_line({"type": "assistant.turn_retry", "data": {"reason": "rate_limit"}}),
                     _copilot_error("rate_limit", 429, "Failed to get response from the AI "
                                    "model; retried 5 times (total retry wait time: 57.64 "
                                    "seconds) Last error: 429 Too Many Requests"),
                     _copilot_result(1))
    verdict = classify(limit, 1, "", structured=True, now=NOW, own=copilot_failure)
    assert (verdict.verdict, verdict.reset_at) == (Verdict.LIMIT_WAIT, None)
    auth = _copilot(_copilot_error("authentication", 401, "Authentication failed with provider "
                                   "at http://127.0.0.1:8080/v1 (HTTP 401).\n  Check your "
                                   "COPILOT_PROVIDER_API_KEY."), _copilot_result(1))
    verdict = classify(auth, 1, "", structured=True, now=NOW, own=copilot_failure)
    assert (verdict.verdict, verdict.kind) == (Verdict.FAILED, "not logged in")


# --- OpenCode 1.18 ------------------------------------------------------------------------------

OPENCODE_SESSION = "ses_dc30a2ed5fferRok5ax9KlecDx"


def _opencode(*events: dict[str, Any]) -> Facts:
    reader = OpenCodeStream()
    reader.feed("".join(_line({"timestamp": 1796319075037, "sessionID": OPENCODE_SESSION,
                               **event}) + "\n" for event in events).encode())
    return reader.finish()


def _step_finish(reason: str, tokens: tuple[int, int, int], cost: float) -> dict[str, Any]:
    return {"type": "step_finish", "part": {
        "reason": reason, "type": "step-finish", "cost": cost,
        "tokens": {"total": sum(tokens), "input": tokens[0], "output": tokens[1],
                   "reasoning": 0, "cache": {"write": 0, "read": tokens[2]}}}}


def test_opencodes_text_tokens_and_cost_are_summed_over_its_steps() -> None:
    facts = _opencode(
        {"type": "step_start", "part": {"type": "step-start"}},
        {"type": "tool_use", "part": {"type": "tool", "tool": "write", "state": {
            "status": "completed", "output": "Wrote file successfully."}}},
        _step_finish("tool-calls", (902, 52, 100), 0.003516),
        {"type": "text", "part": {"type": "text", "text": "I wrote forge_out.txt with the "
                                                          "greeting.\n\nFORGE_DONE"}},
        _step_finish("stop", (903, 53, 100), 0.003534))
    assert facts.final_text.endswith("FORGE_DONE") and facts.completed_turn
    assert facts.session_id == OPENCODE_SESSION and facts.turns == 2
    assert (facts.input_tokens, facts.output_tokens, facts.cached_tokens) == (1805, 105, 200)
    assert facts.cost_usd == pytest.approx(0.00705)


def test_opencodes_cost_without_prices_is_no_cost_and_its_401_is_not_logged_in() -> None:
    free = _opencode(_step_finish("stop", (900, 50, 0), 0))
    assert free.cost_usd is None  # no price configured: no cost, never an invented $0.00
    auth = _opencode({"type": "error", "error": {"name": "APIError", "data": {
        "message": "Incorrect API key provided: sk-fake***********.", "statusCode": 401,
        "isRetryable": False}}})
    verdict = classify(auth, 1, "", structured=True, now=NOW, own=copilot_failure)
    assert (verdict.verdict, verdict.kind) == (Verdict.FAILED, "not logged in")


def test_numbers_in_geminis_stack_traces_are_no_status() -> None:
    stderr = ("TypeError: Cannot read properties of undefined\n"
              "    at Turn.run (file:///usr/lib/gemini/chunk-ABC.js:429:17)\n"
              "    at loop (file:///usr/lib/gemini/chunk-ABC.js:401:9)\n"
              "Loaded 403 files\n")
    verdict = classify(Facts(), 1, stderr, structured=True, now=NOW, own=gemini_failure)
    assert verdict.verdict is Verdict.FAILED and verdict.kind != "not logged in"



def test_a_final_message_with_nothing_in_it_is_the_final_text() -> None:
    copilot = _copilot(
        _line({"type": "assistant.message", "data": {"content": "FORGE_DONE",
                                                     "toolRequests": [{"name": "bash"}]}}),
        _line({"type": "assistant.message", "data": {"content": ""}}), _copilot_result(0))
    assert copilot.final_text == ""  # the earlier FORGE_DONE is no answer
    opencode = _opencode({"type": "text", "part": {"type": "text", "text": "FORGE_DONE"}},
                         {"type": "tool_use", "part": {"type": "tool", "tool": "bash"}},
                         _step_finish("stop", (10, 5, 0), 0))
    assert opencode.final_text == ""


def test_an_overlong_final_message_leaves_no_earlier_signal() -> None:
    reader = CopilotStream()
    reader.LINE_LIMIT = 1000
    reader.feed((_line({"type": "assistant.message", "data": {"content": "FORGE_DONE"}}) + "\n"
                 + _line({"type": "assistant.message", "data": {"content": "x" * 5000}})
                 + "\n" + _copilot_result(0) + "\n").encode())
    assert reader.finish().final_text == ""


def test_opencodes_unknown_counts_are_unknown_sums() -> None:
    facts = _opencode(_step_finish("tool-calls", (900, 50, 0), 0.01),
                      {"type": "step_finish", "part": {"reason": "stop", "tokens": {
                          "input": -5, "output": 10, "cache": {"read": 0}}, "cost": 0.01}})
    assert facts.input_tokens is None and facts.output_tokens == 60
    assert "tokens.input" in facts.refused


@pytest.mark.parametrize("program", ["gemini", "qwen"])
def test_a_flag_yargs_refuses_is_a_refused_command_line(program: str) -> None:
    stderr = (f"Unknown argument: bogus\nUsage: {program} [options] [command]\n\n"
              "Options:\n  -h, --help  Show help  [boolean]\n")
    own = gemini_failure if program == "gemini" else qwen_failure
    verdict = classify(Facts(), 1, stderr, structured=True, now=NOW, own=own)
    assert (verdict.verdict, verdict.message) == (Verdict.COMMAND_REFUSED,
                                                  "Unknown argument: bogus")
