"""The real Claude Code and Codex programs under the loop, against a model server
on 127.0.0.1 (``model_server``) that scripts what the model does.

Nothing is installed here. A program runs when it is found under an npm prefix
named by ``FORGE_TEST_NPM_PREFIX`` (several may be given, separated by ``:``;
``.ci/run`` installs the versions this tier verifies) or on PATH; without it its
tests skip, saying so. The first version of each program found runs every
scenario; every Claude Code found runs the ones where its versions differ.

The programs run as a user runs them, in their own home (``tests/conftest.py``
isolates HOME), with the test's flags on the command line. Claude Code has a
subscription token (``CLAUDE_CODE_OAUTH_TOKEN``: a usage limit then comes as its
subscribers see it) and ``ANTHROPIC_BASE_URL`` naming the server; Codex has a
``config.toml`` naming the server as its model provider and letting it write files
(its sandbox helper is not set up under a temporary home). Each retries a failed
request once (``CLAUDE_CODE_MAX_RETRIES``, ``stream_max_retries``) instead of up to
ten or five times, to keep the tier fast; the retries still show in their output.
The programs and git-forge share a local time zone that is not UTC.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import waiting
from builders import backlog_repo
from helpers import git, run_forge, sandbox_problem
from model_server import Fail, Hang, Limit, ModelServer, Say, Shell, Usage
from templates import Templates

from git_forge.agents.profiles import PROFILES

#: The npm prefixes searched first, ``:``-separated.
PREFIX_VARIABLE = "FORGE_TEST_NPM_PREFIX"
#: The local time zone of the programs and of git-forge.
ZONE = "America/Sao_Paulo"
#: The flags a user gives each program to let it work unattended.
USER_FLAGS = {"claude": ("--agent-arg=--permission-mode", "--agent-arg=acceptEdits"),
              "codex": (), "gemini": ("--agent-arg=--yolo",),
              "qwen": ("--agent-arg=--yolo", "--agent-arg=--auth-type", "--agent-arg=openai"),
              "copilot": ("--agent-arg=--allow-all-tools", "--agent-arg=--allow-all-paths",
                          "--agent-arg=--no-auto-update"),
              "opencode": ("--agent-arg=--auto",)}
#: What would bring a user's own account into the tests.
FOREIGN = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_MODEL",
           "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CONFIG_DIR",
           "OPENAI_API_KEY", "OPENAI_BASE_URL", "GEMINI_API_KEY", "GOOGLE_API_KEY",
           "GOOGLE_GEMINI_BASE_URL", "GOOGLE_CLOUD_PROJECT", "GOOGLE_GENAI_USE_VERTEXAI")
DONE = "FORGE_DONE"


@dataclass(frozen=True)
class Program:
    name: str
    path: Path
    version: str

    @property
    def id(self) -> str:
        return f"{self.name}-{self.version}"

    def version_tuple(self) -> tuple[int, ...]:
        return tuple(int(part) for part in self.version.split("."))


def _version(path: Path) -> str | None:
    try:
        result = subprocess.run([str(path), "--version"], capture_output=True, text=True,
                                timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"\d+\.\d+\.\d+", result.stdout)
    return found.group(0) if result.returncode == 0 and found else None


def _found(name: str) -> list[Program]:
    """Each version of ``name`` found: under the npm prefixes in their order, then on PATH."""
    candidates = [Path(prefix) / "node_modules" / ".bin" / name
                  for prefix in os.environ.get(PREFIX_VARIABLE, "").split(os.pathsep) if prefix]
    on_path = shutil.which(name)
    if on_path:
        candidates.append(Path(on_path))
    programs: list[Program] = []
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            version = _version(path)
            if version and all(version != program.version for program in programs):
                programs.append(Program(name, path, version))
    return programs


def _params(name: str, programs: list[Program], *values: Any) -> list[Any]:
    """One case per program (with ``values`` after it), or one saying why it skips."""
    if not programs:
        return [pytest.param(None, *values, id="-".join([name, *map(str, values)]),
                             marks=pytest.mark.skip(
                                 reason=f"{name} is neither under ${PREFIX_VARIABLE} "
                                        f"(node_modules/.bin/{name}) nor on PATH"))]
    return [pytest.param(program, *values, id="-".join([program.id, *map(str, values)]))
            for program in programs]


CLAUDES, CODEXES, GEMINIS = _found("claude"), _found("codex"), _found("gemini")
QWENS, COPILOTS, OPENCODES = _found("qwen"), _found("copilot"), _found("opencode")
#: The first of each program found: every scenario runs with it.
EACH = _params("claude", CLAUDES[:1]) + _params("codex", CODEXES[:1])
#: Every Claude Code found, and the first Codex: where versions differ.
EVERY = _params("claude", CLAUDES) + _params("codex", CODEXES[:1])
#: The first of each of the other programs found.
GEMINI, QWEN = _params("gemini", GEMINIS[:1]), _params("qwen", QWENS[:1])
COPILOT, OPENCODE = _params("copilot", COPILOTS[:1]), _params("opencode", OPENCODES[:1])


# --- one test's world ---------------------------------------------------------------------------


def _one_item(root: Path) -> None:
    backlog_repo(root, ("--title", "Write the greeting", "--priority", "1"))


def _three_items(root: Path) -> None:
    backlog_repo(root, ("--title", "Write the greeting", "--priority", "1"),
                 ("--title", "Migrate the database", "--priority", "2"),
                 ("--title", "Choose the database", "--priority", "3"))


class Tier:
    """A repository with a backlog, the model server, and the program under test
    pointed at it."""

    def __init__(self, root: Path, program: Program, server: ModelServer, home: Path) -> None:
        self.root, self.program, self.server = root, program, server
        self.env = {"PATH": f"{program.path.parent}{os.pathsep}{os.environ['PATH']}",
                    "TZ": ZONE}
        if program.name == "claude":
            self.env.update({
                "ANTHROPIC_BASE_URL": server.url, "CLAUDE_CODE_OAUTH_TOKEN": "forge-test",
                "CLAUDE_CODE_MAX_RETRIES": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
                "DISABLE_ERROR_REPORTING": "1"})
        elif program.name == "gemini":
            settings = home / ".gemini" / "settings.json"
            settings.parent.mkdir(parents=True, exist_ok=True)
            settings.write_text(json.dumps({
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "privacy": {"usageStatisticsEnabled": False},
                "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
                "telemetry": {"enabled": False}}))
            self.env.update({"GEMINI_API_KEY": "forge-test", "GOOGLE_GEMINI_BASE_URL": server.url})
        elif program.name == "opencode":
            config = home / ".config" / "opencode" / "opencode.json"
            config.parent.mkdir(parents=True, exist_ok=True)
            config.write_text(json.dumps({
                "provider": {"forge": {
                    "npm": "@ai-sdk/openai-compatible", "name": "the tests' model server",
                    "options": {"baseURL": f"{server.url}/v1", "apiKey": "sk-forge-test"},
                    "models": {"opencode-forge-test": {
                        "name": "Forge test", "cost": {"input": 3, "output": 15},
                        "limit": {"context": 200000, "output": 32000}}}}},
                "model": "forge/opencode-forge-test", "small_model": "forge/opencode-forge-test",
                "autoupdate": False, "share": "disabled"}))
            self.env.update({"XDG_CONFIG_HOME": str(home / ".config"),
                             "OPENCODE_DISABLE_MODELS_FETCH": "1",
                             "OPENCODE_DISABLE_AUTOUPDATE": "1",
                             "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
                             "OPENCODE_DISABLE_LSP_DOWNLOAD": "1"})
        elif program.name == "copilot":
            self.env.update({"COPILOT_HOME": str(home / ".copilot"), "COPILOT_OFFLINE": "true",
                             "COPILOT_PROVIDER_BASE_URL": f"{server.url}/v1",
                             "COPILOT_PROVIDER_TYPE": "openai",
                             "COPILOT_PROVIDER_API_KEY": "sk-forge-test",
                             "COPILOT_MODEL": "copilot-forge-test",
                             "COPILOT_AUTO_UPDATE": "false"})
        elif program.name == "qwen":
            # its memory extraction asks the model again after each run, in the background
            settings = home / ".qwen" / "settings.json"
            settings.parent.mkdir(parents=True, exist_ok=True)
            settings.write_text(json.dumps({"memory": {"enableManagedAutoMemory": False}}))
            self.env.update({"OPENAI_API_KEY": "sk-forge-test",
                             "OPENAI_BASE_URL": f"{server.url}/v1",
                             "OPENAI_MODEL": "qwen-forge-test"})
        else:
            codex_home = home / ".codex"
            codex_home.mkdir(parents=True, exist_ok=True)
            (codex_home / "config.toml").write_text(
                'model = "gpt-5.5"\nmodel_provider = "forge-test"\n'
                'sandbox_mode = "danger-full-access"\napproval_policy = "never"\n'
                "check_for_update_on_startup = false\n\n"
                "[analytics]\nenabled = false\n\n"
                "[model_providers.forge-test]\nname = \"the tests' model server\"\n"
                f'base_url = "{server.url}/v1"\nwire_api = "responses"\n'
                'env_key = "FORGE_TEST_MODEL_KEY"\n'
                "request_max_retries = 0\nstream_max_retries = 1\n")
            self.env.update({"CODEX_HOME": str(codex_home),
                             "FORGE_TEST_MODEL_KEY": "sk-forge-test"})

    def configure(self, yaml: str) -> None:
        (self.root / ".forge.yaml").write_text(yaml)
        git("add", ".forge.yaml", cwd=self.root)
        git("commit", "-q", "-m", "config", cwd=self.root)

    def run(self, *args: str, timeout: float = 90) -> subprocess.CompletedProcess:
        """``git forge loop run --agent PROGRAM`` with the user's flags and ``args``."""
        return run_forge("loop", "run", "--agent", self.program.name,
                         *USER_FLAGS[self.program.name], *args,
                         cwd=self.root, env=self.env, timeout=timeout)

    def forge(self, *args: str) -> subprocess.CompletedProcess:
        return run_forge(*args, cwd=self.root, env=self.env)

    def items(self) -> dict[str, dict]:
        document = json.loads((self.root / ".forge" / "backlog.json").read_text())
        return {item["id"]: item for item in document["items"]}

    def state(self) -> dict:
        return json.loads((self.root / ".forge" / "state.json").read_text())

    def events(self, kind: str) -> list[dict]:
        lines = (self.root / ".forge" / "events.ndjson").read_text().splitlines()
        return [event for event in map(json.loads, lines) if event["type"] == kind]

    def receipts(self) -> list[dict]:
        return [event["receipt"] for event in self.events("llm_exited")]

    def tokens(self, usage: Usage) -> dict[str, int]:
        """A receipt's tokens for ``usage`` served, as the program counts them: Claude
        Code's input leaves the cache out, Codex's and Gemini's count what it read from it
        too."""
        if self.program.name == "claude":
            return {"input": usage.input, "output": usage.output,
                    "cached": usage.cache_read + usage.cache_write}
        return {"input": usage.input + usage.cache_read, "output": usage.output,
                "cached": usage.cache_read}


