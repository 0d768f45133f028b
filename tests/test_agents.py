"""Reading Claude Code's and Codex's streams, classifying what an attempt was, and
``git forge agents`` telling the version found from the ones git-forge was verified with."""

from __future__ import annotations

import json
import os
import re
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

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
from helpers import run_forge

from git_forge.agents.classify import Verdict, classify
from git_forge.agents.limits import reset_time
from git_forge.agents.profiles import (
    GENERIC,
    PROFILES,
    VERIFIED,
    format_version,
    parse_version,
    profile_for,
)
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
    # Ten times the transcript (20 MB more), about the same memory: a few KiB that other
    # threads of the test process allocate meanwhile are not the parser's.
    assert peaks[1] < peaks[0] * 1.5 + 64 * 1024


# --- git forge agents: the version found and the verified range ---------------------------------


def fake_programs(bin_dir: Path, said: dict[str, bytes]) -> dict[str, str]:
    """``claude`` and ``codex`` in ``bin_dir``, each printing its bytes for
    ``--version``; the environment that puts them first on PATH."""
    bin_dir.mkdir(exist_ok=True)
    for name, output in said.items():
        (bin_dir / f"{name}.out").write_bytes(output)
        script = bin_dir / name
        script.write_text(f"#!/bin/sh\nexec cat '{bin_dir / name}.out'\n")
        script.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def agents(tmp_path: Path, claude: bytes, codex: bytes) -> tuple[dict, str]:
    """``git forge agents --json`` (by name) and ``git forge agents`` with these programs."""
    env = fake_programs(tmp_path / "bin", {"claude": claude, "codex": codex})
    listed = run_forge("agents", "--json", cwd=tmp_path, env=env)
    plain = run_forge("agents", cwd=tmp_path, env=env)
    assert listed.returncode == plain.returncode == 0, listed.stderr + plain.stderr
    assert listed.stderr == plain.stderr == ""
    return {entry["name"]: entry for entry in json.loads(listed.stdout)}, plain.stdout


def profile_line(text: str, name: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"{name} "))


def test_the_verified_range_is_what_the_real_program_tier_installs() -> None:
    """The ends of each range are the versions ``.ci/run`` installs for that tier."""
    script = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text()
    installed = {"claude": set(re.findall(r"@anthropic-ai/claude-code@([0-9.]+)", script)),
                 "codex": set(re.findall(r"@openai/codex@([0-9.]+)", script)),
                 "gemini": set(re.findall(r"@google/gemini-cli@([0-9.]+)", script)),
                 "qwen": set(re.findall(r"@qwen-code/qwen-code@([0-9.]+)", script)),
                 "copilot": set(re.findall(r"@github/copilot@([0-9.]+)", script)),
                 "opencode": set(re.findall(r"opencode-ai@([0-9.]+)", script))}
    for name, verified in VERIFIED.items():
        ends = {format_version(verified.lowest), format_version(verified.highest)}
        assert ends == installed[name], name
        assert PROFILES[name].verified is verified


@pytest.mark.parametrize(("said", "expected"), [
    ("2.1.332 (Claude Code)", (2, 1, 332)),
    ("codex-cli 0.171.0", (0, 171, 0)),
    ("v10.2", (10, 2)),
    ("version 7", None),
    ("\u0662.\u0661.\u0663", None),  # digits, but not ASCII ones
    ("1" * 5000 + ".1", None),  # no number int() reads
])
def test_parse_version(said: str, expected: tuple[int, ...] | None) -> None:
    assert parse_version(said) == expected


@pytest.mark.parametrize(("claude", "codex", "statuses"), [
    (b"2.1.332 (Claude Code)\n", b"codex-cli 0.171.0\n", ("verified", "verified")),
    (b"2.1.197 (Claude Code)\n", b"codex-cli 0.170.9\n", ("verified", "older")),
    (b"2.1.340 (Claude Code)\n", b"codex-cli 0.172.0\n", ("newer", "newer")),
    (b"2.0.31 (Claude Code)\n", b"codex-cli 1.0.0\n", ("older", "newer")),
], ids=["inside", "lowest-and-below", "above", "below-and-above"])
def test_agents_says_where_the_version_is_against_the_verified_range(
        tmp_path: Path, claude: bytes, codex: bytes, statuses: tuple[str, str]) -> None:
    by_name, plain = agents(tmp_path, claude, codex)
    for name, said, status in (("claude", claude, statuses[0]), ("codex", codex, statuses[1])):
        entry = by_name[name]
        number = said.decode().split()[-1 if name == "codex" else 0]
        assert entry["path"] == str(tmp_path / "bin" / name)
        assert entry["version"] == number and entry["versionText"] == said.decode().strip()
        assert entry["versionStatus"] == status
        line = profile_line(plain, name)
        if status == "verified":
            assert line.endswith(f"/{name} ({number})"), line
        else:
            assert f"({number}; {status} than the " in line
            assert line.endswith(" git-forge verified: its stream may differ)"), line
    assert by_name["claude"]["verified"] == {"lowest": "2.1.197", "highest": "2.1.332"}
    assert by_name["codex"]["verified"] == {"lowest": "0.171.0", "highest": "0.171.0"}
    if statuses[0] != "verified":
        assert "than the 2.1.197–2.1.332 git-forge verified" in profile_line(plain, "claude")
    if statuses[1] != "verified":  # one version verified: no range of one
        assert "than the 0.171.0 git-forge verified" in profile_line(plain, "codex")
    generic = by_name["generic"]
    assert generic["verified"] is None and generic["versionStatus"] is None


