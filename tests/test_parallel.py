"""``loop run --parallel N``: agents at once, each in a worktree of its own, every done
item integrated onto the branch — linear, one commit each, nothing lost.

Real repositories, the real installed ``git forge``, real agent processes
(a small Python program whose behaviour each test picks through the environment).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import psutil
import pytest
import waiting
from builders import backlog_repo
from helpers import PtySession, forge_argv, git, run_forge
from templates import Templates

#: The agent: ``FORGE_TEST_MODE`` says what it does with its item.
AGENT = r'''
import json, os, sys, time
item = os.environ["FORGE_ITEM_ID"]
mode = os.environ.get("FORGE_TEST_MODE", "work")
log = os.environ["FORGE_TEST_LOG"]
here = os.getcwd()
def record(**fields):
    with open(log, "a") as out:
        out.write(json.dumps({"item": item, "pid": os.getpid(), "time": time.time(),
                              **fields}) + "\n")
seen = sorted(name for name in os.listdir(here) if name.startswith("item-"))
record(event="start", cwd=here, worktree=os.environ.get("FORGE_WORKTREE"), seen=seen)
if mode == "hang":
    open(f"item-{item}.txt", "w").write("half done\n")
    time.sleep(120)
time.sleep(float(os.environ.get("FORGE_TEST_SLEEP", "0.2")) * (5 if mode == "ask" and
                                                              item != "001" else 1))
if mode == "clash":
    lines = open("shared.txt").read().splitlines(keepends=True)
    lines[0] = f"line one, as item {item} has it\n"
    open("shared.txt", "w").write("".join(lines))
elif mode == "nested" and item == "001":  # a repository of its own: never committed
    import subprocess
    subprocess.run(["git", "init", "-q", "nested"], check=True)
    open(f"item-{item}.txt", "w").write("mine\n")
elif mode == "escape" and item == "001":
    open(os.path.join(os.environ["FORGE_TEST_MAIN"], "escaped.txt"), "w").write("oops\n")
    open(f"item-{item}.txt", "w").write("mine\n")
else:
    open(f"item-{item}.txt", "w").write(f"work of item {item}\n")
record(event="end")
if mode == "ask" and item == "001":
    print("FORGE_NEEDS_HUMAN: which database?")
else:
    print("FORGE_DONE")
'''


def build_twelve(root: Path) -> None:
    backlog_repo(root, *[f"Item {n}" for n in range(1, 13)])
    (root / "shared.txt").write_text("line one\nline two\n")
    git("add", "shared.txt", cwd=root)
    git("commit", "-qm", "shared", cwd=root)


@pytest.fixture
def twelve(templates: Templates, tmp_path: Path) -> Path:
    return templates.copy("parallel-twelve", build_twelve, tmp_path / "repo")


def build_chain(root: Path) -> None:
    backlog_repo(root, "First", ["--title", "Second", "--depends-on", "001"],
                 ["--title", "Third", "--depends-on", "002"], "Free one", "Free two")


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    path = tmp_path / "agent.py"
    path.write_text(AGENT)
    return path


def loop_env(tmp_path: Path, **fields: str) -> dict[str, str]:
    return {"FORGE_TEST_LOG": str(tmp_path / "agents.ndjson"), **fields}


def records(tmp_path: Path) -> list[dict]:
    log = tmp_path / "agents.ndjson"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def run_parallel(project: Path, agent: Path, n: int, env: dict[str, str], *extra: str):
    return run_forge("loop", "run", "--agent", f"{sys.executable} {agent}", "--parallel",
                     str(n), *extra, cwd=project, env=env, timeout=120)


def item_commits(project: Path) -> dict[str, list[str]]:
    """Item id → the paths of each ``[forge] <id>: …`` commit on the branch."""
    found: dict[str, list[str]] = {}
    for line in git("log", "--format=%H %s", cwd=project).splitlines():
        commit, subject = line.split(" ", 1)
        named = re.match(r"\[forge\] ([0-9]{3}): ", subject)
        if named:
            paths = git("show", "--format=", "--name-only", commit, cwd=project).split()
            found.setdefault(named.group(1), []).append(" ".join(paths))
    return found


def backlog(project: Path) -> dict[str, dict]:
    items = json.loads((project / ".forge" / "backlog.json").read_text())["items"]
    return {item["id"]: item for item in items}


def git_commands(trace: Path) -> Counter[str]:
    """The git commands a run started itself (not those git started), by name, from
    git's own trace (``GIT_TRACE2_EVENT``)."""
    started: Counter[str] = Counter()
    for line in trace.read_text().splitlines():
        event = json.loads(line)
        if event.get("event") == "start" and "/" not in event["sid"]:
            args = iter(event["argv"][1:])
            for arg in args:
                if arg in ("-C", "-c"):
                    next(args)  # its value
                elif not arg.startswith("-"):
                    started[arg] += 1
                    break
    return started


