"""Two ``recover`` passes on one backlog never interleave: real concurrent processes,
many rounds, and the record and backlog checked against what serial passes leave."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import waiting
from builders import blocked_backlog
from helpers import forge_argv, git, run_forge, snapshot

from git_forge import decisions
from git_forge.locks import FileLock

IDS = ("001", "002", "003", "004")
ROUNDS = 6
#: Per round, started at once: two answer different items, one defers everything.
PASSES = (
    ("p0", "--answer", "001=red", "--answer", "003=green"),
    ("p1", "--defer", "c001"),
    ("p2", "--answer", "002=blue", "--answer", "001=black"),
)


def _project(root: Path, wait: float) -> Path:
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root)
    return blocked_backlog(root, {item_id: f"Which colour for {item_id}?" for item_id in IDS},
                           config=f"recover:\n  lockWaitSeconds: {wait}\n")


def _record(root: Path) -> list[dict]:
    return json.loads((root / ".forge" / "forge-decisions.json").read_text())["decisions"]


def _items(root: Path) -> dict[str, dict]:
    return {item["id"]: item
            for item in json.loads((root / ".forge" / "backlog.json").read_text())["items"]}


def test_concurrent_passes_are_serial_and_stamp_only_what_they_applied(
    tmp_path: Path
) -> None:
    base = _project(tmp_path / "base", wait=120)
    for round_number in range(ROUNDS):
        root = tmp_path / f"round-{round_number}"
        shutil.copytree(base, root, symlinks=True)
        processes = [
            subprocess.Popen(forge_argv() + ["recover", "--json", "--actor", actor, *args],
                             cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
            for actor, *args in PASSES
        ]
        reports, refused = {}, set()
        for (actor, *_), process in zip(PASSES, processes, strict=True):
            out, err = waiting.communicate(process, timeout=240)
            assert b"Traceback" not in err, (actor, err)
            if process.returncode == 2:
                # Run after a pass that settled the question it names: refused as a
                # serial pass would be, before writing anything.
                assert err.startswith(b"Error: no open question for "), (actor, err)
                refused.add(actor)
            else:
                reports[actor] = json.loads(out)
        entries = _record(root)
        assert not {e["recordedBy"] for e in entries} & refused, (round_number, entries)
        items = _items(root)
        latest = decisions.latest_entries(entries)
        for entry in entries:
            if entry["appliedAt"] is not None:
                # Only answers are stamped, and only by the pass that recorded them.
                assert entry["answer"] is not None, (round_number, entry)
                assert entry["appliedBy"] == entry["recordedBy"], (round_number, entry)
        for item_id in IDS:
            stamped = [e for e in entries if e["itemId"] == item_id and e["appliedAt"]]
            item = items[item_id]
            if stamped:  # the runner holds the one answer that was applied, and it is final
                assert len(stamped) == 1, (round_number, stamped)
                assert item["status"] == "pending", (round_number, item)
                assert item.get("humanAnswer") == stamped[0]["answer"], (round_number, item)
                assert latest[item_id] is stamped[0], (round_number, entries)
            else:  # never answered: still blocked, its latest decision an unapplied deferral
                assert item["status"] == "blocked", (round_number, item)
                assert latest[item_id]["deferred"] and latest[item_id]["appliedAt"] is None
        for actor, report in reports.items():
            applied = {a["itemId"] for a in report["applied"]}
            by_me = {e["itemId"] for e in entries if e["appliedBy"] == actor}
            assert applied == by_me, (round_number, actor, report)
        assert "001" in {e["itemId"] for e in entries if e["appliedAt"]}  # someone answered it


@pytest.fixture
def waits_half_a_second(tmp_path: Path) -> Path:
    return _project(tmp_path / "repo", wait=0.5)


def _files(root: Path) -> dict[str, bytes]:
    return {name: data for name, data in snapshot(root, skip_git=False).items()
            if not name.endswith(".lock")}


def test_a_second_pass_waits_then_refuses_naming_the_holder(waits_half_a_second: Path) -> None:
    root = waits_half_a_second
    lock = FileLock(root / ".forge" / "recover.lock")
    assert lock.try_acquire(holder="pid 4242 on testhost (git-forge recover) since then")
    try:
        before = _files(root)
        started = time.monotonic()
        result = run_forge("recover", "--answer", "001=red", cwd=root)
        assert time.monotonic() - started >= 0.5
        assert result.returncode == 2, result.stdout + result.stderr
        assert result.stderr == (
            "Error: another recover pass is running on this backlog (pid 4242 on testhost "
            "(git-forge recover) since then); waited 0.5s — let it finish, then run git forge "
            "recover again\n")
        assert _files(root) == before
        revoke = run_forge("decision", "revoke", "001", cwd=root)  # its own command, again
        assert revoke.returncode == 2 and revoke.stderr.endswith(
            "let it finish, then run git forge decision revoke again\n"), revoke.stderr
        assert _files(root) == before
        plan = run_forge("recover", "--plan", "--json", cwd=root)  # reading never waits
        assert plan.returncode == 0 and json.loads(plan.stdout)["questions"], plan.stderr
    finally:
        lock.release()
    after = run_forge("recover", "--answer", "001=red", "--json", cwd=root)
    assert json.loads(after.stdout)["applied"] == [
        {"itemId": "001", "via": "answer", "threaded": True}]


def test_a_killed_pass_never_blocks_the_next(waits_half_a_second: Path) -> None:
    root = waits_half_a_second
    code = ("import sys, time\nfrom git_forge.locks import FileLock\n"
            "lock = FileLock(sys.argv[1])\nlock.acquire()\nprint('held', flush=True)\n"
            "time.sleep(60)\n")
    holder = subprocess.Popen([sys.executable, "-c", code, str(root / ".forge" / "recover.lock")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert waiting.readline(holder) == "held\n"
        assert run_forge("recover", "--defer", "001", cwd=root).returncode == 2
    finally:
        holder.kill()
        waiting.wait_process(holder)
    assert run_forge("recover", "--defer", "001", cwd=root).returncode == 3  # needs-human


def test_a_lock_file_removed_by_its_holder_is_never_held_twice(tmp_path: Path) -> None:
    """A refused pass removes the lock file it created while still holding it: a
    waiter that had the removed file open must lock the path afresh, or it and the
    next comer would each hold a lock of their own on one path."""
    import threading

    from git_forge.locks import FileLock

    path = tmp_path / "recover.lock"
    first, second = FileLock(path), FileLock(path)
    first.acquire(timeout=1)
    waiting = threading.Thread(target=lambda: second.acquire(timeout=5))
    waiting.start()
    time.sleep(0.1)  # the waiter has the file open and waits on it
    first.release(remove=True)
    waiting.join(timeout=10)
    assert second.held and path.exists()
    assert not FileLock(path).try_acquire()
    second.release()
