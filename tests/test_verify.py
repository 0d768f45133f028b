"""Verification gates end to end: ``loop run --verify CMD`` / ``loop.verify`` run the
project's own checks after an agent says done and before anything is committed.

Real repositories (a tiny ``calc`` project with its pytest suite), the real installed
``git forge``, real agents (a small Python program whose behaviour each test picks
through the environment) and real gates: ``python -m pytest`` writing a real JUnit XML
report, or a small script of the test's. What a report means is ``test_gates.py``'s;
here, what the loop does with it: the baseline, the retry with the failure in the
prompt, the deferral, the parallel run's worktrees, a gate that hangs, floods or
outlives a SIGKILLed loop, ``--no-verify`` and a refused configuration.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
import waiting
from builders import init_repository
from helpers import abandoned, forge_argv, git, run_forge, snapshot
from templates import Templates
from waiting import gone, wait_for

CALC = "def add(a, b):\n    return a + b\n"
TEST_CALC = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
#: A test red before any item (the baseline's).
TEST_OLD = 'def test_old_red():\n    assert "old" == "new"\n'
#: A test that fails the second time it runs, and only then: the run counts in a file
#: outside the repository (``FLAKY_COUNTER``, from the run's environment).
TEST_FLAKY = '''import os
import pathlib


def test_sometimes():
    counter = pathlib.Path(os.environ["FLAKY_COUNTER"])
    runs = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(runs))
    assert runs != 2, f"flaked on run {runs}"
'''
FIXED_CALC = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
BROKEN_CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TEST_MUL = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
WORDS = "def shout(text):\n    return text.upper()\n"
TEST_WORDS = "from words import shout\n\n\ndef test_shout():\n    assert shout('a') == 'A'\n"

#: The agent. ``VERIFY_TEST_MODE`` says what it does:
#: feature: adds ``mul`` and its passing test; break: breaks ``add`` (and adds ``mul``);
#: fix-on-retry: breaks ``add`` unless its prompt says which test failed, then fixes it;
#: flag: writes ``feature.txt`` (the gates of the test look for it);
#: parallel: item 001 fix-on-retry, any other adds ``words`` and its passing test.
#: Every prompt is recorded (with ``calc.py`` as the attempt found it) in ``VERIFY_TEST_LOG``.
AGENT = f'''
import json, os, pathlib, sys
prompt = sys.stdin.read()
item = os.environ["FORGE_ITEM_ID"]
mode = os.environ["VERIFY_TEST_MODE"]
calc = pathlib.Path("calc.py")
with open(os.environ["VERIFY_TEST_LOG"], "a") as log:
    log.write(json.dumps({{"item": item, "cwd": os.getcwd(), "prompt": prompt,
                          "calc": calc.read_text() if calc.exists() else None}}) + "\\n")
if mode == "parallel":
    mode = "fix-on-retry" if item == "001" else "words"
if mode == "feature":
    calc.write_text({FIXED_CALC!r})
    pathlib.Path("test_mul.py").write_text({TEST_MUL!r})
elif mode == "break":
    calc.write_text({BROKEN_CALC!r})
elif mode == "fix-on-retry":
    told = "First failing test:" in prompt
    calc.write_text({FIXED_CALC!r} if told else {BROKEN_CALC!r})
elif mode == "words":
    pathlib.Path("words.py").write_text({WORDS!r})
    pathlib.Path("test_words.py").write_text({TEST_WORDS!r})
elif mode == "flag":
    pathlib.Path("feature.txt").write_text("the work\\n")
print("FORGE_DONE")
'''

#: The project's checks: a real pytest writing its JUnit report where the run says.
PYTEST_GATE = f"{sys.executable} -m pytest -q -p no:cacheprovider --junitxml=" + "{report}"
SECTION = "## Your previous attempt did not pass the project's checks"

#: A gate that says where it ran (a line to ``CWD_LOG``) and passes.
CWD_GATE = '''import os
with open(os.environ["CWD_LOG"], "a") as log:
    log.write(os.getcwd() + "\\n")
'''
#: A gate that hangs, once it said its pid (a line to ``GATE_PIDS``).
HANG_GATE = '''import os, time
with open(os.environ["GATE_PIDS"], "a") as pids:
    pids.write(f"{os.getpid()}\\n")
time.sleep(600)
'''
#: A gate that passes on a tree without the agent's ``feature.txt`` (the baseline) and
#: on one with it prints 100 MB and fails.
FLOOD_GATE = '''import os, sys
if not os.path.exists("feature.txt"):
    sys.exit(0)
line = "x" * 1023 + "\\n"
for _ in range(100 * 1024):
    sys.stdout.write(line)
sys.stdout.flush()
sys.exit(1)
'''
#: A gate that passes on a tree without the agent's ``feature.txt``; on one with it, it
#: writes its pid to ``GATE_MARKER`` (whole, by a rename) and sleeps.
SLOW_GATE = '''import os, sys, time
if not os.path.exists("feature.txt"):
    sys.exit(0)
marker = os.environ["GATE_MARKER"]
with open(marker + ".part", "w") as out:
    out.write(str(os.getpid()))
os.replace(marker + ".part", marker)
time.sleep(600)
'''
#: Runs its command and writes the peak resident set size of the command and of
#: everything it waited for (kB) to the file named first.
PEAK_RSS = '''import resource, subprocess, sys
status = subprocess.run(sys.argv[2:]).returncode
with open(sys.argv[1], "w") as out:
    out.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(status)
'''


# -- the project ---------------------------------------------------------------------------

def build_calc(root: Path, titles: tuple[str, ...], files: dict[str, str]) -> None:
    """A repository holding the ``calc`` project (its suite green) and ``files``, with a
    committed backlog of one pending item per title."""
    init_repository(root)
    project_files = {"calc.py": CALC, "test_calc.py": TEST_CALC, "pytest.ini": "[pytest]\n",
                     ".gitignore": "__pycache__/\n.pytest_cache/\n", **files}
    for name, text in project_files.items():
        (root / name).write_text(text)
    assert run_forge("init", cwd=root).returncode == 0
    for title in titles:
        assert run_forge("backlog", "add", "--title", title, cwd=root).returncode == 0
    git("add", "-A", cwd=root)
    git("commit", "-qm", "calc project", cwd=root)


def calc_project(templates: Templates, tmp_path: Path, titles: tuple[str, ...] = ("Add mul",),
                 files: dict[str, str] | None = None, *, name: str = "calc") -> Path:
    return templates.copy(f"verify-{name}",
                          lambda root: build_calc(root, titles, files or {}),
                          tmp_path / "repo")


def configure(project: Path, loop_keys: dict[str, Any]) -> None:
    """``loop:`` keys added to the project's ``.forge.yaml`` and committed (JSON values
    are YAML)."""
    lines = "".join(f"  {key}: {json.dumps(value)}\n" for key, value in loop_keys.items())
    with (project / ".forge.yaml").open("a") as config:
        config.write("loop:\n" + lines)
    git("commit", "-qam", "configure the checks", cwd=project)


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    path = tmp_path / "agent.py"
    path.write_text(AGENT)
    return path


def script(tmp_path: Path, name: str, text: str) -> str:
    """A gate's command line: ``text`` saved as ``name`` beside the repository."""
    path = tmp_path / name
    path.write_text(text)
    return f"{sys.executable} {path}"