def _tier(request: pytest.FixtureRequest, templates: Templates, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch, name: str, build: Any) -> Iterator[Tier]:
    for variable in FOREIGN:
        monkeypatch.delenv(variable, raising=False)
    root = templates.copy(name, build, tmp_path / "repo")
    with ModelServer() as server:
        yield Tier(root, request.param, server, Path(os.environ["HOME"]))


@pytest.fixture
def tier(request: pytest.FixtureRequest, templates: Templates, tmp_path: Path,
         monkeypatch: pytest.MonkeyPatch) -> Iterator[Tier]:
    """A one-item backlog and the program of the test's parameter."""
    yield from _tier(request, templates, tmp_path, monkeypatch, "real-agents-one", _one_item)


@pytest.fixture
def tier3(request: pytest.FixtureRequest, templates: Templates, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[Tier]:
    """A three-item backlog and the program of the test's parameter."""
    yield from _tier(request, templates, tmp_path, monkeypatch, "real-agents-three",
                     _three_items)


def _stamp(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _minute_end(moment: datetime) -> datetime:
    """When the minute of ``moment`` has ended (a time told to the minute)."""
    return moment.replace(second=0, microsecond=0) + timedelta(minutes=1)


# --- the signals --------------------------------------------------------------------------------


@pytest.mark.parametrize("tier3", EACH + GEMINI + QWEN + COPILOT, indirect=True)
def test_done_after_a_tool_call_then_blocked_then_needs_human(tier3: Tier) -> None:
    tier3.server.script(
        Shell("printf 'hello from the model\\n' > forge_out.txt"),
        Say(f"I wrote forge_out.txt with the greeting.\n\n{DONE}", Usage(1000, 50, 100)),
        Say("I would have printed FORGE_DONE once the migration ran, but it cannot run "
            "here.\n\nFORGE_BLOCKED: the test database is not reachable"),
        Say("The item needs a choice I cannot make alone.\n\n"
            "FORGE_NEEDS_HUMAN: which database?"))
    result = tier3.run()
    assert result.returncode == 5, result.stderr
    items = tier3.items()
    assert items["001"]["status"] == "done"
    assert (items["002"]["status"], items["002"]["blockedReason"]) == (
        "blocked", "the test database is not reachable")
    assert items["003"]["needsHuman"] and items["003"]["blockedReason"] == "which database?"
    # The program ran the command: its file is in the item's commit.
    added = git("log", "--format=%s", "--diff-filter=A", "--", "forge_out.txt", cwd=tier3.root)
    assert added == "[forge] 001: Write the greeting\n"
    assert (tier3.root / "forge_out.txt").read_text() == "hello from the model\n"
    assert tier3.server.left() == 0 and tier3.server.unscripted == 0
    first = tier3.receipts()[0]
    assert first["sessionId"]
    if not PROFILES[tier3.program.name].costs:  # tokens at most, never an invented price
        assert first["costUsd"] is None
    if tier3.program.name == "gemini":
        assert first["tokens"]["output"] >= 50 and first["tokens"]["cached"] == 100


# --- usage limits -------------------------------------------------------------------------------


@pytest.mark.parametrize("tier", EACH, indirect=True)
def test_a_limit_is_waited_out_then_the_session_resumes(tier: Tier) -> None:
    # Claude Code says when its limit lifts, to the second, in its rate-limit event.
    # Codex says it to the minute, and this test would wait up to a minute: its limit
    # here gives no time, and the loop waits loop.limitWait (0.02 min) instead.
    tier.configure("loop:\n  limitWait: 0.02\n")
    tier.server.script(Limit(after=4 if tier.program.name == "claude" else None),
                       Say(f"Done after the wait.\n\n{DONE}"))
    result = tier.run()
    assert result.returncode == 0, result.stderr
    assert tier.items()["001"]["status"] == "done"
    wait = tier.events("usage_limit_wait")[0]
    until = _stamp(wait["until"])
    resets = tier.server.model_requests()[0].resets_at
    if resets is not None:
        assert until == datetime.fromtimestamp(resets, UTC)
    else:
        assert "no time given: waiting loop.limitWait, 1.2 seconds" in wait["reason"]
    assert _stamp(tier.events("llm_spawned")[1]["timestamp"]) >= until
    first, second = tier.receipts()
    assert second["resumed"] == first["sessionId"] is not None
    assert tier.server.left() == 0 and tier.server.unscripted == 0


@pytest.mark.parametrize("when", ["same-minute", "later-today", "another-day"])
@pytest.mark.parametrize("tier", EACH, indirect=True)
def test_on_limit_stop_says_when_the_limit_lifts(tier: Tier, when: str) -> None:
    now = int(datetime.now(UTC).timestamp())
    # The same minute: the limit lifts as the program is told (so its time has passed
    # when it says it). Later: half a minute past a whole minute, so that the time told
    # to the minute comes before it.
    tier.server.script({"same-minute": Limit(after=0),
                        "later-today": Limit(now - now % 60 + 2 * 3600 + 30),
                        "another-day": Limit(now - now % 60 + 2 * 86400 + 30)}[when])
    result = tier.run("--on-limit", "stop", "--retries", "0")
    finished = datetime.now(UTC)
    assert result.returncode == 4, result.stderr
    until = _stamp(tier.state()["waitingUntil"])
    resets = tier.server.model_requests()[0].resets_at
    assert resets is not None
    lifts = datetime.fromtimestamp(resets, UTC)
    # Told to the minute, a time means that minute's end; one that has passed, now.
    assert lifts <= until <= max(_minute_end(lifts), finished)
    assert "come back then" in result.stderr
    assert tier.items()["001"]["status"] == "pending"
    assert len(tier.server.model_requests()) == 1


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("tier", EACH, indirect=True)
def test_a_rejected_credential_trips_the_breaker(tier: Tier) -> None:
    tier.server.script(Fail(401), Fail(401))
    backlog = tier.root / ".forge" / "backlog.json"
    before, head = backlog.read_bytes(), git("rev-parse", "HEAD", cwd=tier.root)
    result = tier.run("--max-consecutive-failures", "2")
    assert result.returncode == 1, result.stderr
    assert "failed 2 times in a row the same way (exit 1: not logged in)" in result.stderr
    assert len(tier.receipts()) == 2
    assert backlog.read_bytes() == before
    assert git("rev-parse", "HEAD", cwd=tier.root) == head
    assert tier.events("circuit_breaker")[0]["signature"] == "exit 1: not logged in"


@pytest.mark.parametrize(("tier3", "status"),
                         _params("claude", CLAUDES[:1], 500) + _params("claude", CLAUDES[:1], 529)
                         + _params("codex", CODEXES[:1], 500), indirect=["tier3"])
def test_a_server_error_is_a_failure_never_a_limit(tier3: Tier, status: int) -> None:
    tier3.server.script(Fail(status), Fail(status))
    # A server error taken for a limit stops the run at once here, instead of waiting.
    # Taken as a failure, each item's is deferred, and the same failure on a second
    # item trips the breaker (it is about the agent, not one item).
    result = tier3.run("--on-limit", "stop", "--max-consecutive-failures", "2",
                       "--retries", "0")
    assert not tier3.events("usage_limit_wait") and tier3.state()["waitingUntil"] is None
    assert result.returncode == 1, result.stderr
    assert "failed 2 times in a row the same way" in result.stderr
    assert len(tier3.receipts()) == 2
    items = tier3.items()
    assert [items[i]["status"] for i in ("001", "002", "003")] == ["pending"] * 3


@pytest.mark.parametrize("tier", _params("claude", CLAUDES), indirect=True)
def test_an_api_key_out_of_credit_stops_the_run(tier: Tier) -> None:
    # "Credit balance is too low" comes with status 400: no retry or wait lifts it.
    del tier.env["CLAUDE_CODE_OAUTH_TOKEN"]
    tier.env["ANTHROPIC_API_KEY"] = "sk-ant-forge-test"
    tier.server.script(Fail(400))
    result = tier.run()
    assert result.returncode == 4, result.stderr
    assert ("the agent's usage limit is not lifted by waiting (Credit balance is too low)"
            in result.stderr)
    assert len(tier.receipts()) == 1 and tier.items()["001"]["status"] == "pending"
    assert tier.events("usage_limit_stop")


# --- backstops ----------------------------------------------------------------------------------


@pytest.mark.parametrize("backstop", ["--idle-timeout", "--timeout"])
@pytest.mark.parametrize("tier", EACH, indirect=True)
def test_a_hung_model_is_ended_and_the_retry_resumes(tier: Tier, backstop: str) -> None:
    tier.server.script(Hang(60), Say(f"Done on the retry.\n\n{DONE}"))
    deadline = waiting.Deadline(60)
    # 6 s without a word, 9 s in all: the retry, resumed, starts and answers within it.
    result = tier.run(backstop, {"--idle-timeout": "0.1", "--timeout": "0.15"}[backstop])
    assert result.returncode == 0, result.stderr
    assert not deadline.passed
    assert tier.items()["001"]["status"] == "done"
    first, second = tier.events("llm_exited")
    assert first["state"] == ("timed_out" if backstop == "--timeout" else "terminated")
    assert second["receipt"]["resumed"] == first["receipt"]["sessionId"] is not None
    assert tier.server.left() == 0 and tier.server.unscripted == 0


# --- receipts and costs -------------------------------------------------------------------------


@pytest.mark.parametrize("tier", EVERY, indirect=True)
def test_receipts_across_a_resumed_retry_say_what_each_attempt_was_served(
        tier: Tier) -> None:
    usage = Usage(input=1200, output=80, cache_read=300, cache_write=100)
    tier.server.script(Say("I looked at it; not finished yet.", usage),
                       Say(f"Finished.\n\n{DONE}", usage))
    result = tier.run()
    assert result.returncode == 0, result.stderr
    first, second = tier.receipts()
    assert second["resumed"] == first["sessionId"] is not None
    assert first["tokens"] == second["tokens"] == tier.tokens(usage)
    if tier.program.name == "claude":
        assert first["costUsd"] > 0
        assert second["costUsd"] == pytest.approx(first["costUsd"])
    spent = json.loads(tier.forge("status", "--json").stdout)["costs"]["items"]["001"]
    assert spent["attempts"] == 2 and spent["tokens"] == tier.tokens(tier.server.served())


@pytest.mark.parametrize("tier3", _params("claude", CLAUDES), indirect=True)
def test_max_cost_counts_what_each_attempt_cost(tier3: Tier) -> None:
    usage = Usage(input=20000, output=1000)
    # What one attempt costs, as the program prices it: a fresh attempt's receipt.
    tier3.server.script(Say("Not finished.", usage))
    assert tier3.run("--iterations", "1").returncode == 0
    cost = tier3.receipts()[0]["costUsd"]
    assert cost > 0
    # 001 fresh, 001 resumed and done, 002 done: three attempts reach 2.5 of them.
    tier3.server.script(Say("Still not finished.", usage), Say(DONE, usage), Say(DONE, usage))
    result = tier3.run("--max-cost", f"{2.5 * cost:.6f}", "--retries", "3")
    assert result.returncode == 4, result.stderr
    items = tier3.items()
    assert [items[i]["status"] for i in ("001", "002", "003")] == ["done", "done", "pending"]
    assert tier3.events("max_cost_reached")[-1]["costUsd"] == pytest.approx(3 * cost)


# --- the user's flags ---------------------------------------------------------------------------


@pytest.mark.parametrize("tier", EACH, indirect=True)
def test_the_users_flags_reach_a_resumed_retry(tier: Tier) -> None:
    if tier.program.name == "codex":
        model = "gpt-forge-test"
        flags: tuple[str, ...] = ("--sandbox", "workspace-write", "--model", model)
    else:
        model = "claude-forge-test"
        flags = ("--model", model)
    tier.server.script(Say("Not finished yet."), Say(f"Finished.\n\n{DONE}"))
    result = tier.run(*(f"--agent-arg={flag}" for flag in flags))
    assert result.returncode == 0, result.stderr
    assert tier.items()["001"]["status"] == "done"
    receipts = tier.receipts()
    assert [receipt["exitCode"] for receipt in receipts] == [0, 0]
    assert receipts[1]["resumed"] == receipts[0]["sessionId"] is not None
    assert all(flag in tier.events("llm_spawned")[1]["command"] for flag in flags)
    assert [each.body["model"] for each in tier.server.model_requests()] == [model] * 2


@pytest.mark.parametrize("tier", _params("codex", CODEXES[:1]), indirect=True)
def test_a_flag_the_program_refuses_stops_the_run_at_once(tier: Tier) -> None:
    backlog = tier.root / ".forge" / "backlog.json"
    before = backlog.read_bytes()
    result = tier.run("--agent-arg=--full-auto")  # gone from Codex: clap refuses it
    assert result.returncode == 2, result.stderr
    assert ("the agent refused its command line (error: unexpected argument '--full-auto' "
            "found)") in result.stderr
    assert len(tier.events("llm_spawned")) == 1 and not tier.server.model_requests()
    assert backlog.read_bytes() == before


# --- words carried elsewhere --------------------------------------------------------------------


@pytest.mark.parametrize("tier", _params("claude", CLAUDES[:1]), indirect=True)
def test_an_api_keys_rate_limit_waits_then_the_session_resumes(tier: Tier) -> None:
    # With an API key there is no rate_limit_event: "API Error: Request rejected (429) ·
    # … Please try again later." is a limit with no time, waited loop.limitWait.
    del tier.env["CLAUDE_CODE_OAUTH_TOKEN"]
    tier.env["ANTHROPIC_API_KEY"] = "sk-ant-forge-test"
    tier.configure("loop:\n  limitWait: 0.02\n")
    tier.server.script(Fail(429), Fail(429), Say(f"Done after the wait.\n\n{DONE}"))
    result = tier.run()
    assert result.returncode == 0, result.stderr
    assert tier.items()["001"]["status"] == "done"
    wait = tier.events("usage_limit_wait")[0]
    assert "no time given: waiting loop.limitWait, 1.2 seconds" in wait["reason"]
    assert "(429)" in wait["reason"]
    assert tier.server.left() == 0


@pytest.mark.parametrize("tier", _params("claude", CLAUDES[:1]), indirect=True)
def test_the_turn_limit_is_quoted_from_its_errors(tier: Tier) -> None:
    tier.server.script(Shell("printf 'half\\n' > forge_out.txt"))
    result = tier.run("--agent-arg=--max-turns", "--agent-arg=1", "--retries", "0")
    assert result.returncode == 5, result.stderr
    item = tier.items()["001"]
    assert item["deferred"]
    assert item["blockedReason"].startswith("exit 1: Reached maximum number of turns (1)")


# --- the version `git forge agents` reads -------------------------------------------------------


def _installed(program: Program) -> bool:
    """Found under an npm prefix (the versions ``.ci/run`` installs), not on PATH."""
    return any(program.path.is_relative_to(prefix)
               for prefix in os.environ.get(PREFIX_VARIABLE, "").split(os.pathsep) if prefix)


@pytest.mark.parametrize("program", _params("claude", CLAUDES) + _params("codex", CODEXES))
def test_agents_reads_the_programs_version(program: Program, tmp_path: Path) -> None:
    """Each program's own ``--version`` reads as its version, and one this tier
    installs is inside the range git-forge says it was verified with."""
    env = {"PATH": f"{program.path.parent}{os.pathsep}{os.environ['PATH']}"}
    listed = run_forge("agents", "--json", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    entry = next(each for each in json.loads(listed.stdout) if each["name"] == program.name)
    assert entry["version"] == program.version
    if _installed(program):
        assert entry["versionStatus"] == "verified", (
            f"{program.id} is installed for this tier but outside {entry['verified']}: "
            "widen git_forge.agents.profiles.VERIFIED once the tier passes with it")


# --- the sandbox --------------------------------------------------------------------------------


@pytest.mark.skipif(sandbox_problem() is not None, reason=f"{sandbox_problem()}")
@pytest.mark.parametrize("tier", EACH, indirect=True)
def test_a_sandboxed_program_writes_its_tree_and_nothing_else(tier: Tier) -> None:
    outside = tier.root.parent / "outside.txt"
    backlog = tier.root / ".forge" / "backlog.json"
    planted = Path(os.environ["HOME"]) / "planted.txt"
    before = backlog.read_bytes()
    tier.server.script(
        Shell(f"printf 'hello\\n' > forge_out.txt; printf 'x' > {outside}; "
              f"printf 'x' >> {backlog}; printf 'x' > {planted}; "
              "printf 'x' > /tmp/private.txt"),
        Say(f"I wrote forge_out.txt.\n\n{DONE}"))
    flags: tuple[str, ...] = ()
    if tier.program.name == "claude":  # a loop runs it with its permission prompts off
        flags = ("--agent-arg=--permission-mode", "--agent-arg=bypassPermissions")
        tier.env["IS_SANDBOX"] = "1"  # it refuses bypassPermissions to root without it
    result = tier.run("--sandbox", "bwrap", *flags)
    assert result.returncode == 0, result.stderr
    assert tier.items()["001"]["status"] == "done"
    added = git("log", "--format=%s", "--diff-filter=A", "--", "forge_out.txt", cwd=tier.root)
    assert added == "[forge] 001: Write the greeting\n"
    assert not outside.exists() and not planted.exists()
    assert backlog.read_bytes() != before  # the loop's own marks, never the agent's "x"
    assert not backlog.read_bytes().endswith(b"x")
    (manifest,) = [json.loads(path.read_text()) for path in
                   (tier.root / ".forge" / "proc").glob("*.manifest.json")]
    assert manifest["command"]["sandbox"]["writable"][0] == str(tier.root.resolve())
    assert tier.state()["sandbox"] == "bwrap"


@pytest.mark.skipif(sandbox_problem() is not None, reason=f"{sandbox_problem()}")
@pytest.mark.parametrize("tier", _params("claude", CLAUDES[:1]), indirect=True)
def test_claude_codes_own_sandbox_runs_inside_the_loops(tier: Tier) -> None:
    # Claude Code's sandbox (bubblewrap too, on Linux) nests inside git-forge's.
    settings = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"sandbox": {"enabled": True,
                                                "autoAllowBashIfSandboxed": True}}))
    tier.server.script(Shell("printf 'hello\\n' > forge_out.txt"),
                       Say(f"I wrote forge_out.txt.\n\n{DONE}"))
    result = tier.run("--sandbox", "bwrap")
    assert result.returncode == 0, result.stderr
    assert tier.items()["001"]["status"] == "done"
    assert (tier.root / "forge_out.txt").read_text() == "hello\n"
    assert git("log", "-1", "--format=%s", "--", "forge_out.txt", cwd=tier.root) == (
        "[forge] 001: Write the greeting\n")