def test_four_agents_twelve_items_twelve_linear_commits(twelve: Path, agent: Path,
                                                        tmp_path: Path) -> None:
    trace = tmp_path / "git-trace.json"
    result = run_parallel(twelve, agent, 4, loop_env(tmp_path, FORGE_TEST_SLEEP="0.5",
                                                     GIT_TRACE2_EVENT=str(trace)))
    assert result.returncode == 0, result.stdout + result.stderr
    # the git the run cost: at an item's start none but its worktree's (made ahead, or
    # moved to the tip); in its merge no lookup of where HEAD is, and one look at the
    # refs per fast-forward, which may serve several items; each item's commit has its
    # files hashed by git (hash-object), as git add would store them
    started = git_commands(trace)
    assert started["symbolic-ref"] == 0, started
    assert started["for-each-ref"] <= started["read-tree"], started
    assert started["hash-object"] <= 13, started
    assert sum(started.values()) <= 16 * 12, started
    commits = item_commits(twelve)
    assert commits == {f"{n:03d}": [f"item-{n:03d}.txt"] for n in range(1, 13)}
    assert git("rev-list", "--merges", "HEAD", cwd=twelve) == ""
    assert git("log", "-1", "--format=%s", cwd=twelve).startswith(
        "[forge] backlog: 001, 002, 003")
    assert all(item["status"] == "done" for item in backlog(twelve).values())
    assert git("status", "--porcelain", "-uall", cwd=twelve) == ""
    assert git("worktree", "list", "--porcelain", cwd=twelve).count("worktree ") == 1
    assert git("branch", "--list", "forge/*", cwd=twelve) == ""
    # every agent ran in its own worktree, and up to four (never more) at once
    starts = [r for r in records(tmp_path) if r["event"] == "start"]
    assert len(starts) == 12
    assert all(r["cwd"] == r["worktree"] and r["cwd"].endswith(f"worktrees/{r['item']}")
               for r in starts)
    events = sorted((r["time"], 1 if r["event"] == "start" else -1)
                    for r in records(tmp_path))
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    assert 2 <= peak <= 4
    assert run_forge("preflight", cwd=twelve).returncode == 0


def test_a_dependency_chain_never_starts_early(templates: Templates, tmp_path: Path,
                                               agent: Path) -> None:
    project = templates.copy("parallel-chain", build_chain, tmp_path / "repo")
    result = run_parallel(project, agent, 4, loop_env(tmp_path, FORGE_TEST_SLEEP="0.5"))
    assert result.returncode == 0, result.stdout + result.stderr
    starts = {r["item"]: r for r in records(tmp_path) if r["event"] == "start"}
    ends = {r["item"]: r for r in records(tmp_path) if r["event"] == "end"}
    # each link starts on a tip that holds its dependency's work, after it ended
    assert "item-001.txt" in starts["002"]["seen"] and "item-002.txt" in starts["003"]["seen"]
    assert starts["002"]["time"] > ends["001"]["time"]
    assert starts["003"]["time"] > ends["002"]["time"]
    assert starts["004"]["time"] < ends["001"]["time"]  # the free ones did not wait
    assert set(item_commits(project)) == {"001", "002", "003", "004", "005"}