def loop(project: Path, agent: Path, tmp_path: Path, mode: str, *args: str,
         env: dict[str, str] | None = None,
         timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return run_forge("loop", "run", "--agent", f"{sys.executable} {agent}", *args, cwd=project,
                     env={"VERIFY_TEST_MODE": mode,
                          "VERIFY_TEST_LOG": str(tmp_path / "prompts.ndjson"), **(env or {})},
                     timeout=timeout)


def prompts(tmp_path: Path, item: str = "001") -> list[dict[str, Any]]:
    """What the agent recorded of each attempt at ``item``, in order."""
    log = tmp_path / "prompts.ndjson"
    records = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return [record for record in records if record["item"] == item]


def failure_section(prompt: str) -> str:
    """The prompt's section on the previous attempt's failed checks (up to the next)."""
    start = prompt.index(SECTION)
    end = prompt.find("\n## ", start + len(SECTION))
    return prompt[start:] if end < 0 else prompt[start:end]


def events(project: Path, *types: str) -> list[dict[str, Any]]:
    """The run's journal (of the given types, when any)."""
    lines = (project / ".forge" / "events.ndjson").read_text().splitlines()
    found = [json.loads(line) for line in lines]
    return [event for event in found if not types or event["type"] in types]


def backlog(project: Path) -> dict[str, dict[str, Any]]:
    items = json.loads((project / ".forge" / "backlog.json").read_text())["items"]
    return {entry["id"]: entry for entry in items}


def progress(result: subprocess.CompletedProcess[str], item: str = "001") -> list[str]:
    """The run's progress lines about ``item`` (``001 retry: …``, ``001 done: …``; not
    the backlog's summary at the end, ``001  deferred since …``)."""
    return [line.strip() for line in result.stdout.splitlines()
            if re.match(rf"{item} [a-z]", line.strip())]


def pytest_passes(project: Path, commit: str, tmp_path: Path) -> bool:
    """The project's suite passes on ``commit``'s tree (a fresh clone of it, checked out)."""
    clone = tmp_path / f"clone-{commit[:12]}"
    git("clone", "-q", "--no-checkout", str(project), str(clone), cwd=tmp_path)
    git("checkout", "-q", commit, cwd=clone)
    result = waiting.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                         cwd=clone, capture_output=True, text=True, timeout=60)
    return result.returncode == 0


def processes(project: Path) -> list[dict[str, Any]]:
    """``proc list --json``: the run's processes, agents' and gates'."""
    listed = run_forge("proc", "list", "--json", cwd=project)
    assert listed.returncode == 0, listed.stderr
    entries: list[dict[str, Any]] = json.loads(listed.stdout)
    return entries


def proc_states(project: Path) -> list[str]:
    return [entry["state"] for entry in processes(project)]


# -- serial runs -----------------------------------------------------------------------------