# --- Gemini CLI ---------------------------------------------------------------------------------

@pytest.mark.parametrize("tier", GEMINI, indirect=True)
def test_geminis_quota_is_waited_out_then_the_session_resumes(tier: Tier) -> None:
    tier.configure("loop:\n  limitWait: 0.02\n")
    tier.server.script(Say("Working on it."), Limit(), Say(f"Finished.\n\n{DONE}"))
    result = tier.run("--retries", "2")
    assert result.returncode == 0, result.stderr
    assert tier.items()["001"]["status"] == "done"
    (wait,) = tier.events("usage_limit_wait")
    assert "quota" in wait["reason"]
    receipts = tier.receipts()
    assert [receipt["exitCode"] for receipt in receipts][-2:] == [173, 0]  # 429 & 0xFF
    assert receipts[-1]["resumed"] == receipts[0]["sessionId"] is not None


@pytest.mark.parametrize("tier", GEMINI, indirect=True)
def test_a_refused_gemini_key_stops_the_run_as_not_logged_in(tier: Tier) -> None:
    tier.server.script(*[Fail(401)] * 3)
    result = tier.run("--retries", "5")
    assert result.returncode == 1, result.stderr
    assert "exit 145: not logged in" in result.stderr
    assert tier.items()["001"]["status"] == "pending"



