"""``git forge status``: state.json, backlogSummary, topology, lock liveness, runners."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import waiting
from builders import blocked, item, write_backlog
from helpers import git, run_forge

from git_forge.cli.status import render_status
from git_forge.locks import FileLock
from git_forge.loop.state import RunState, write_state
from git_forge.runner import runner_for
from git_forge.status_report import loop_status
from git_forge.workspace import locate


@pytest.fixture
def repo(git_repo: Path) -> Path:
    write_backlog(git_repo / ".forge", [
        item("001", "done"),
        blocked("002", "which db?"),
        item("003", "blocked", deferred=True, dependsOn=["002"]),
        item("004", "blocked", dependsOn=["003"]),
        item("005", "pending", dependsOn=["002"]),
        item("006", "in_progress"),
    ])
    return git_repo


def status_of(repo: Path) -> dict:
    workspace = locate(repo)
    return loop_status(workspace, runner_for(workspace))


def test_status_without_a_run(repo: Path) -> None:
    document = status_of(repo)
    assert document["loopState"] == "idle"
    assert [document[k] for k in ("iteration", "maxIterations", "currentItem", "lastSignal",
                                  "startedAt", "error")] == [None] * 6
    assert document["backlogSummary"] == {"pending": 1, "inProgress": 1, "blocked": 3,
                                          "needsHuman": 1, "deferred": 1, "done": 1, "total": 6}
    assert document["topology"] == {
        "maxChainDepth": 3, "selectable": 0,
        "starvation": {"starved": True, "blockingRoots": [{"id": "002", "gatedCount": 3}]},
        "waitingOn": [{"ids": ["002"], "kind": "needs-human", "gatedIds": ["003", "004", "005"],
                       "gatedCount": 3}]}
    assert document["lock"] == {"present": False, "alive": False, "holder": None}
    assert (document["statusSchemaVersion"], document["backlogDir"], document["stateDir"],
            document["runner"]) == ("1", ".forge", ".forge", "embedded")


def test_status_reads_state_json(repo: Path) -> None:
    write_state(repo / ".forge", RunState(status="running", iteration=3, max_iterations=50,
                                          current_item="006", last_signal="blocked",
                                          started_at="2026-02-01T10:00:00Z", run_id="r1"))
    lock = FileLock(repo / ".forge" / "loop.lock")  # a live loop holds it for the run
    assert lock.try_acquire(holder="run r1 started 2026-02-01T10:00:00Z (pid 1)")
    try:
        document = status_of(repo)
    finally:
        lock.release()
    assert [document[k] for k in ("loopState", "iteration", "maxIterations", "currentItem",
                                  "lastSignal", "startedAt")] == [
        "running", 3, 50, "006", "blocked", "2026-02-01T10:00:00Z"]
    lines = render_status(document)
    assert lines[0] == "loop:     running (iteration 3/50), on item 006"
    assert document["runningItems"] == ["006"]
    assert lines[1] == ("backlog:  6 items: 1 pending, 1 in progress, 3 blocked "
                        "(1 needs human, 1 deferred), 1 done")
    assert lines[2] == ("topology: max chain depth 3, 0 selectable; starved, waiting on 002 "
                        "(needs human) gating 003, 004, 005")


def test_a_blocked_item_below_a_done_root_is_named_not_a_cycle(git_repo: Path) -> None:
    backlog = git_repo / ".forge"
    backlog.mkdir()
    items = [item("001", "done"),
             item("002", "blocked", blockedReason="staging is down", dependsOn=["001"]),
             item("003", "pending", dependsOn=["002"])]
    (backlog / "backlog.json").write_text(json.dumps(
        {"schemaVersion": "1", "project": "p", "description": "", "items": items}))
    document = json.loads(run_forge("status", "--json", cwd=git_repo).stdout)
    # feature-forge's starvation (no blocking *root*) is kept as it is ...
    assert document["topology"]["starvation"] == {"starved": True, "blockingRoots": []}
    # ... and what the backlog waits on is named beside it.
    assert document["topology"]["waitingOn"] == [
        {"ids": ["002"], "kind": "blocked", "gatedIds": ["003"], "gatedCount": 1}]
    text = run_forge("status", cwd=git_repo).stdout
    assert ("topology: max chain depth 3, 0 selectable; starved, waiting on 002 (blocked) "
            "gating 003\n") in text
    assert "cycle" not in text


def test_a_dead_loop_is_said_to_be_dead(repo: Path) -> None:
    write_state(repo / ".forge", RunState(status="running", iteration=3, max_iterations=50,
                                          current_item="009", started_at="2026-02-01T10:00:00Z",
                                          run_id="r1"))
    document = status_of(repo)
    assert document["loopState"] == "stopped"
    assert document["liveness"] == {"loopAlive": False, "endedWithoutShutdown": True,
                                    "runId": "r1", "orphans": []}
    lines = render_status(document)
    assert lines[0] == ("loop:     not running (last run r1 ended without shutting down; "
                        "lock free)")
    assert not any("running" in line and "lock:" in line for line in lines)
    # ... and what comes of what it left: its item, and the tree preflight looks at
    assert lines[1] == ("next:     009 in progress when it died: the next loop run puts it "
                        "back to pending; git forge preflight shows what it left in the tree")


def test_a_stopped_run_names_the_item_it_was_on_not_one_it_is_on(repo: Path) -> None:
    """A stopped run's state keeps its last item (reconcile attributes what it left
    to it); status says it *was* on it, as the run is over."""
    write_state(repo / ".forge", RunState(status="stopped", iteration=1, max_iterations=50,
                                          current_item="001", run_id="r2"))
    lines = render_status(status_of(repo))
    assert lines[0] == "loop:     stopped (iteration 1/50), was on item 001"
    assert not any(line.startswith("next:") for line in lines)


@pytest.mark.parametrize(("status", "words"), [
    ("paused_human", "paused for a human"), ("iterations_complete", "iteration limit reached")])
def test_a_runs_status_is_said_in_words(repo: Path, status: str, words: str) -> None:
    """The text says what happened; --json keeps the identifier."""
    write_state(repo / ".forge", RunState(status=status, iteration=3, max_iterations=3,
                                          run_id="r3"))
    shown = run_forge("status", cwd=repo)
    assert shown.stdout.splitlines()[0] == f"loop:     {words} (iteration 3/3)"
    assert status not in shown.stdout
    assert json.loads(run_forge("status", "--json", cwd=repo).stdout)["loopState"] == status


@pytest.mark.parametrize("content", [b"{torn", b"null", b"[1]"])
def test_a_corrupt_state_file_is_reported_not_raised(repo: Path, content: bytes) -> None:
    (repo / ".forge" / "state.json").write_bytes(content)
    result = run_forge("status", "--json", cwd=repo)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["loopState"] == "unknown"
    assert "state.json is corrupt" in document["error"]
    assert document["backlogSummary"]["total"] == 6
    assert (repo / ".forge" / "state.json").read_bytes() == content
    text = run_forge("status", cwd=repo).stdout
    assert "error:    " in text and "state.json is corrupt" in text


def test_lock_liveness_follows_the_holder(repo: Path) -> None:
    lock = repo / ".forge" / "loop.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from git_forge.locks import FileLock\n"
         "lock = FileLock(sys.argv[1]); lock.acquire(holder='run r1 since 10:00')\n"
         "print('held', flush=True); sys.stdin.read()", str(lock)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert waiting.readline(holder).strip() == "held"
        result = run_forge("status", "--json", cwd=repo)
        assert json.loads(result.stdout)["lock"] == {"present": True, "alive": True,
                                                     "holder": "run r1 since 10:00"}
        assert "lock:     held by run r1 since 10:00" in run_forge("status", cwd=repo).stdout
    finally:
        holder.stdin.close()
        waiting.wait_process(holder, timeout=30)
    # The holder is gone: the file stays, nothing is alive — no PID is ever consulted.
    assert status_of(repo)["lock"] == {"present": True, "alive": False, "holder": None}


def test_status_through_an_external_runner(repo: Path) -> None:
    (repo / "forge.config.json").write_text(json.dumps({"loopRunner": {"bin": "git-forge"}}))
    result = run_forge("status", "--json", cwd=repo)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["runner"] == "external (git-forge)"
    assert document["backlogSummary"]["needsHuman"] == 1
    assert document["stateDir"] == ".forge/.rauf"

    (repo / "forge.config.json").write_text(json.dumps(
        {"loopRunner": {"bin": "git-forge", "listCommand": "{bin} backlog list --status x"}}))
    failed = run_forge("status", cwd=repo)
    assert failed.returncode == 2 and failed.stdout == ""
    assert failed.stderr.startswith("Error: `")
    assert "exited with status 2: Error: unknown status 'x'" in failed.stderr


def test_status_refusals(git_repo: Path, repo: Path) -> None:
    for args, fragment in ((["status", "--backlog", "nowhere"], "no backlog at"),
                           (["status", "no-such-dir"], "not a directory")):
        result = run_forge(*args, cwd=git_repo)
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.startswith("Error: ") and fragment in result.stderr


def test_costs_without_a_ledger_are_what_an_empty_ledger_gives(repo: Path) -> None:
    # status answers a missing receipts.json without importing the receipts: the
    # same document an empty ledger gives, for any run.
    from git_forge.loop.receipts import Ledger, costs_json, ledger_path
    from git_forge.status_report import no_costs

    for run_id in (None, "20250101T000000Z-abcdef"):
        assert no_costs() == costs_json(Ledger({}, {}), run_id)
    assert not ledger_path(repo / ".forge").exists()
    assert status_of(repo)["costs"] == no_costs()
    assert no_costs() is not no_costs() and no_costs()["items"] is not no_costs()["items"]


def test_the_text_status_reads_the_last_runs_costs_alone(repo: Path) -> None:
    # A ledger keeps every item it ever summed; the text status shows the last run's
    # totals only, read without a Totals per item — the same figures as --json's.
    from git_forge.agents.receipt import Receipt
    from git_forge.loop.receipts import (
        LedgerWriter,
        costs_json,
        ledger_path,
        read_ledger,
        run_costs_json,
        run_path,
    )

    state_dir = repo / ".forge"
    writer = LedgerWriter(state_dir)
    for n in range(300):  # an older run's items
        writer.record("run-old", f"{n:03d}", Receipt(duration_ms=5, input_tokens=10))
    writer.record("run-last", "005", Receipt(duration_ms=7, input_tokens=1500,
                                             output_tokens=20, cost_usd=0.25))
    writer.record("run-last", "005", Receipt(duration_ms=3, cost_usd=0.5))
    write_state(state_dir, RunState(status="iterations_complete", run_id="run-last"))
    ledger = read_ledger(state_dir)
    for run_id in ("run-last", "run-old", "no-such-run", None):
        assert run_costs_json(state_dir, run_id) == costs_json(ledger, run_id)["run"], run_id
    workspace = locate(repo)
    text = loop_status(workspace, runner_for(workspace), item_costs=False)
    full = status_of(repo)
    assert text["costs"] == {"run": full["costs"]["run"]} and len(full["costs"]["items"]) == 300
    assert {key: value for key, value in text.items() if key != "costs"} == {
        key: value for key, value in full.items() if key != "costs"}
    shown = run_forge("status", cwd=repo)
    assert shown.returncode == 0
    assert "spent:    2 attempts, 1.5k tokens in / 20 out, $0.75 in the last run" in \
        shown.stdout.splitlines()
    assert render_status(text) == render_status(full)
    # The last run's figures come from its own file: a torn history is --json's to report.
    ledger_path(state_dir).write_text("{ torn")
    assert loop_status(workspace, runner_for(workspace), item_costs=False)["costs"] == \
        text["costs"]
    assert status_of(repo)["costs"] is None  # unreadable: the rest is still reported
    run_path(state_dir).write_text("{ torn")
    assert loop_status(workspace, runner_for(workspace), item_costs=False)["costs"] is None
    assert run_forge("status", cwd=repo).returncode == 0


#: An agent that writes 3000 bytes of output, then works on (sleeps) until stopped.
TALKING_AGENT = r'''
import sys, time
sys.stdout.write("x" * 2999 + "\n")
sys.stdout.flush()
time.sleep(120)
'''


def test_a_running_agents_output_is_counted_as_proc_list_counts_it(tmp_path: Path) -> None:
    """status and proc list ask the one count (the spool's, as it grows), not the
    manifest's last durable cursor, which says 0 while the agent runs."""
    from builders import backlog_repo
    from helpers import forge_argv

    root = backlog_repo(tmp_path / "talking", "Talk")
    agent = tmp_path / "agent.py"
    agent.write_text(TALKING_AGENT)
    loop = subprocess.Popen([*forge_argv(), "loop", "run", "--agent",
                             f"{sys.executable} {agent}"], cwd=root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def listed() -> list[dict]:
            rows = json.loads(run_forge("proc", "list", "--json", cwd=root).stdout or "[]")
            return [row for row in rows if row["state"] == "running"
                    and row["total_bytes"] == 3000]

        waiting.wait_for(listed, 30, what="the agent's 3000 bytes in proc list")
        document = json.loads(run_forge("status", "--json", cwd=root).stdout)
        assert [agent["outputBytes"] for agent in document["agents"]] == [3000]
        assert "2.9 KiB of output" in run_forge("status", cwd=root).stdout
        assert run_forge("loop", "stop", cwd=root).returncode == 0
        loop.wait(timeout=60)
    finally:
        if loop.poll() is None:
            waiting.kill_tree(loop.pid)
            loop.wait(timeout=30)


def test_worktrees_git_cannot_list_are_reported_not_hidden(repo: Path) -> None:
    """A git failure while the items' worktrees are read (here a worktree's index that
    is not an index) leaves the list empty and says why; status still answers, exit 0."""
    tree = repo / ".forge" / "worktrees" / "006"
    git("worktree", "add", "--quiet", "-b", "forge/006", str(tree), cwd=repo)
    fine = json.loads(run_forge("status", "--json", cwd=repo).stdout)
    assert ([entry["itemId"] for entry in fine["worktrees"]], fine["worktreesError"]) == (
        ["006"], None)
    index = Path(git("rev-parse", "--git-dir", cwd=tree).strip()) / "index"
    index.write_bytes(b"not an index")
    result = run_forge("status", "--json", cwd=repo)
    assert (result.returncode, result.stderr) == (0, "")
    document = json.loads(result.stdout)
    assert document["worktrees"] == [] and "index" in document["worktreesError"]
    shown = run_forge("status", cwd=repo)
    assert shown.returncode == 0
    assert f"worktree: none listed: {document['worktreesError']}" in shown.stdout