def test_a_passing_suite_commits_the_item_after_the_baseline_and_its_check(
        templates: Templates, tmp_path: Path, agent: Path) -> None:
    project = calc_project(templates, tmp_path)
    result = loop(project, agent, tmp_path, "feature", "--verify", PYTEST_GATE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert progress(result)[0].startswith("001 done: ")
    assert "already failing" not in result.stdout  # a green baseline says nothing
    assert backlog(project)["001"]["status"] == "done"
    assert git("log", "-1", "--format=%s", cwd=project).strip() == "[forge] 001: Add mul"
    assert git("show", "HEAD:calc.py", cwd=project) == FIXED_CALC
    assert "test_mul.py" in git("show", "--format=", "--name-only", "HEAD", cwd=project).split()
    assert git("status", "--porcelain", cwd=project) == ""  # the reports left nothing tracked

    journal = events(project)
    kinds = [event["type"] for event in journal]
    finished = [(n, e) for n, e in enumerate(journal) if e["type"] == "verify_finished"]
    assert [(e["itemId"], e["command"], e["passed"], e["exitCode"], e["failing"])
            for _, e in finished] == [(None, PYTEST_GATE, True, 0, 0),
                                      ("001", PYTEST_GATE, True, 0, 0)]
    assert all("reason" not in e for _, e in finished)
    completed = kinds.index("item_completed")
    assert finished[0][0] < kinds.index("item_selected") < finished[1][0] < completed
    assert journal[completed]["itemId"] == "001"
    # each check a supervised process of its own, its llm_* events naming the gate
    started = [e for e in journal if e["type"] == "verify_started"]
    assert [(e["itemId"], e["command"]) for e in started] == [(None, PYTEST_GATE),
                                                              ("001", PYTEST_GATE)]
    for gate in started:
        spawned = [e for e in journal if e["type"] == "llm_spawned"
                   and e["handle"] == gate["handle"]]
        exited = [e for e in journal if e["type"] == "llm_exited"
                  and e["handle"] == gate["handle"]]
        assert [e["gate"] for e in spawned + exited] == [PYTEST_GATE, PYTEST_GATE]
        assert exited[0]["exitCode"] == 0
    # the agent's own process is no gate
    assert all("gate" not in e for e in journal if e["type"] == "llm_spawned"
               and e["itemId"] == "001" and e["handle"] != started[1]["handle"])
    # proc list tells the gates apart; an item's id names its agent, not its last gate
    rows = json.loads(run_forge("proc", "list", "--json", cwd=project).stdout)
    rows = rows["processes"] if isinstance(rows, dict) else rows
    gates = {row["handle"]: row["gate"] for row in rows}
    assert [gates[e["handle"]] for e in started] == [PYTEST_GATE, PYTEST_GATE]
    agent_handle = next(e["handle"] for e in journal if e["type"] == "llm_spawned"
                        and e["itemId"] == "001" and "gate" not in e)
    assert gates[agent_handle] is None
    shown = run_forge("proc", "show", "001", "--json", cwd=project)
    assert json.loads(shown.stdout)["handle"] == agent_handle, shown.stdout


def test_tests_red_on_main_hold_no_item_back(templates: Templates, tmp_path: Path,
                                             agent: Path) -> None:
    project = calc_project(templates, tmp_path, files={"test_old.py": TEST_OLD}, name="red")
    configure(project, {"verify": [PYTEST_GATE]})  # the list form of the configuration
    result = loop(project, agent, tmp_path, "feature")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (f"note: 1 test already failing on main (`{PYTEST_GATE}`): test_old::test_old_red; "
            "an item fails the gate only for others") in result.stdout
    assert progress(result)[0].startswith("001 done: ")
    assert backlog(project)["001"]["status"] == "done"
    assert git("show", "HEAD:test_old.py", cwd=project) == TEST_OLD
    assert git("show", "HEAD:calc.py", cwd=project) == FIXED_CALC
    finished = events(project, "verify_finished")
    # the baseline as it exited (red); the item's passes for the same red test
    assert [(e["itemId"], e["passed"], e["exitCode"], e["failing"]) for e in finished] == [
        (None, False, 1, 1), ("001", True, 1, 1)]
    assert len(prompts(tmp_path)) == 1


def test_a_broken_test_is_retried_with_the_failure_and_fixed(templates: Templates,
                                                             tmp_path: Path,
                                                             agent: Path) -> None:
    project = calc_project(templates, tmp_path)
    result = loop(project, agent, tmp_path, "fix-on-retry", "--verify", PYTEST_GATE)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = progress(result)
    assert lines[0] == (f"001 retry: verify failed: {PYTEST_GATE}: test_calc::test_add: "
                        "assert -1 == 3; attempt 1 of 3")
    assert lines[1].startswith("001 done: ") and len(lines) == 2

    first, second = prompts(tmp_path)
    assert SECTION not in first["prompt"]
    section = failure_section(second["prompt"])
    assert "First failing test: test_calc::test_add\nassert -1 == 3\n" in section
    assert "E       assert -1 == 3" in section  # pytest's own lines about it
    assert "The changes your previous attempt made are still in the working tree" in section
    assert len(section) <= 4500
    # and they were: the second attempt found the first one's broken calc
    assert (first["calc"], second["calc"]) == (CALC, BROKEN_CALC)

    assert git("show", "HEAD:calc.py", cwd=project) == FIXED_CALC
    assert git("log", "-1", "--format=%s", cwd=project).strip() == "[forge] 001: Add mul"
    assert git("log", "-S", "a - b", "--format=%h", cwd=project) == ""  # never committed
    finished = events(project, "verify_finished")
    assert [(e["itemId"], e["passed"], e.get("reason")) for e in finished] == [
        (None, True, None),
        ("001", False, f"verify failed: {PYTEST_GATE}: test_calc::test_add: assert -1 == 3"),
        ("001", True, None)]
    state = json.loads((project / ".forge" / "state.json").read_text())
    assert state["verifyFailures"] == {}  # passed at last


def test_an_item_that_keeps_breaking_a_test_is_deferred_and_never_committed(
        templates: Templates, tmp_path: Path, agent: Path) -> None:
    project = calc_project(templates, tmp_path)
    base = git("rev-parse", "HEAD", cwd=project).strip()
    result = loop(project, agent, tmp_path, "break", "--verify", PYTEST_GATE)
    assert result.returncode == 5, result.stdout + result.stderr  # LOOP_BLOCKED
    why = f"verify failed: {PYTEST_GATE}: test_calc::test_add: assert -1 == 3"
    lines = progress(result)
    assert lines == [f"001 retry: {why}; attempt 1 of 3", f"001 retry: {why}; attempt 2 of 3",
                     f"001 deferred: {why} — deferred after 3 attempts"]
    item = backlog(project)["001"]
    assert (item["status"], item["deferred"], item["blockedReason"]) == (
        "blocked", True, f"{why} — deferred after 3 attempts")
    assert len(prompts(tmp_path)) == 3
    assert [e["passed"] for e in events(project, "verify_finished")] == [True, False, False, False]

    plan = run_forge("recover", "--plan", "--json", cwd=project)
    assert plan.returncode == 0, plan.stderr
    questions = json.loads(plan.stdout)["questions"]
    assert [(q["itemIds"], q["reasons"]) for q in questions] == [
        (["001"], [f"{why} — deferred after 3 attempts"])]

    # the branch never held the broken code: only the backlog's change was committed
    assert git("log", "-S", "a - b", "--format=%h", "main", cwd=project) == ""
    assert git("show", "HEAD:calc.py", cwd=project) == CALC
    assert git("diff", "--name-only", base, "HEAD", cwd=project).split() == [
        ".forge/backlog.json"]
    assert pytest_passes(project, "HEAD", tmp_path)
    # the broken work is kept aside, the tree is clean
    assert len(abandoned(project, "001")) == 1
    assert git("status", "--porcelain", cwd=project) == ""
    assert (project / "calc.py").read_text() == CALC


def test_a_flaky_test_costs_one_retry(templates: Templates, tmp_path: Path,
                                      agent: Path) -> None:
    project = calc_project(templates, tmp_path, files={"test_flaky.py": TEST_FLAKY},
                           name="flaky")
    counter = tmp_path / "flaky-runs"
    result = loop(project, agent, tmp_path, "feature", "--verify", PYTEST_GATE,
                  env={"FLAKY_COUNTER": str(counter)})
    assert result.returncode == 0, result.stdout + result.stderr
    # run 1: the baseline (green); run 2: the item's first check (red); run 3: green
    assert counter.read_text() == "3"
    lines = progress(result)
    assert len(lines) == 2 and lines[1].startswith("001 done: ")
    assert lines[0].startswith(f"001 retry: verify failed: {PYTEST_GATE}: "
                               "test_flaky::test_sometimes: AssertionError: flaked on run 2")
    assert lines[0].endswith("; attempt 1 of 3")
    assert "already failing" not in result.stdout
    assert [(e["itemId"], e["passed"]) for e in events(project, "verify_finished")] == [
        (None, True), ("001", False), ("001", True)]
    first, second = prompts(tmp_path)
    assert "First failing test: test_flaky::test_sometimes" in failure_section(second["prompt"])
    assert backlog(project)["001"]["status"] == "done"
    assert git("show", "HEAD:calc.py", cwd=project) == FIXED_CALC


# -- a parallel run ----------------------------------------------------------------------------

def test_parallel_gates_run_in_the_worktrees_and_the_branch_is_never_red(
        templates: Templates, tmp_path: Path, agent: Path) -> None:
    project = calc_project(templates, tmp_path, ("Add mul", "Add shout"), name="two")
    base = git("rev-parse", "HEAD", cwd=project).strip()
    cwd_log = tmp_path / "cwds.log"
    result = loop(project, agent, tmp_path, "parallel", "--parallel", "2",
                  "--verify", PYTEST_GATE, "--verify", script(tmp_path, "cwd.py", CWD_GATE),
                  env={"CWD_LOG": str(cwd_log)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert [line for line in progress(result, "001") if "retry" in line] == [
        f"001 retry: verify failed: {PYTEST_GATE}: test_calc::test_add: assert -1 == 3; "
        "attempt 1 of 3"]
    assert progress(result, "001")[-1].startswith("001 done: ")
    assert [line.split(":")[0] for line in progress(result, "002")] == ["002 done"]
    assert {entry["status"] for entry in backlog(project).values()} == {"done"}
    assert len(prompts(tmp_path, "001")) == 2 and len(prompts(tmp_path, "002")) == 1

    # the branch: each commit's suite passes, the tip holds both items' work
    commits = git("rev-list", f"{base}..main", cwd=project).split()
    assert git("rev-list", "--merges", f"{base}..main", cwd=project) == ""
    for commit in commits:
        assert pytest_passes(project, commit, tmp_path), commit
    assert git("show", "main:calc.py", cwd=project) == FIXED_CALC
    assert git("show", "main:words.py", cwd=project) == WORDS
    assert git("log", "-S", "a - b", "--format=%h", "main", cwd=project) == ""

    # where the gates ran: the baseline in the main checkout, the items' in their worktrees
    root = project.resolve()
    worktrees = root / ".forge" / "worktrees"
    cwds = [Path(line) for line in cwd_log.read_text().splitlines()]
    assert cwds[0] == root
    others = cwds[1:]
    assert {worktrees / "001", worktrees / "002"} <= set(others), cwds
    assert all(cwd.is_relative_to(worktrees) or cwd.is_relative_to(root / ".forge" / "verify")
               for cwd in others), cwds
    # and every gate's process, as its manifest says (by the handle verify_started names)
    ran_in: dict[str | None, set[Path]] = {}
    for started in events(project, "verify_started"):
        manifest = project / ".forge" / "proc" / f"{started['handle']}.manifest.json"
        cwd = Path(json.loads(manifest.read_text())["command"]["cwd"])
        ran_in.setdefault(started["itemId"], set()).add(cwd)
    assert ran_in[None] == {root}
    for item in ("001", "002"):
        assert worktrees / item in ran_in[item], ran_in
        assert all(cwd.is_relative_to(worktrees / item)
                   or cwd.is_relative_to(root / ".forge" / "verify") for cwd in ran_in[item])
    assert git("status", "--porcelain", cwd=project) == ""
    assert "running" not in proc_states(project)


#: An agent that waits for ``go`` beside the repository (30 s at most), then adds a module
#: of its item's and that module's passing test.
WAITING_AGENT = '''
import os, pathlib, sys, time
sys.stdin.read()
item = os.environ["FORGE_ITEM_ID"]
go = pathlib.Path(os.environ["GO_FILE"])
deadline = time.monotonic() + 30
while not go.exists() and time.monotonic() < deadline:
    time.sleep(0.05)
pathlib.Path(f"m{item}.py").write_text("def f():\\n    return 1\\n")
if item == os.environ.get("REBREAK"):  # add, redefined: 100 too many
    with open("calc.py", "a") as calc:
        calc.write("\\n\\ndef add(a, b):\\n    return a + b + 100\\n")
pathlib.Path(f"test_m{item}.py").write_text(
    f"from m{item} import f\\n\\n\\ndef test_f():\\n    assert f() == 1\\n")
print("FORGE_DONE")
'''


def run_with_a_user_commit(project: Path, tmp_path: Path, files: dict[str, str],
                           message: str, env: dict[str, str] | None = None
                           ) -> tuple[subprocess.CompletedProcess[str], str]:
    """A parallel run (two slots, the pytest gate) of ``WAITING_AGENT``: once both
    agents have started, the user commits ``files`` on the loop's branch, then the
    agents go on. The run, and the user's commit."""
    agent = tmp_path / "waiting_agent.py"
    agent.write_text(WAITING_AGENT)
    go = tmp_path / "go"
    loop_run = subprocess.Popen(
        forge_argv() + ["loop", "run", "--agent", f"{sys.executable} {agent}",
                        "--parallel", "2", "--verify", PYTEST_GATE],
        cwd=project, env={**os.environ, "GO_FILE": str(go), **(env or {})},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        journal = project / ".forge" / "events.ndjson"

        def spawned() -> int:
            return journal.read_text().count('"type":"llm_spawned"') if journal.exists() else 0

        waiting.wait_for(lambda: spawned() >= 2 or loop_run.poll() is not None, timeout=60,
                         what="both agents to start")
        assert loop_run.poll() is None, waiting.communicate(loop_run, timeout=10)
        for name, text in files.items():
            (project / name).write_text(text)
        git("add", *files, cwd=project)
        git("commit", "-qm", message, cwd=project)
        user_tip = git("rev-parse", "HEAD", cwd=project).strip()
        go.touch()
        out, err = waiting.communicate(loop_run, timeout=90)
    finally:
        go.touch()
        if loop_run.poll() is None:
            waiting.kill_tree(loop_run.pid)
            waiting.communicate(loop_run, timeout=10)
    return subprocess.CompletedProcess(loop_run.args, loop_run.returncode, out, err), user_tip


#: A test the user commits mid-run, red.
USER_RED = "def test_user():\n    assert 1 == 2\n"


def test_a_red_commit_of_the_user_s_under_a_parallel_run_is_no_item_s_failure(
        templates: Templates, tmp_path: Path) -> None:
    """The user commits a red test on the loop's branch while two agents work: the
    run takes its checks' baseline again on that tip, and the items, replayed onto
    it, land — the red test is the user's, not theirs."""
    project = calc_project(templates, tmp_path, ("Add m1", "Add m2"), name="two-m")
    result, _ = run_with_a_user_commit(project, tmp_path, {"test_user_red.py": USER_RED},
                                       "the user's red test")
    out, err = result.stdout, result.stderr
    assert result.returncode == 0, out + err
    assert {entry["status"] for entry in backlog(project).values()} == {"done"}
    assert "the branch moved under the run (to " in out
    baselines = [e for e in events(project, "verify_finished") if e["itemId"] is None]
    assert len(baselines) == 2  # the starting tip's, and the user's commit's
    assert not events(project, "merge_conflict")
    files = git("ls-tree", "--name-only", "main", cwd=project).split()
    assert {"m001.py", "m002.py", "test_user_red.py"} <= set(files)


def test_an_item_that_re_breaks_what_the_user_fixed_mid_run_does_not_land(
        templates: Templates, tmp_path: Path) -> None:
    """Red at the start (``add`` is off by one); the user's commit mid-run fixes it and
    adds a red test of its own. The item that breaks ``add`` again is asked about as a
    conflict — its own gate ran where ``add`` was red already — and the other lands:
    the branch ends no redder than the user's commit made it."""
    off = "from helper import OFFSET\n\n\ndef add(a, b):\n    return a + b + OFFSET\n"
    project = calc_project(templates, tmp_path, ("Break add", "Add m2"),
                           {"calc.py": off, "helper.py": "OFFSET = 1\n"}, name="off")
    result, user_tip = run_with_a_user_commit(
        project, tmp_path, {"helper.py": "OFFSET = 0\n", "test_user_red.py": USER_RED},
        "the user's fix, and a red test", env={"REBREAK": "001"})
    out, err = result.stdout, result.stderr
    items = backlog(project)
    assert items["002"]["status"] == "done", out + err
    assert items["001"]["status"] == "blocked", out + err
    assert "test_calc::test_add" in items["001"]["blockedReason"]
    assert "the branch moved under the run (to " in out
    # the tip: the user's commit and 002's work, add as the user fixed it
    assert git("show", "main:calc.py", cwd=project) == off
    assert git("show", "main:helper.py", cwd=project) == "OFFSET = 0\n"
    assert "m002.py" in git("ls-tree", "--name-only", "main", cwd=project).split()
    assert git("merge-base", "--is-ancestor", user_tip, "main", cwd=project, check=False) == ""


#: An agent that sleeps as long as its item says (``SLEEP_<id>`` seconds), then adds a file.
SLEEPING_AGENT = '''
import os, pathlib, sys, time
sys.stdin.read()
item = os.environ["FORGE_ITEM_ID"]
time.sleep(float(os.environ.get(f"SLEEP_{item}", "0")))
pathlib.Path(f"n{item}.txt").write_text("work\\n")
print("FORGE_DONE")
'''


def test_the_merge_queue_s_check_runs_beside_every_slot(templates: Templates,
                                                         tmp_path: Path) -> None:
    """More items than slots: an item's work replayed onto a tip that moved is checked
    on the merge thread while both slots run agents — a process beyond the slots."""
    project = calc_project(templates, tmp_path, ("One", "Two", "Three", "Four"), name="four")
    agent = tmp_path / "sleeping_agent.py"
    agent.write_text(SLEEPING_AGENT)
    result = run_forge("loop", "run", "--agent", f"{sys.executable} {agent}", "--parallel", "2",
                       "--verify", f"{sys.executable} -c pass", cwd=project,
                       env={"SLEEP_001": "0", "SLEEP_002": "1", "SLEEP_003": "3",
                            "SLEEP_004": "3"}, timeout=90)
    assert result.returncode == 0, result.stdout + result.stderr
    assert {entry["status"] for entry in backlog(project).values()} == {"done"}
    checked = [e for e in events(project, "verify_started") if e["itemId"] == "002"]
    assert len(checked) == 2  # its own gate, then the check on the moved tip


# -- gates that misbehave ---------------------------------------------------------------------

def test_a_gate_that_hangs_times_out_and_the_item_is_deferred(templates: Templates,
                                                              tmp_path: Path,
                                                              agent: Path) -> None:
    project = calc_project(templates, tmp_path)
    configure(project, {"verifyTimeout": 0.02})
    hang = script(tmp_path, "hang.py", HANG_GATE)
    pids = tmp_path / "gate-pids"
    began = time.monotonic()
    result = loop(project, agent, tmp_path, "feature", "--verify", hang,
                  env={"GATE_PIDS": str(pids)})
    took = time.monotonic() - began
    assert result.returncode == 5, result.stdout + result.stderr
    assert took < 30, took
    why = f"verify failed: {hang}: timed out"
    assert f"note: `{hang}` timed out on main" in result.stdout
    assert progress(result) == [f"001 retry: {why}; attempt 1 of 3",
                                f"001 retry: {why}; attempt 2 of 3",
                                f"001 deferred: {why} — deferred after 3 attempts"]
    assert backlog(project)["001"]["blockedReason"] == f"{why} — deferred after 3 attempts"
    finished = events(project, "verify_finished")
    assert [(e["itemId"], e["exitCode"], e["passed"]) for e in finished] == [
        (None, None, False), ("001", None, False), ("001", None, False), ("001", None, False)]
    assert all(1000 <= e["durationMs"] < 15000 for e in finished), finished
    assert git("show", "HEAD:calc.py", cwd=project) == CALC
    # every gate (the baseline's and three attempts') ended; none is left running
    gate_pids = [int(line) for line in pids.read_text().split()]
    assert len(gate_pids) == 4
    wait_for(lambda: all(gone(pid) for pid in gate_pids), timeout=10, what="every gate gone")
    states = proc_states(project)
    assert states.count("timed_out") == 4 and "running" not in states


def test_a_gate_that_prints_100_mb_gives_a_bounded_prompt_and_reason(
        templates: Templates, tmp_path: Path, agent: Path) -> None:
    project = calc_project(templates, tmp_path)
    flood = script(tmp_path, "flood.py", FLOOD_GATE)
    configure(project, {"verify": flood})  # the one-line form of the configuration
    peak_file = tmp_path / "peak-rss-kb"
    wrapper = tmp_path / "peak_rss.py"
    wrapper.write_text(PEAK_RSS)
    began = time.monotonic()
    result = waiting.run(
        [sys.executable, str(wrapper), str(peak_file), *forge_argv(), "loop", "run", "--agent",
         f"{sys.executable} {agent}", "--retries", "1"],
        cwd=project, capture_output=True, text=True, timeout=90,
        env={**os.environ, "VERIFY_TEST_MODE": "flag",
             "VERIFY_TEST_LOG": str(tmp_path / "prompts.ndjson")})
    took = time.monotonic() - began
    assert result.returncode == 5, result.stdout + result.stderr
    assert took < 45, took
    # the loop's memory: not the gate's output (its largest process, the loop itself, or
    # any it waited for, stayed far below 100 MB of output held)
    assert int(peak_file.read_text()) < 150 * 1024

    first, second = prompts(tmp_path)
    section = failure_section(second["prompt"])
    assert f"The check `{flood}` failed (exit 1)" in section
    assert "x" * 200 in section
    assert len(section.encode()) < 10_000, len(section.encode())
    assert len(second["prompt"].encode()) < 16_000
    reason = backlog(project)["001"]["blockedReason"]
    assert reason.startswith(f"verify failed: {flood}: ")
    assert reason.endswith(" — deferred after 2 attempts")
    assert "\n" not in reason and len(reason) < 1000, len(reason)
    for line in progress(result):
        assert len(line) < 1000
    finished = events(project, "verify_finished")
    assert [(e["itemId"], e["exitCode"], e["passed"]) for e in finished] == [
        (None, 0, True), ("001", 1, False), ("001", 1, False)]
    assert all("\n" not in e.get("reason", "") for e in finished)
    shutil.rmtree(project / ".forge" / "proc")  # the spooled output: 130 MB of disk


def test_a_sigkilled_loop_leaves_no_gate_running_and_nothing_committed(
        templates: Templates, tmp_path: Path, agent: Path) -> None:
    project = calc_project(templates, tmp_path)
    base = git("rev-parse", "HEAD", cwd=project).strip()
    marker = tmp_path / "gate-pid"
    env = {**os.environ, "VERIFY_TEST_MODE": "flag", "GATE_MARKER": str(marker),
           "VERIFY_TEST_LOG": str(tmp_path / "prompts.ndjson")}
    with (tmp_path / "loop.out").open("w") as out:
        loop_proc = subprocess.Popen(
            [*forge_argv(), "loop", "run", "--agent", f"{sys.executable} {agent}", "--verify",
             script(tmp_path, "slow.py", SLOW_GATE)],
            cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT)
    gate_pid = None
    try:
        wait_for(marker.exists, timeout=30, what="the item's gate running")
        gate_pid = int(marker.read_text())
        gate = psutil.Process(gate_pid)
        assert Path(gate.cwd()) == project.resolve()  # a serial run: the main checkout
        watchdogs = [child.pid for child in psutil.Process(loop_proc.pid).children(recursive=True)
                     if any("watchdog" in part for part in child.cmdline())]
        assert len(watchdogs) == 1
        os.kill(loop_proc.pid, signal.SIGKILL)
        assert waiting.wait_process(loop_proc, timeout=10) == -signal.SIGKILL
        wait_for(lambda: gone(gate_pid), timeout=30, what="the gate ended after the loop's kill")
        wait_for(lambda: all(gone(pid) for pid in watchdogs), timeout=30,
                 what="the watchdog gone once its work was done")
    finally:
        if loop_proc.poll() is None:
            waiting.kill_tree(loop_proc.pid)
            loop_proc.wait()
        if gate_pid is not None and not gone(gate_pid):
            os.kill(gate_pid, signal.SIGKILL)

    # nothing of the item was committed; its work is in the tree, the item in progress
    assert git("rev-parse", "HEAD", cwd=project).strip() == base
    assert (project / "feature.txt").exists()
    # its manifest still says running (its owner died before it could say otherwise), but
    # nothing of its tree lives: proc list proves it gone
    handle = events(project, "verify_started")[-1]["handle"]
    listed = {entry["handle"]: entry for entry in processes(project)}
    assert (listed[handle]["item_id"], listed[handle]["state"], listed[handle]["liveness"]) == (
        "001", "running", "gone")
    assert all(entry["liveness"] == "gone" for entry in listed.values()
               if entry["state"] == "running")
    status = run_forge("status", "--json", cwd=project)
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)
    assert shown["currentItem"] == "001" and shown["backlogSummary"]["inProgress"] == 1
    assert (shown["liveness"]["loopAlive"], shown["liveness"]["endedWithoutShutdown"]) == (
        False, True)
    assert shown["liveness"]["orphans"] == []

    # its work put aside by hand, the next run (no gates) takes the item again
    put_aside = run_forge("reconcile", "--discard", "item-001", "--confirm-discard", cwd=project)
    assert put_aside.returncode == 0, put_aside.stdout + put_aside.stderr
    again = loop(project, agent, tmp_path, "flag", "--no-verify")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "item 001: its process was lost in a crash; back to pending" in again.stdout
    assert progress(again)[-1].startswith("001 done: ")
    assert events(project, "verify_started") == []
    assert git("show", "HEAD:feature.txt", cwd=project) == "the work\n"
    assert git("rev-list", "--count", f"{base}..HEAD", cwd=project).strip() == "2"
    # the gate's process, provably gone, marked so by the next run
    assert {entry["handle"]: entry["state"] for entry in processes(project)}[handle] == (
        "lost_on_restore")
    assert "running" not in proc_states(project)


# -- turning the gates off, and refusing bad ones ------------------------------------------------

def test_no_verify_runs_no_gate_whatever_the_configuration_says(templates: Templates,
                                                                tmp_path: Path,
                                                                agent: Path) -> None:
    project = calc_project(templates, tmp_path)
    configure(project, {"verify": [PYTEST_GATE]})
    result = loop(project, agent, tmp_path, "break", "--no-verify")
    assert result.returncode == 0, result.stdout + result.stderr
    assert progress(result)[0].startswith("001 done: ")
    journal = events(project)
    assert [e for e in journal if e["type"] in ("verify_started", "verify_finished")] == []
    assert [e for e in journal if "gate" in e] == []
    assert list((project / ".forge" / "verify").glob("*.xml")) == []
    # unchecked, the broken code is the item's work: what --no-verify means
    assert git("show", "HEAD:calc.py", cwd=project) == BROKEN_CALC


@pytest.mark.parametrize(("config", "args", "error"), [
    ({"verify": [""]}, (), "Error: loop.verify: an empty command line\n"),
    ({"verify": ["  "]}, (), "Error: loop.verify: an empty command line\n"),
    (None, ("--verify", ""), "Error: --verify: an empty command line\n"),
    (None, ("--verify", PYTEST_GATE, "--verify", " "),
     "Error: --verify: an empty command line\n"),
    (None, ("--verify", 'python3 -c "unclosed'),
     "Error: cannot split --verify: No closing quotation\n"),
    ({"verify": ""}, (), "Error: loop.verify: an empty command line\n"),
    (None, ("--verify", "no-such-check-command --all"),
     "Error: verification command not found: no-such-check-command\n"),
], ids=["config-empty", "config-blank", "flag-empty", "flag-blank-second", "flag-unclosed-quote",
        "one-empty-line", "not-found"])
def test_an_empty_gate_is_refused_and_nothing_changes(templates: Templates, tmp_path: Path,
                                                      agent: Path, config: dict[str, Any] | None,
                                                      args: tuple[str, ...], error: str) -> None:
    project = calc_project(templates, tmp_path)
    if config is not None:
        configure(project, config)
    head = git("rev-parse", "HEAD", cwd=project).strip()
    before = snapshot(project)
    result = loop(project, agent, tmp_path, "feature", *args)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", error)
    assert snapshot(project) == before
    assert git("rev-parse", "HEAD", cwd=project).strip() == head
    assert prompts(tmp_path) == []


@pytest.mark.parametrize(("value", "error"), [
    (0.001, "loop.verifyTimeout must be at least 0.01 (got 0.001)"),
    ("5", 'loop.verifyTimeout must be a number (got "5")'),
], ids=["below-the-minimum", "a-string"])
def test_a_bad_verify_timeout_is_refused(templates: Templates, tmp_path: Path, agent: Path,
                                         value: Any, error: str) -> None:
    project = calc_project(templates, tmp_path)
    configure(project, {"verifyTimeout": value})
    before = snapshot(project)
    result = loop(project, agent, tmp_path, "feature", "--verify", PYTEST_GATE)
    assert (result.returncode, result.stdout) == (2, "")
    assert re.fullmatch(r"Error: [^\n]*\n", result.stderr), result.stderr
    assert result.stderr.endswith(f": {error}\n")
    assert snapshot(project) == before