# --- Qwen Code ----------------------------------------------------------------------------------

@pytest.mark.parametrize("tier", _params("qwen", QWENS), indirect=True)
def test_a_resumed_qwen_session_records_what_each_attempt_added(tier: Tier) -> None:
    tier.server.script(Say("Not finished yet.", Usage(1000, 50)),
                       Say(f"Finished.\n\n{DONE}", Usage(1200, 60)))
    result = tier.run()
    assert result.returncode == 0, result.stderr
    first, second = tier.receipts()
    assert second["resumed"] == first["sessionId"] is not None
    # its result.usage on resume is the whole session's: the receipt keeps what was added
    assert first["tokens"]["output"] >= 50
    assert 60 <= second["tokens"]["output"] < first["tokens"]["output"] + 60


@pytest.mark.parametrize("tier", _params("qwen", QWENS), indirect=True)
def test_a_refused_qwen_key_is_not_logged_in_though_it_exits_0(tier: Tier) -> None:
    # 0.15 ends a refused key with exit 0 and a result that is no error; 0.24 with exit 1
    tier.server.script(*[Fail(401)] * 3)
    result = tier.run("--retries", "5")
    assert result.returncode == 1, result.stderr
    assert "not logged in" in result.stderr
    assert tier.items()["001"]["status"] == "pending"