def test_two_items_on_the_same_line_one_integrates_one_asks(twelve: Path, agent: Path,
                                                            tmp_path: Path) -> None:
    set_backlog = json.loads((twelve / ".forge" / "backlog.json").read_text())
    set_backlog["items"] = set_backlog["items"][:2]
    (twelve / ".forge" / "backlog.json").write_text(json.dumps(set_backlog, indent=2) + "\n")
    git("commit", "-qam", "two items", cwd=twelve)
    result = run_parallel(twelve, agent, 2, loop_env(tmp_path, FORGE_TEST_MODE="clash"))
    assert result.returncode == 5, result.stdout + result.stderr
    items = backlog(twelve)
    done = [i for i, item in items.items() if item["status"] == "done"]
    asking = [i for i, item in items.items() if item["status"] == "blocked"]
    assert len(done) == 1 and len(asking) == 1
    (winner,), (loser,) = done, asking
    reason = items[loser]["blockedReason"]
    assert items[loser]["needsHuman"] is True
    assert reason.startswith(f"merge conflict in shared.txt with item {winner}: its work is "
                             f"kept on branch forge/{loser}")
    assert "Retry it on the new tip or resolve it by hand: git forge recover" in reason
    assert "--force" not in reason and "branch -D" not in reason
    # nothing lost: the winner's line is on the branch, the loser's on its branch
    assert f"as item {winner} has it" in (twelve / "shared.txt").read_text()
    assert f"as item {loser} has it" in git("show", f"forge/{loser}:shared.txt", cwd=twelve)
    assert (twelve / ".forge" / "worktrees" / loser).is_dir()
    stop = run_forge("preflight", cwd=twelve)
    assert stop.returncode == 1 and f"git forge reconcile --integrate {loser}" in stop.stderr
    # retry on the new tip (recover's answer), then run again: it lands
    answered = run_forge("recover", "--answer", f"{loser}=retry", cwd=twelve)
    assert answered.returncode == 0, answered.stdout + answered.stderr
    again = run_parallel(twelve, agent, 2, loop_env(tmp_path, FORGE_TEST_MODE="clash"))
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"as item {loser} has it" in (twelve / "shared.txt").read_text()
    assert sorted(item_commits(twelve)) == sorted([winner, loser])


def test_an_agent_writing_into_the_main_checkout_is_caught(templates: Templates,
                                                           tmp_path: Path, agent: Path) -> None:
    project = templates.copy("parallel-chain", build_chain, tmp_path / "repo")
    result = run_parallel(project, agent, 2,
                          loop_env(tmp_path, FORGE_TEST_MODE="escape",
                                   FORGE_TEST_MAIN=str(project)), "--iterations", "1")
    assert "an agent wrote outside its worktree (item 001): ?? escaped.txt" in result.stdout
    item = backlog(project)["001"]
    assert item["status"] == "blocked"
    assert item["blockedReason"].startswith("an agent wrote outside its worktree (item 001)")
    # left for reconcile, never committed as anyone's work
    assert git("status", "--porcelain", cwd=project) == "?? escaped.txt\n"
    assert "escaped.txt" not in git("log", "--all", "--name-only", "--format=", cwd=project)
    assert "001" not in item_commits(project)


def test_a_path_left_in_a_worktree_is_said_with_the_item_s_done(templates: Templates,
                                                                tmp_path: Path,
                                                                agent: Path) -> None:
    project = templates.copy("parallel-chain", build_chain, tmp_path / "repo")
    result = run_parallel(project, agent, 2, loop_env(tmp_path, FORGE_TEST_MODE="nested"),
                          "--iterations", "2", "--json")
    assert result.returncode == 0, result.stderr
    assert backlog(project)["001"]["status"] == "done"
    assert "item-001.txt" in item_commits(project)["001"]
    left = json.loads(result.stdout)["uncommitted"]
    assert len(left) == 1 and left[0]["itemId"] == "001"
    assert [entry["path"] for entry in left[0]["paths"]] == ["nested"]
    assert (Path(left[0]["where"]) / "nested" / ".git").is_dir()  # kept, and holds it
    events = [json.loads(line) for line in
              (project / ".forge" / "events.ndjson").read_text().splitlines()]
    completed = {e["itemId"]: e for e in events if e["type"] == "item_completed"}
    assert completed["001"]["uncommitted"] == left[0]["paths"]
    assert completed["001"]["uncommittedIn"] == left[0]["where"]


def agent_pids(tmp_path: Path) -> set[int]:
    return {r["pid"] for r in records(tmp_path) if r["event"] == "start"}


def alive(pids: set[int]) -> set[int]:
    living = set()
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                living.add(pid)
        except psutil.NoSuchProcess:
            pass
    return living


