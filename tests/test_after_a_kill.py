"""After a kill: what a dead loop or a dead recover left never lets the next
command go wrong.

* An agent whose loop and watchdog were both killed lives on: it blocks every
  launch — ``preflight``, the pre-launch hook, ``loop run`` — on a clean tree too,
  naming its item, its pid and the way out, until ``proc stop`` ends it.
* A ``recover`` SIGKILLed at any instant converges: the next pass finishes the
  work or says exactly what it left, and the tree ends as its report says; no
  decision is lost or recorded twice.

Real repositories, real processes, real SIGSTOP and SIGKILL; the agent is a
script first on PATH.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
import waiting
from builders import blocked_backlog, init_repository
from helpers import forge_argv, git, run_forge, snapshot
from waiting import gone, wait_for

# -- an orphan blocks a launch ---------------------------------------------------------------

#: An agent that says where it runs, then works for a minute (the test ends it).
SLOW_AGENT = f"""#!{sys.executable}
import os, pathlib, sys, time
sys.stdin.read()
pathlib.Path(os.environ["SLOW_AGENT_PID"]).write_text(str(os.getpid()))
time.sleep(60)
print("FORGE_DONE", flush=True)
"""


def _watchdogs(loop_pid: int) -> list[psutil.Process]:
    return [child for child in psutil.Process(loop_pid).children(recursive=True)
            if any("watchdog_process.py" in part for part in child.cmdline())]


def _kill_loop_and_watchdog(loop: subprocess.Popen) -> None:
    """SIGSTOP the loop and its watchdog (neither can act on the other's end), then
    SIGKILL both: nothing is left that would end the agent."""
    ours = [psutil.Process(loop.pid), *_watchdogs(loop.pid)]
    assert len(ours) == 2, ours
    for process in ours:
        process.suspend()
    for process in reversed(ours):
        process.kill()
    waiting.wait_process(loop, timeout=10)
    for process in ours:
        wait_for(lambda pid=process.pid: gone(pid), timeout=10, what="loop and watchdog gone")


@pytest.mark.parametrize("config", [None, "backlog: plan\n"], ids=["default", "backlog-dir"])
def test_an_orphan_blocks_every_launch_on_a_clean_tree_until_proc_stop(
        tmp_path: Path, config: str | None) -> None:
    root = init_repository(tmp_path / "repo")
    if config is not None:  # the state dir is where only the configuration says
        (root / ".forge.yaml").write_text(config)
    for args in (("init",), ("backlog", "add", "--title", "Do a")):
        assert run_forge(*args, cwd=root).returncode == 0
    git("add", "-A", cwd=root)
    git("commit", "-qm", "backlog", cwd=root)
    backlog_dir = "plan" if config else ".forge"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "slow-agent").write_text(SLOW_AGENT)
    (bin_dir / "slow-agent").chmod(0o755)
    pid_file = tmp_path / "agent.pid"
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "SLOW_AGENT_PID": str(pid_file)}
    assert run_forge("hooks", "install", cwd=root).returncode == 0
    loop = subprocess.Popen([*forge_argv(), "loop", "run", "--agent", "slow-agent",
                             "--iterations", "1"], cwd=root, env={**os.environ, **env},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    agent = None
    try:
        wait_for(lambda: pid_file.exists() and pid_file.read_text().isdigit(), timeout=30,
                 what="the agent running")
        agent = int(pid_file.read_text())
        _kill_loop_and_watchdog(loop)
        assert psutil.Process(agent).is_running()
        # The backlog put back (its item left in_progress): the tree is clean.
        git("checkout", "--", f"{backlog_dir}/backlog.json", cwd=root)
        assert git("status", "--porcelain", cwd=root) == ""

        handle = json.loads(run_forge("proc", "list", "--json", cwd=root).stdout)[-1]["handle"]
        assert f"orphaned agent still running (handle {handle}, item 001)" in run_forge(
            "status", cwd=root).stdout
        reason = (f"an agent of an earlier run is still running (item 001, pid {agent}, "
                  f"handle {handle}); stop it with git forge proc stop {handle}")
        before = snapshot(root)
        preflight = run_forge("preflight", cwd=root)
        assert (preflight.returncode, preflight.stdout, preflight.stderr) == (
            1, "", f"STOP: {reason}\n")
        as_json = run_forge("preflight", "--json", cwd=root)
        assert as_json.returncode == 1
        assert json.loads(as_json.stdout) == {"status": "stop", "run": None, "paths": [],
                                              "reason": reason}
        hook = waiting.run(["git", "hook", "run", "pre-launch"], cwd=root, capture_output=True,
                           text=True)
        assert (hook.returncode, hook.stderr) == (1, f"STOP: {reason}\n")
        refused = run_forge("loop", "run", "--agent", "slow-agent", cwd=root, env=env)
        assert (refused.returncode, refused.stderr) == (2, f"Error: {reason}\n")
        assert snapshot(root) == before  # refused: nothing was touched

        stopped = run_forge("proc", "stop", handle, "--grace", "0.3", cwd=root)
        assert stopped.returncode == 0, stopped.stderr
        wait_for(lambda: gone(agent), timeout=10, what="the orphan gone")
        after = run_forge("preflight", cwd=root)
        assert (after.returncode, after.stdout, after.stderr) == (0, "", "")
    finally:
        if loop.poll() is None:
            loop.kill()
            loop.wait()
        if agent is not None and not gone(agent):
            os.kill(agent, signal.SIGKILL)


# -- a killed recover converges --------------------------------------------------------------

REASONS = {"001": "Which database should the store use?",
           "002": "Which database should the cache use?",
           "003": "Which port should the API listen on?"}
#: The answers given: one for the cluster of 001 and 002, one for 003 alone.
ANSWERS = {"c001": "Use SQLite", "003": "Port 8080"}
ANSWER_OF = {"001": "Use SQLite", "002": "Use SQLite", "003": "Port 8080"}
TRIALS = 16


def _pass(root: Path, *args: str) -> tuple[int, dict]:
    result = run_forge("recover", "--json", *args, cwd=root)
    assert result.stdout, result.stderr
    return result.returncode, json.loads(result.stdout)


def _timed(argv: list[str], cwd: Path) -> float:
    started = time.monotonic()
    waiting.run(argv, cwd=cwd, capture_output=True)
    return time.monotonic() - started


def _converged(root: Path, code: int, report: dict) -> None:
    """The pass after a kill finished the work or says what it left; the tree is as
    its report says; every answer is in the record once, applied, and in the backlog."""
    assert report["failure"] is None, report
    assert code == report["exitCode"] and code in (0, 3), report
    dirty = git("status", "--porcelain", cwd=root)
    assert report["gate"]["porcelainClean"] is (dirty == ""), (dirty, report)
    assert dirty == "", (dirty, report)
    entries = json.loads((root / ".forge" / "forge-decisions.json").read_text())["decisions"]
    items = {item["id"]: item for item in json.loads(
        (root / ".forge" / "backlog.json").read_text())["items"]}
    for item_id, answer in ANSWER_OF.items():
        answered = [entry for entry in entries
                    if entry["itemId"] == item_id and entry["answer"] is not None]
        if items[item_id]["status"] == "blocked":  # killed before its answer was recorded
            assert answered == [] and code == 3, (item_id, entries, report)
            continue
        assert [entry["answer"] for entry in answered] == [answer], (item_id, entries)
        assert answered[0]["appliedAt"] is not None, entries
        assert items[item_id]["humanAnswer"] == answer
    if code == 0:
        assert all(item["status"] != "blocked" for item in items.values()), items


def test_a_recover_killed_at_any_instant_converges_on_the_next_pass(tmp_path: Path) -> None:
    template = blocked_backlog(init_repository(tmp_path / "template"), REASONS)
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(ANSWERS))
    argv = [*forge_argv(), "recover", "--answers", str(answers), "--json"]
    # The instants worth a kill: from when a pass has read what it needs (a --plan
    # pass ends there, having written nothing) to a little past its end. Half the
    # trials wait for the answers to reach the record first and kill soon after, so
    # the late instants are tried however loaded the machine is.
    probe = tmp_path / "probe"
    shutil.copytree(template, probe, symlinks=True)
    start = _timed([*forge_argv(), "recover", "--plan", "--json"], probe)
    end = max(_timed(argv, probe), start)
    rng = random.Random()
    delays = [rng.uniform(0.8 * start, 1.1 * end) if number % 2 else rng.uniform(0, 0.05)
              for number in range(TRIALS)]
    record = Path(".forge") / "forge-decisions.json"
    unanswered = (template / record).read_bytes() if (template / record).exists() else None

    def answered(root: Path, killed: subprocess.Popen) -> bool:
        path = root / record
        return killed.poll() is not None or (
            path.exists() and path.read_bytes() != unanswered)

    def trial(number: int) -> tuple[int, Path]:
        root = tmp_path / f"trial-{number}"
        shutil.copytree(template, root, symlinks=True)
        killed = subprocess.Popen(argv, cwd=root, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        if number % 2 == 0:
            wait_for(lambda: answered(root, killed), timeout=30, interval=0.005)
        time.sleep(delays[number])
        killed.send_signal(signal.SIGKILL)
        waiting.wait_process(killed, timeout=10)
        code, report = _pass(root)
        locks = [path for path in (root / ".git" / "index.lock", root / ".git" / "HEAD.lock",
                                   root / ".git" / "refs" / "heads" / "main.lock",
                                   root / ".git" / "refs" / "stash.lock")
                 if path.exists()]  # in the order git-forge names them
        if code == 6 and locks:
            # git's own lock (the index's, the branch's), left by a pass killed in the
            # middle of its commit as a killed git commit leaves it: the next pass
            # changes nothing of the tree and says which file it is and how to remove
            # it, as git does; then it converges.
            said = run_forge("recover", cwd=root).stdout
            assert f"if none is running, remove it: rm {' '.join(map(str, locks))}" in said, said
            for lock in locks:
                lock.unlink()
            code, report = _pass(root)
        _converged(root, code, report)
        return code, root

    with ThreadPoolExecutor(max_workers=2) as pool:  # two at a time: the suite stays quick
        outcomes = list(pool.map(trial, range(TRIALS), timeout=300))
    codes = [code for code, _root in outcomes]
    assert 0 in codes, (codes, delays)  # some kills came after the answers were recorded
    left = next((root for code, root in outcomes if code == 3), None)
    if left is not None:  # what a pass killed before recording left can still be answered
        code, report = _pass(left, "--answers", str(answers))
        _converged(left, code, report)
        assert code == 0, report


def _killed_after_the_runner_wrote(root: Path, *, stamped: bool) -> None:
    """What a pass killed after the runner's write leaves (before or after its stamp):
    003's answer recorded and in backlog.json, nothing committed."""
    record = ("--backlog-dir", str(root / ".forge"), "--item", "003")
    for args in (["decision", "record", *record, "--question", REASONS["003"],
                  "--answer", ANSWER_OF["003"]],
                 ["backlog", "answer", "003", ANSWER_OF["003"]],
                 *([["decision", "apply", *record]] if stamped else [])):
        done = run_forge(*args, cwd=root)
        assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("stamped", [False, True], ids=["before-the-stamp", "after-the-stamp"])
def test_the_answers_a_killed_pass_left_are_committed_by_the_next(tmp_path: Path,
                                                                  stamped: bool) -> None:
    root = blocked_backlog(init_repository(tmp_path / "repo"), REASONS)
    _killed_after_the_runner_wrote(root, stamped=stamped)
    twin = tmp_path / "twin"  # the same state, for the human report
    shutil.copytree(root, twin, symlinks=True)
    work = (root / ".forge" / "backlog.json").read_bytes()
    code, report = _pass(root)
    _converged(root, code, report)
    assert code == 3 and report["outcome"] == "needs-human"  # 001 and 002: asked next time
    assert [(a["group"], a["action"]) for a in report["tree"]["actions"]] == [
        ("recovery", "commit")]
    assert git("log", "-1", "--format=%s", cwd=root).strip() == (
        "[forge] recover: decisions applied to the backlog")
    assert git("show", "HEAD:.forge/backlog.json", cwd=root).encode() == work
    human = run_forge("recover", cwd=twin)
    assert human.returncode == 3 and git("status", "--porcelain", cwd=twin) == ""
    assert ("  note      .forge/backlog.json held the applied answers of an interrupted "
            "recover pass (items 003): recover's own change") in human.stdout.splitlines()


def test_an_edit_beside_a_killed_passs_answers_is_never_swept_into_its_commit(
        tmp_path: Path) -> None:
    root = blocked_backlog(init_repository(tmp_path / "repo"), REASONS)
    _killed_after_the_runner_wrote(root, stamped=True)
    backlog = root / ".forge" / "backlog.json"
    left = backlog.read_bytes()
    document = json.loads(backlog.read_text())
    document["items"][2]["title"] = "Renamed by the operator"  # the answered item itself
    backlog.write_text(json.dumps(document, indent=2) + "\n")
    edited = backlog.read_bytes()
    head = git("rev-parse", "HEAD", cwd=root)
    code, report = _pass(root)
    assert git("rev-parse", "HEAD", cwd=root) == head  # nothing committed
    assert backlog.read_bytes() == edited
    assert report["tree"]["actions"] == [] and report["tree"]["groups"] == []
    # queued for the next run, as preflight has it, and not said to be recover's alone
    assert report["tree"]["queuedBacklog"]["recoverAnswers"] == []
    assert report["gate"]["porcelainClean"] is True
    assert code == 3, report
    backlog.write_bytes(left)  # the operator takes the edit back: the rest is recover's
    code, report = _pass(root)
    _converged(root, code, report)
    assert git("show", "HEAD:.forge/backlog.json", cwd=root).encode() == left


def test_only_the_changes_an_answer_makes_are_recognised_as_recovers() -> None:
    from builders import backlog_document, blocked, item

    from git_forge.backlog.bookkeeping import only_applied_answers

    def raw(*items: dict, **top: str) -> bytes:
        return json.dumps(backlog_document(items, **top), indent=2).encode()

    head = raw(blocked("001", "which?"), blocked("002", "where?"), item("003"))
    answered = item("001", humanAnswer="this one", needsHuman=False)
    answers = {"001": "this one"}
    assert only_applied_answers(head, raw(answered, blocked("002", "where?"), item("003")),
                                answers) == ["001"]
    asked = item("001", humanAnswer="this one", needsHuman=False,  # what it answered kept
                 answeredReason="which?", answeredKind="question")
    assert only_applied_answers(head, raw(asked, blocked("002", "where?"), item("003")),
                                answers) == ["001"]
    unblocked = item("001", needsHuman=False)  # a runner that does not thread the answer
    assert only_applied_answers(head, raw(unblocked, blocked("002", "where?"), item("003")),
                                answers) == ["001"]
    for work in (raw(answered, item("002"), item("003")),  # an item nobody answered
                 raw(item("001", humanAnswer="another", needsHuman=False),
                     blocked("002", "where?"), item("003")),  # not the recorded answer
                 raw({**answered, "title": "renamed"}, blocked("002", "where?"), item("003")),
                 raw(answered, blocked("002", "where?"), item("003", priority=1)),
                 raw(answered, blocked("002", "where?"), item("003"), item("004")),
                 raw(blocked("002", "where?"), answered, item("003")),  # reordered
                 raw(answered, blocked("002", "where?"), item("003"), project="q"),
                 head, b"{not json"):
        assert only_applied_answers(head, work, answers) == []