# --- Copilot CLI --------------------------------------------------------------------------------

@pytest.mark.parametrize("tier", COPILOT, indirect=True)
def test_a_copilot_retry_resumes_its_session(tier: Tier) -> None:
    tier.server.script(Say("Not finished yet."), Say(f"Finished.\n\n{DONE}"))
    result = tier.run()
    assert result.returncode == 0, result.stderr
    first, second = tier.receipts()
    assert second["resumed"] == first["sessionId"] is not None
    assert second["sessionId"] == first["sessionId"]


@pytest.mark.parametrize("tier", COPILOT + OPENCODE, indirect=True)
def test_a_refused_copilot_key_is_not_logged_in(tier: Tier) -> None:
    tier.server.script(*[Fail(401)] * 9)
    result = tier.run("--retries", "5")
    assert result.returncode == 1, result.stderr
    assert "not logged in" in result.stderr



# --- OpenCode -----------------------------------------------------------------------------------

@pytest.mark.parametrize("tier3", OPENCODE, indirect=True)
def test_opencode_done_after_a_tool_call_and_a_resumed_retry_then_needs_human(
        tier3: Tier) -> None:
    # one run: each OpenCode start takes seconds (it installs its plugin as it starts)
    tier3.server.script(Shell("printf 'hello from the model\\n' > forge_out.txt"),
                        Say("Not finished yet.", Usage(1000, 50)),
                        Say(f"I wrote forge_out.txt with the greeting.\n\n{DONE}",
                            Usage(1000, 50)),
                        Say("The item needs a choice.\n\nFORGE_NEEDS_HUMAN: which database?"))
    result = tier3.run("--iterations", "3")
    assert result.returncode == 0, result.stderr
    items = tier3.items()
    assert items["001"]["status"] == "done"
    assert items["002"]["needsHuman"] and items["002"]["blockedReason"] == "which database?"
    assert (tier3.root / "forge_out.txt").read_text() == "hello from the model\n"
    first, second, _ = tier3.receipts()
    assert first["sessionId"].startswith("ses_") and second["resumed"] == first["sessionId"]
    # its cost is its own, by the prices in its config: $3 / $15 per million tokens
    assert second["costUsd"] == pytest.approx((1000 * 3 + 50 * 15) / 1e6, rel=0.05)