def test_no_version_read_is_unknown_and_no_warning(tmp_path: Path) -> None:
    by_name, plain = agents(tmp_path, b"Segmentation fault\n", b"")
    assert by_name["claude"]["version"] is None
    assert by_name["claude"]["versionText"] == "Segmentation fault"
    assert by_name["codex"]["version"] is None and by_name["codex"]["versionText"] is None
    for name in ("claude", "codex"):
        assert by_name[name]["versionStatus"] == "unknown"
        assert profile_line(plain, name).endswith(f"/{name} (version unknown)")
    missing = run_forge("agents", "--json", cwd=tmp_path, env={"PATH": str(tmp_path / "none")})
    entry = json.loads(missing.stdout)[0]
    assert missing.returncode == 0 and entry["path"] is None
    assert entry["versionStatus"] == "unknown"


def test_a_version_the_program_failed_to_say_is_unknown(tmp_path: Path) -> None:
    """A ``--version`` that fails says nothing of the program's version: Codex
    installed without its platform package dies in Node, whose last words name
    Node's version — read as Codex 20.20.2, "newer than verified"."""
    crash = ("file:///usr/lib/node_modules/@openai/codex/bin/codex.js:108\n"
             "  throw new Error(\n        ^\n\n"
             "Error: Missing optional dependency @openai/codex-linux-x64. Reinstall Codex: "
             "npm install -g @openai/codex@latest\n"
             "    at findCodexExecutable (file:///usr/lib/node_modules/@openai/codex/bin/"
             "codex.js:108:9)\n\nNode.js v20.20.2\n")
    env = fake_programs(tmp_path / "bin", {"claude": b"2.1.332 (Claude Code)\n"})
    codex = tmp_path / "bin" / "codex"
    (tmp_path / "bin" / "codex.err").write_text(crash)
    codex.write_text(f"#!/bin/sh\ncat '{codex}.err' >&2\nexit 1\n")
    codex.chmod(0o755)
    listed = run_forge("agents", "--json", cwd=tmp_path, env=env)
    plain = run_forge("agents", cwd=tmp_path, env=env)
    assert listed.returncode == plain.returncode == 0, listed.stderr + plain.stderr
    entry = next(each for each in json.loads(listed.stdout) if each["name"] == "codex")
    assert (entry["version"], entry["versionStatus"]) == (None, "unknown")
    assert profile_line(plain.stdout, "codex").endswith("/codex (version unknown)")


def test_a_version_line_with_escape_sequences_never_reaches_the_terminal(tmp_path: Path) -> None:
    """The output is safe text before it is read: the number an OSC sequence hides
    (a title change to ``9.9.9``) is not the version, and nothing of the clipboard
    write, the screen clear or the BEL is printed, as text or as JSON."""
    attack = (b"\x1b]0;9.9.9\x07\x1b]52;c;ZXZpbA==\x07\x1b[2J\x9b31m2.1.332\x1b[0m"
              b" (Claude Code)\x07\rFORGED 1.0.0\n")
    by_name, plain = agents(tmp_path, attack, b"codex-cli \x1b[8m0.171.0\n")
    assert by_name["claude"]["version"] == "2.1.332"
    # a raw C1 byte is not UTF-8: it reads as U+FFFD
    assert by_name["claude"]["versionText"] == "\ufffd31m2.1.332 (Claude Code)"
    assert by_name["claude"]["versionStatus"] == "verified"
    assert by_name["codex"]["versionText"] == "codex-cli 0.171.0"
    for text in (plain, json.dumps(by_name, ensure_ascii=False)):
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", text), text
        assert "9.9.9" not in text and "ZXZpbA" not in text