def test_sigkill_with_four_agents_running_keeps_every_worktree(twelve: Path, agent: Path,
                                                               tmp_path: Path) -> None:
    env = {**os.environ, **loop_env(tmp_path, FORGE_TEST_MODE="hang")}
    loop = subprocess.Popen([*forge_argv(), "loop", "run", "--agent", f"{sys.executable} {agent}",
                             "--parallel", "4"], cwd=twelve, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        waiting.wait_for(lambda: len(agent_pids(tmp_path)) == 4, 60, what="four agents")
        waiting.wait_for(lambda: all((twelve / ".forge" / "worktrees" / f"00{n}" /
                                      f"item-00{n}.txt").exists() for n in range(1, 5)),
                         30, what="the agents' first writes")
    finally:
        loop.send_signal(signal.SIGKILL)
        loop.wait(timeout=30)
    pids = agent_pids(tmp_path)
    waiting.wait_for(lambda: not alive(pids), 10, what="no agent alive after the loop died")
    trees = [twelve / ".forge" / "worktrees" / f"00{n}" for n in range(1, 5)]
    assert all(tree.is_dir() for tree in trees)
    stop = run_forge("preflight", "--json", cwd=twelve)
    assert stop.returncode == 1
    reported = {t["itemId"]: t for t in json.loads(stop.stdout)["worktrees"]}
    assert sorted(reported) == ["001", "002", "003", "004"]
    assert all(t["dirty"] == [{"path": f"item-{i}.txt", "xy": "??"}]
               for i, t in reported.items())
    plan = json.loads(run_forge("reconcile", "--json", cwd=twelve).stdout)
    groups = [g["id"] for g in plan["groups"] if g.get("worktree")]
    assert groups == ["item-001", "item-002", "item-003", "item-004"]
    # reconcile: the half-done work is stashed (kept), the next run finishes everything
    args = [arg for group in groups for arg in ("--stash", group)]
    assert run_forge("reconcile", *args, cwd=twelve).returncode == 0
    assert git("stash", "list", cwd=twelve).count("stranded work from item") == 4
    assert run_forge("preflight", cwd=twelve).returncode == 0
    done = run_parallel(twelve, agent, 4, loop_env(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    commits = item_commits(twelve)
    assert sorted(commits) == [f"{n:03d}" for n in range(1, 13)]
    assert all(len(paths) == 1 for paths in commits.values())  # none committed twice
    trees = git("worktree", "list", "--porcelain", cwd=twelve)
    assert trees.count("worktree ") == 1, trees + done.stdout + done.stderr


#: Item 001 is done without a change, 002 writes its file a moment later, the others
#: work for two minutes (``FORGE_TEST_HANG``) or end at once.
HOLD_AGENT = r'''
import os, time
item = os.environ["FORGE_ITEM_ID"]
open(os.path.join(os.environ["FORGE_TEST_PIDS"], item), "w").write(str(os.getpid()))
if item == "002":
    time.sleep(0.5)
    open("item-002.txt", "w").write("work of item 002\n")
elif item != "001" and os.environ.get("FORGE_TEST_HANG"):
    time.sleep(120)
print("FORGE_DONE")
'''

#: A reference-transaction hook holding the first fast-forward of main (the merge
#: thread's) until it is killed, its pid in ``$HOLD_MARK``.
HOLD_FAST_FORWARD = """#!/bin/sh
[ "$1" = prepared ] || exit 0
if grep -q " refs/heads/main$" && [ ! -e "$HOLD_MARK" ]; then
    echo $$ > "$HOLD_MARK"
    exec sleep 120
fi
"""


def test_sigkill_between_done_marks_and_their_merge_loses_nothing(templates: Templates,
                                                                  tmp_path: Path) -> None:
    """A done item's mark is written without an fsync; the merge thread makes it and
    the journal durable just before it lands the item's work. SIGKILL at that instant —
    001's fast-forward held, 002 marked done behind it, 003 running — leaves every
    item's work where reconcile finds it: integrated by hand, and 003 run again, each
    item is on the branch once."""
    repo = templates.copy("parallel-three", lambda root: backlog_repo(
        root, "Item 1", "Item 2", "Item 3"), tmp_path / "repo")
    base = git("rev-parse", "main", cwd=repo).strip()
    agent, pids, mark = tmp_path / "agent.py", tmp_path / "pids", tmp_path / "held"
    agent.write_text(HOLD_AGENT)
    pids.mkdir()
    hook = repo / ".git" / "hooks" / "reference-transaction"
    hook.write_text(HOLD_FAST_FORWARD)
    hook.chmod(0o755)
    env = {**os.environ, "FORGE_TEST_PIDS": str(pids), "HOLD_MARK": str(mark)}
    loop = subprocess.Popen([*forge_argv(), "loop", "run", "--agent", f"{sys.executable} {agent}",
                             "--parallel", "3"], cwd=repo, env={**env, "FORGE_TEST_HANG": "1"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        waiting.wait_for(mark.exists, 60, what="001's fast-forward held")
        waiting.wait_for(lambda: backlog(repo)["002"]["status"] == "done", 60,
                         what="002 marked done behind it")
    finally:
        loop.send_signal(signal.SIGKILL)
        loop.wait(timeout=30)
        if mark.exists():
            os.kill(int(mark.read_text()), signal.SIGKILL)  # the fast-forward is refused
    started = {int(path.read_text()) for path in pids.iterdir()}
    waiting.wait_for(lambda: not alive(started), 10, what="no agent alive after the loop died")
    hook.unlink()
    items = backlog(repo)
    assert [items[i]["status"] for i in ("001", "002", "003")] == ["done", "done", "in_progress"]
    assert git("rev-parse", "main", cwd=repo).strip() == base  # nothing landed
    assert git("status", "--porcelain", cwd=repo) == " M .forge/backlog.json\n"
    assert (repo / ".forge/worktrees/002/item-002.txt").read_text() == "work of item 002\n"
    assert git("log", "-1", "--format=%s", "forge/001", cwd=repo) == "[forge] 001: Item 1\n"
    journaled = [json.loads(line) for line in
                 (repo / ".forge" / "events.ndjson").read_text().splitlines()]
    assert {(e["itemId"], e["signal"]) for e in journaled if e["type"] == "signal_parsed"} == {
        ("001", "done"), ("002", "done")}
    stop = run_forge("preflight", "--json", cwd=repo)
    assert stop.returncode == 1
    assert {t["itemId"] for t in json.loads(stop.stdout)["worktrees"]} >= {"001", "002"}
    # by hand: 001's commit integrated, 002's work committed in its worktree and integrated
    assert run_forge("reconcile", "--integrate", "001", cwd=repo).returncode == 6  # 002 waits
    assert run_forge("reconcile", "--commit", "item-002", cwd=repo).returncode == 6
    assert run_forge("reconcile", "--integrate", "002", cwd=repo).returncode == 0
    assert run_forge("preflight", cwd=repo).returncode == 0
    done = run_forge("loop", "run", "--agent", f"{sys.executable} {agent}", "--parallel", "3",
                     cwd=repo, env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert git("log", "--format=%s", f"{base}..main", cwd=repo).splitlines() == [
        "[forge] backlog: 003 done", "[forge] 003: Item 3",
        "[forge] 003: back to pending (process lost)",
        "[forge] 002: stranded work (reconciled)", "[forge] 001: Item 1"]
    assert git("show", "main:item-002.txt", cwd=repo) == "work of item 002\n"
    assert [item["status"] for item in backlog(repo).values()] == ["done"] * 3
    assert git("status", "--porcelain", cwd=repo) == ""
    assert git("worktree", "list", "--porcelain", cwd=repo).count("worktree ") == 1


def test_loop_stop_ends_every_agent_and_keeps_the_worktrees(twelve: Path, agent: Path,
                                                            tmp_path: Path) -> None:
    env = {**os.environ, **loop_env(tmp_path, FORGE_TEST_MODE="hang")}
    loop = subprocess.Popen([*forge_argv(), "loop", "run", "--agent", f"{sys.executable} {agent}",
                             "--parallel", "3"], cwd=twelve, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        waiting.wait_for(lambda: len(agent_pids(tmp_path)) == 3, 60, what="three agents")
        live = json.loads(run_forge("status", "--json", cwd=twelve).stdout)
        assert [(a["itemId"], a["worktree"]) for a in live["agents"]] == [
            (i, str(twelve / ".forge" / "worktrees" / i)) for i in ("001", "002", "003")]
        assert live["runningItems"] == ["001", "002", "003"]
        state = json.loads((twelve / ".forge" / "state.json").read_text())
        assert state["runningItems"] == ["001", "002", "003"]
        assert state["currentItem"] in state["runningItems"]
        shown = run_forge("status", cwd=twelve).stdout
        assert "on items 001, 002, 003" in shown
        assert "agent:    item 002 running since" in shown
        assert "in .forge/worktrees/002" in shown
        assert run_forge("loop", "stop", cwd=twelve).returncode == 0
        out, err = loop.communicate(timeout=60)
    finally:
        if loop.poll() is None:
            loop.kill()
            loop.wait(timeout=30)
    assert loop.returncode == 130, out + err
    assert json.loads((twelve / ".forge" / "state.json").read_text())["runningItems"] == []
    assert not alive(agent_pids(tmp_path))
    items = backlog(twelve)
    assert [items[i]["status"] for i in ("001", "002", "003")] == ["pending"] * 3
    assert git("status", "--porcelain", cwd=twelve) == ""  # the bookkeeping is committed
    assert run_forge("preflight", cwd=twelve).returncode == 1
    assert "worktrees are kept for git forge reconcile" in err
    trees = twelve / ".forge" / "worktrees"
    assert all((trees / i).is_dir() for i in ("001", "002", "003"))
    # the worktree made ahead for the next item, which never started, is gone
    assert not (trees / "004").exists()
    assert git("branch", "--list", "forge/004", cwd=twelve) == ""


def test_parallel_one_is_the_serial_loop(twelve: Path, agent: Path, tmp_path: Path) -> None:
    result = run_forge("loop", "run", "--agent", f"{sys.executable} {agent}", "--iterations",
                       "2", cwd=twelve, env=loop_env(tmp_path), timeout=120)
    assert result.returncode == 0, result.stderr
    starts = [r for r in records(tmp_path) if r["event"] == "start"]
    assert [r["cwd"] for r in starts] == [str(twelve)] * 2 and starts[0]["worktree"] is None
    assert git("log", "-1", "--format=%s", cwd=twelve) == "[forge] 002: Item 2\n"
    assert not (twelve / ".forge" / "worktrees").exists()
    refused = run_forge("loop", "run", "--agent", "true", "--parallel", "0", cwd=twelve)
    assert (refused.returncode, refused.stderr) == (2, "Error: --parallel must be at least 1\n")


def test_a_terminal_shows_a_line_per_running_agent(twelve: Path, agent: Path,
                                                   tmp_path: Path) -> None:
    session = PtySession("loop", "run", "--agent", f"{sys.executable} {agent}", "--parallel",
                         "3", "--iterations", "3", cwd=twelve,
                         env=loop_env(tmp_path, FORGE_TEST_SLEEP="1.5"))
    session.expect("001 Item 1 — ")
    screen = session.expect(".forge/worktrees/003")
    assert session.finish() == 0
    live = screen.split("loop ", 1)[1]
    for item in ("001", "002", "003"):
        assert f"  {item} Item {int(item)} — " in live and f".forge/worktrees/{item}" in live
    assert "\x1b[2A" in session.text  # the three lines are redrawn in place


def test_pause_on_needs_human_lets_the_running_agents_finish(twelve: Path, agent: Path,
                                                             tmp_path: Path) -> None:
    result = run_parallel(twelve, agent, 3, loop_env(tmp_path, FORGE_TEST_MODE="ask"),
                          "--pause-on-needs-human")
    assert result.returncode == 3, result.stdout + result.stderr
    items = backlog(twelve)
    assert items["001"]["status"] == "blocked" and items["001"]["needsHuman"] is True
    # the two started beside it finished and were integrated; nothing else started
    assert sorted(item_commits(twelve)) == ["002", "003"]
    assert [items[i]["status"] for i in ("004", "005")] == ["pending", "pending"]
    state = json.loads((twelve / ".forge" / "state.json").read_text())
    assert state["status"] == "paused_human"
    assert git("status", "--porcelain", cwd=twelve) == ""
    assert run_forge("preflight", cwd=twelve).returncode == 0  # its worktree held nothing