@pytest.mark.parametrize("tier", COPILOT + OPENCODE, indirect=True)
def test_a_rate_limit_after_the_programs_own_retries_is_waited_out(tier: Tier) -> None:
    # Copilot CLI and OpenCode retry a 429 five times by themselves (honouring the
    # server's Retry-After, here at once), then report it: the loop waits and resumes
    tier.configure("loop:\n  limitWait: 0.02\n")
    tier.server.script(Limit(), Say(f"Finished.\n\n{DONE}"))
    result = tier.run("--retries", "2")
    assert result.returncode == 0, result.stderr
    assert tier.items()["001"]["status"] == "done"
    (wait,) = tier.events("usage_limit_wait")
    assert "Rate limit reached" in wait["reason"]  # "try again in 1s": its own time
    receipts = tier.receipts()
    assert receipts[-1]["resumed"] == receipts[0]["sessionId"] is not None


@pytest.mark.parametrize("tier", QWEN, indirect=True)
def test_qwens_own_minutes_of_429_retries_are_bounded_by_the_timeout(tier: Tier) -> None:
    # Qwen Code retries a 429 by itself for minutes and reports nothing meanwhile (0.15)
    # or only its retries (0.24): the attempt's --timeout bounds it, and the item is
    # deferred as any attempt cut off is
    tier.server.script(*[Limit()] * 200)
    result = tier.run("--timeout", "0.1", "--retries", "0")
    assert result.returncode == 5, result.stderr
    item = tier.items()["001"]
    assert item["deferred"] and "timed out after 6 seconds" in item["blockedReason"]
    (exited,) = tier.events("llm_exited")
    assert exited["state"] == "timed_out"
    assert len(tier.server.model_requests()) >= 2  # it was retrying on its own
