"""Fake ``claude`` and ``codex`` executables: Python scripts written into a
directory the tests put first on PATH, printing what the real CLIs print, line
for line (``agent_streams``), with no network.

What each start does comes from a plan (``FAKE_AGENT_PLAN``, a JSON file):
``{item id: step or [step per attempt]}``, the last step repeating. A step is
``{"do": …}``, whose work — ``files`` written, ``append`` (name → text) added
to the end of files — is done first, with:

* ``done`` — a result whose text ends with ``signal``
  (default ``FORGE_DONE``); ``cost``/``tokens`` for the receipt; ``exit`` (Codex
  may exit non-zero after a completed turn);
* ``is_error`` — Claude's exit-0 trap: a result with ``is_error: true`` and
  ``text`` (``API Error: Rate limit reached``);
* ``rejected`` — Claude: a ``rate_limit_event`` with ``status: rejected`` and
  ``resetsAt`` ``resets_in`` seconds from now, then the limit's error result, exit 1;
* ``limit_text`` — the limit as plain text (``message``), exit 1 (Codex: an
  ``error`` event and ``turn.failed``);
* ``admin_disabled`` — ``Your usage allocation has been disabled by your admin``;
* ``not_logged_in`` — Claude's ``Not logged in · Please run /login`` error
  result (exit 1); Codex's 401 on stderr;
* ``hang`` — the init line, then silence for ``seconds``;
* ``silent_then_done`` — nothing at all for ``seconds``, then ``done``.

Every start is logged as ``{item}-{n}.json`` in ``FAKE_AGENT_LOG``: its argv and
the prompt it read on stdin.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

_COMMON = r'''
import json, os, pathlib, sys, time
sys.path.insert(0, {tests!r})
import agent_streams as S

NAME = {name!r}
argv = sys.argv[1:]
if argv == ["--version"]:
    print({version!r})
    sys.exit(0)
log = pathlib.Path(os.environ["FAKE_AGENT_LOG"])
log.mkdir(parents=True, exist_ok=True)
item = os.environ.get("FORGE_ITEM_ID", "none")
attempt = len(list(log.glob(f"{{item}}-*.json")))
plan = json.loads(pathlib.Path(os.environ["FAKE_AGENT_PLAN"]).read_text())
step = plan.get(item, {{"do": "done"}})
if isinstance(step, list):
    step = step[min(attempt, len(step) - 1)]
prompt = sys.stdin.read()
# Written aside and renamed, so a test polling the log never reads half a start.
written = log / f".{{item}}-{{attempt}}.partial"
written.write_text(json.dumps({{"argv": [NAME, *argv], "prompt": prompt}}))
os.replace(written, log / f"{{item}}-{{attempt}}.json")


def out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def work():
    for name, content in step.get("files", {{}}).items():
        path = pathlib.Path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    for name, content in step.get("append", {{}}).items():
        with open(name, "a") as appended:
            appended.write(content)
'''

CLAUDE = _COMMON + r'''
if "-p" not in argv and "--print" not in argv:
    sys.stderr.write("fake claude: interactive mode is not faked\n")
    sys.exit(2)
if "stream-json" in argv and "--verbose" not in argv:
    sys.stderr.write("Error: When using --print, --output-format=stream-json requires "
                     "--verbose\n")
    sys.exit(1)
# commander.js: ``--resume ID`` or ``--resume=ID`` (the value after ``=`` whatever it is)
resumed = next((arg.split("=", 1)[1] for arg in argv if arg.startswith("--resume=")),
               argv[argv.index("--resume") + 1] if "--resume" in argv else None)
session = step.get("session") or f"sess-{{item}}-{{attempt}}"  # a resumed session's id changes
do = step.get("do", "done")
if do == "silent_then_done":
    time.sleep(step.get("seconds", 1))
    do = "done"
out(S.claude_init(session))
work()
if do == "done":
    out(S.claude_assistant(session, step.get("say", "Working on it.")))
    out(S.claude_tool_use(session))
    out(S.claude_rate_limit(session, "allowed", int(time.time()) + 3600))
    text = step.get("text", "All done.") + "\n" + step.get("signal", "FORGE_DONE")
    tokens = step.get("tokens")
    out(S.claude_result(session, text, cost=step.get("cost", 0.0123), turns=step.get("turns", 3),
                        usage=tokens))
    sys.exit(step.get("exit", 0))
if do == "is_error":
    out(S.claude_assistant(session, step.get("text", "API Error: Rate limit reached")))
    out(S.claude_result(session, step.get("text", "API Error: Rate limit reached"),
                        is_error=True, cost=step.get("cost", 0.0), turns=1))
    sys.exit(0)
if do == "rejected":
    resets = int(time.time() + step.get("resets_in", 2))
    out(S.claude_rate_limit(session, "rejected", resets, step.get("kind", "five_hour")))
    out(S.claude_result(session, f"Claude AI usage limit reached|{{resets}}", is_error=True,
                        cost=0.0, turns=1))
    sys.exit(1)
if do == "limit_text":
    out(step.get("message", "You've hit your limit · resets 1pm (Europe/Lisbon)"))
    sys.exit(1)
if do == "admin_disabled":
    out("Your usage allocation has been disabled by your admin")
    sys.exit(1)
if do == "not_logged_in":  # as Claude Code 2.1 writes it with no credentials at all
    out(S.claude_assistant(session, "Not logged in · Please run /login",
                           error="authentication_failed"))
    out(S.claude_result(session, "Not logged in · Please run /login", is_error=True,
                        cost=0, turns=1, usage={{"input_tokens": 0, "output_tokens": 0}}))
    sys.exit(1)
if do == "hang":
    time.sleep(step.get("seconds", 600))
    sys.exit(0)
sys.stderr.write(f"fake claude: unknown step {{do}}\n")
sys.exit(3)
'''

CODEX = _COMMON + r'''
if argv[:1] != ["exec"] or "--json" not in argv or argv[-1] != "-":
    sys.stderr.write("fake codex: only `codex exec --json [flags] [resume ID] -` is faked\n")
    sys.exit(2)


def usage_error(flag, usage):  # clap's words and exit code, as codex-cli 0.171.0 writes them
    sys.stderr.write(f"error: unexpected argument '{{flag}}' found\n\n  tip: to pass "
                     f"'{{flag}}' as a value, use '-- {{flag}}'\n\nUsage: {{usage}}\n\n"
                     "For more information, try '--help'.\n")
    sys.exit(2)


if "--full-auto" in argv:  # gone from codex-cli 0.171.0
    usage_error("--full-auto", "codex exec [OPTIONS] [PROMPT]")
resumed = None
if "resume" in argv:  # `exec resume ID` takes none of exec's flags after it
    at = argv.index("resume")
    resumed = argv[at + 1]
    extra = [arg for arg in argv[at + 2:-1] if arg != "--json"]
    if extra:
        usage_error(extra[0], "codex exec resume <SESSION_ID> [PROMPT]")
# a resumed thread keeps its id
thread = resumed or step.get("thread") or f"th-{{item}}-{{attempt}}"
do = step.get("do", "done")
if do == "silent_then_done":
    time.sleep(step.get("seconds", 1))
    do = "done"
out(S.codex_thread(thread))
out(S.codex_turn_started())
work()
if do == "done":
    out(S.codex_command("pytest -q"))
    out(S.codex_message(step.get("say", "Looking at the tests."), "item_1"))
    out(S.codex_message(step.get("text", "Done.") + "\n" + step.get("signal", "FORGE_DONE"),
                        "item_2"))
    tokens = step.get("tokens") or {{}}
    out(S.codex_turn_completed(tokens.get("input", 9000), tokens.get("cached", 6000),
                               tokens.get("output", 800)))
    sys.exit(step.get("exit", 0))
if do == "limit_text":
    message = step.get("message", "You've hit your usage limit. Try again in 2 seconds.")
    out(S.codex_error(message))
    out(S.codex_turn_failed(message))
    sys.exit(1)
if do == "admin_disabled":
    message = "Your usage allocation has been disabled by your admin"
    out(S.codex_error(message))
    out(S.codex_turn_failed(message))
    sys.exit(1)
if do == "not_logged_in":
    message = "unexpected status 401 Unauthorized: Missing bearer authentication in header"
    out(S.codex_error(message))
    sys.stderr.write(f"ERROR: {{message}}\n")
    sys.exit(1)
if do == "hang":
    time.sleep(step.get("seconds", 600))
    sys.exit(0)
sys.stderr.write(f"fake codex: unknown step {{do}}\n")
sys.exit(3)
'''

VERSIONS = {"claude": "2.0.31 (Claude Code)", "codex": "codex-cli 0.46.0"}


def install_fakes(bin_dir: Path, names: tuple[str, ...] = ("claude", "codex")) -> Path:
    """Write the fakes into ``bin_dir`` (made if missing), executable; ``bin_dir``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        body = (CLAUDE if name == "claude" else CODEX).format(
            tests=str(TESTS), name=name, version=VERSIONS[name])
        path = bin_dir / name
        path.write_text(f"#!{sys.executable}\n{body}")
        path.chmod(0o755)
    return bin_dir


class FakeAgents:
    """The fakes on PATH with a plan and a log: ``plan({...})``, ``starts(item)``."""

    def __init__(self, root: Path) -> None:
        self.bin = install_fakes(root / "bin")
        self.plan_file = root / "fake-plan.json"
        self.log = root / "fake-log"
        self.plan({})

    def plan(self, plan: dict) -> None:
        self.plan_file.write_text(json.dumps(plan))

    @property
    def env(self) -> dict[str, str]:
        return {"PATH": f"{self.bin}{os.pathsep}{os.environ['PATH']}",
                "FAKE_AGENT_PLAN": str(self.plan_file), "FAKE_AGENT_LOG": str(self.log)}

    def starts(self, item_id: str) -> list[dict]:
        """Each start of an agent on ``item_id``, in order: ``{argv, prompt}``."""
        found = sorted(self.log.glob(f"{item_id}-*.json"),
                       key=lambda path: int(path.stem.rsplit("-", 1)[1]))
        return [json.loads(path.read_text()) for path in found]
