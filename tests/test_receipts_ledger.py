"""The receipts ledger: a run's receipts summed in its own file, folded into the
project's ledger once when the next run starts, each receipt counted exactly once
whenever a fold is cut short, corrupt files refused and left as they were."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import git, record_fsyncs, run_forge

from git_forge.agents.receipt import Receipt
from git_forge.errors import StoreError
from git_forge.loop.receipts import (
    KEEP_RUNS,
    LedgerWriter,
    check_ledger,
    fold_runs,
    ledger_path,
    read_ledger,
    run_path,
    run_totals,
    spent_so_far,
)

PRICED = Receipt(duration_ms=1000, exit_code=0, input_tokens=10, output_tokens=5,
                 cost_usd=0.25)


def compact(path: Path) -> bytes:
    """What json.dumps gives for the file's document: the files are written so."""
    document = json.loads(path.read_bytes())
    return (json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def test_a_run_is_summed_in_its_file_and_folded_once_when_the_next_run_starts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = LedgerWriter(tmp_path)
    writer.record("run-1", "001", PRICED)
    writer.record("run-1", "001", PRICED)
    writer.record("run-1", "002", Receipt(duration_ms=5))
    assert not ledger_path(tmp_path).exists()  # a receipt never rewrites the history
    during = read_ledger(tmp_path)
    assert during.item("001").attempts == 2 and during.item("001").cost_usd == 0.5
    assert during.run("run-1")[0].attempts == 3 and list(during.runs) == ["run-1"]

    fold_runs(tmp_path)  # the next run's start
    assert json.loads(run_path(tmp_path).read_bytes())["folded"] is True
    ledger_bytes = ledger_path(tmp_path).read_bytes()
    assert list(json.loads(ledger_bytes)) == ["schemaVersion", "items", "runs"]
    after = read_ledger(tmp_path)  # in both files, counted once
    assert (after.items, after.runs) == (during.items, during.runs)
    fold_runs(tmp_path)  # nothing left to fold: nothing written
    assert ledger_path(tmp_path).read_bytes() == ledger_bytes
    # A fold cut short after the ledger's replace, before the mark: counted once, and
    # the next fold makes that ledger durable (its replace may have been killed before
    # its fsyncs), then only marks it.
    document = json.loads(run_path(tmp_path).read_bytes())
    run_path(tmp_path).write_text(json.dumps({**document, "folded": False}))
    assert read_ledger(tmp_path).items == during.items
    synced = record_fsyncs(monkeypatch)
    fold_runs(tmp_path)
    assert synced == [str(ledger_path(tmp_path)), str(tmp_path)]  # before the mark
    assert ledger_path(tmp_path).read_bytes() == ledger_bytes
    assert json.loads(run_path(tmp_path).read_bytes())["folded"] is True

    LedgerWriter(tmp_path).record("run-2", "001", PRICED)
    assert json.loads(run_path(tmp_path).read_bytes())["runId"] == "run-2"
    ledger = read_ledger(tmp_path)
    assert ledger.item("001").attempts == 3 and ledger.item("001").cost_usd == 0.75
    assert list(ledger.runs) == ["run-1", "run-2"]  # the latest run last
    assert run_totals(tmp_path, "run-1") == ledger.run("run-1")
    assert run_totals(tmp_path, "run-2") == ledger.run("run-2")
    assert ledger_path(tmp_path).read_bytes() == ledger_bytes  # run-1 is where it was


def test_a_receipt_costs_the_run_not_the_history(tmp_path: Path) -> None:
    """A long history is read at a run's start, never by a receipt: with receipts.json
    unreadable (a directory where the file would be) every receipt is still added."""
    ledger_path(tmp_path).mkdir()
    writer = LedgerWriter(tmp_path)
    for n in range(20):
        writer.record("run-1", f"{n % 4:03d}", PRICED)
    assert run_totals(tmp_path, "run-1")[0].attempts == 20
    with pytest.raises(StoreError):
        read_ledger(tmp_path)  # the whole ledger still needs it


def test_an_earlier_runs_file_is_folded_before_a_new_run_records(tmp_path: Path) -> None:
    # A run's start folds the last run; a writer that still finds one (a run whose
    # start did not get that far) folds it itself rather than overwrite it.
    LedgerWriter(tmp_path).record("run-1", "001", PRICED)
    LedgerWriter(tmp_path).record("run-2", "001", PRICED)
    ledger = read_ledger(tmp_path)
    assert ledger.item("001").attempts == 2 and list(ledger.runs) == ["run-1", "run-2"]
    assert list(json.loads(ledger_path(tmp_path).read_bytes())["runs"]) == ["run-1"]


def test_a_run_folded_while_it_records_is_refused_never_lost_silently(tmp_path: Path) -> None:
    writer = LedgerWriter(tmp_path)
    writer.record("run-1", "001", PRICED)
    fold_runs(tmp_path)  # what only a bug could do while run-1 still runs
    before = (run_path(tmp_path).read_bytes(), ledger_path(tmp_path).read_bytes())
    with pytest.raises(StoreError, match="while it ran"):
        writer.record("run-1", "001", PRICED)
    assert (run_path(tmp_path).read_bytes(), ledger_path(tmp_path).read_bytes()) == before


def test_the_files_are_what_json_dumps_gives_and_every_receipt_counts_once(
        tmp_path: Path) -> None:
    """Texts kept between receipts never drift from the document, through runs,
    folds and runs dropped from the ledger: after every step the bytes are
    json.dumps' own, and the attempts add up to the receipts recorded."""
    rng = random.Random(7)
    names = ["001", "ünï", 'q"uote', "x\\y", "long-" + "é" * 30]
    writer, run = LedgerWriter(tmp_path), 0
    for step in range(400):
        if rng.random() < 0.15:  # a new run: its start folds the last one
            run += 1
            fold_runs(tmp_path)
            writer = LedgerWriter(tmp_path)
        receipt = Receipt(duration_ms=rng.randrange(10_000), exit_code=0,
                          input_tokens=rng.randrange(50),
                          cost_usd=rng.choice([None, 0.1, 1e-7, 3.25]))
        writer.record(f"run-{run}", rng.choice(names) + str(rng.randrange(5)), receipt)
        for path in (run_path(tmp_path), ledger_path(tmp_path)):
            if path.exists():
                assert path.read_bytes() == compact(path)
        ledger = read_ledger(tmp_path)
        assert sum(totals.attempts for totals in ledger.items.values()) == step + 1
    assert run > KEEP_RUNS  # older runs were dropped from the ledger, their items kept
    assert len(read_ledger(tmp_path).runs) == KEEP_RUNS


FOLD_AFTER_READY = """
import sys
from pathlib import Path
from git_forge.loop.receipts import fold_runs
print("ready", flush=True)
fold_runs(Path(sys.argv[1]))
print("folded", flush=True)
"""


def test_a_fold_killed_at_any_instant_counts_every_receipt_once(tmp_path: Path) -> None:
    """SIGKILL a fold at random instants: the files always parse, every receipt is
    counted exactly once, and the next fold finishes what was cut short."""
    rng = random.Random(11)
    once = {"attempts": 1, "durationMs": 1000, "tokens": {"input": 10, "output": 5,
                                                          "cached": 0}, "costUsd": 0.25}
    history = {f"{n:05d}": once for n in range(3000)}  # so that a fold takes a moment
    ledger_path(tmp_path).write_text(json.dumps(
        {"schemaVersion": "1", "items": history,
         "runs": {"run-0": {"totals": {**once, "attempts": 3000}, "items": history}}}))
    expected = 3000
    outcomes: set[str] = set()
    for attempt in range(1, 13):
        writer = LedgerWriter(tmp_path)
        for n in range(attempt):
            writer.record(f"run-{attempt}", f"{n:05d}", PRICED)
        expected += attempt
        child = subprocess.Popen([sys.executable, "-c", FOLD_AFTER_READY, str(tmp_path)],
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n"
        time.sleep(rng.uniform(0, 0.06))
        child.send_signal(signal.SIGKILL)
        rest = child.communicate(timeout=30)[0]
        outcomes.add("finished" if "folded" in rest else "killed")
        for path in (run_path(tmp_path), ledger_path(tmp_path)):
            json.loads(path.read_bytes())  # never half a file
        ledger = read_ledger(tmp_path)
        assert sum(totals.attempts for totals in ledger.items.values()) == expected, attempt
        assert ledger.run(f"run-{attempt}")[0].attempts == attempt
        fold_runs(tmp_path)
        assert json.loads(run_path(tmp_path).read_bytes())["folded"] is True
        assert json.loads(ledger_path(tmp_path).read_bytes())["runs"][f"run-{attempt}"][
            "totals"]["attempts"] == attempt
        assert not [name for directory in (tmp_path, run_path(tmp_path).parent)
                    for name in os.listdir(directory) if name.endswith(".tmp")]
    assert "killed" in outcomes  # at least one kill landed inside the fold


def test_corrupt_files_are_refused_and_left_alone(tmp_path: Path) -> None:
    writer = LedgerWriter(tmp_path)
    writer.record("run-1", "001", PRICED)
    for torn in (b'{"runId": ', b"[1, 2]\n", b"null\n", b'{"runId": "run-1", "items": [1]}',
                 b'{"runId": "run-1", "totals": 3}'):
        run_path(tmp_path).write_bytes(torn)
        for refused in (lambda: writer.record("run-1", "001", PRICED),
                        lambda: fold_runs(tmp_path), lambda: check_ledger(tmp_path),
                        lambda: run_totals(tmp_path, "run-1"), lambda: read_ledger(tmp_path)):
            with pytest.raises(StoreError, match="corrupt"):
                refused()
            assert run_path(tmp_path).read_bytes() == torn
        assert spent_so_far(tmp_path, ["001"]) == {}

    run_path(tmp_path).unlink()
    LedgerWriter(tmp_path).record("run-2", "001", PRICED)
    before = run_path(tmp_path).read_bytes()
    for torn in (b'{"items": ', b"[1, 2]\n", b'"hello"\n', b"null\n"):
        ledger_path(tmp_path).write_bytes(torn)
        for refused in (lambda: fold_runs(tmp_path), lambda: check_ledger(tmp_path),
                        lambda: read_ledger(tmp_path)):
            with pytest.raises(StoreError, match="corrupt"):
                refused()
        assert ledger_path(tmp_path).read_bytes() == torn
        assert run_path(tmp_path).read_bytes() == before  # not marked folded either
    ledger_path(tmp_path).write_bytes(b'{"items": ')
    with pytest.raises(StoreError, match="corrupt"):
        run_totals(tmp_path, "run-1")
    assert run_totals(tmp_path, "run-2")[0].attempts == 1  # the run's own file answers


def test_a_run_start_parses_the_history_once(tmp_path: Path) -> None:
    # The check hands what it parsed to the fold, which uses it while the file holds
    # those bytes, and reads the file again when another writer changed it since.
    LedgerWriter(tmp_path).record("run-1", "001", PRICED)
    fold_runs(tmp_path)
    LedgerWriter(tmp_path).record("run-2", "001", PRICED)
    known = check_ledger(tmp_path)
    assert known is not None and known[0] == ledger_path(tmp_path).read_bytes()
    known[1]["items"]["001"]["attempts"] = 40  # what the fold adds to, if it uses it
    fold_runs(tmp_path, known)
    assert read_ledger(tmp_path).item("001").attempts == 41
    LedgerWriter(tmp_path).record("run-3", "001", PRICED)
    stale = check_ledger(tmp_path)
    assert stale is not None
    stale[1]["items"]["001"]["attempts"] = 1000
    ledger_path(tmp_path).write_bytes(ledger_path(tmp_path).read_bytes() + b" ")  # changed
    fold_runs(tmp_path, stale)
    assert read_ledger(tmp_path).item("001").attempts == 42


def test_one_runs_readers_agree_with_the_whole_ledger(tmp_path: Path) -> None:
    # What a run's summary, a text status and recover read — one run, a few items —
    # agrees with the whole read, for a run in its file and for folded ones.
    check_ledger(tmp_path)  # no ledger yet: nothing to refuse
    assert run_totals(tmp_path, "run-1") == read_ledger(tmp_path).run("run-1")
    for run in range(3):
        if run:
            fold_runs(tmp_path)
        writer = LedgerWriter(tmp_path)
        for n in range(14):
            writer.record(f"run-{run}", f"{(n + run) % 7:03d}", PRICED if n % 2 else Receipt())
    ledger = read_ledger(tmp_path)
    for run_id in ("run-0", "run-1", "run-2", "run-9", None):
        assert run_totals(tmp_path, run_id) == ledger.run(run_id), run_id
    ids = ["000", "003", "006", "nope"]
    expected = {item_id: ledger.item(item_id).describe() for item_id in ids
                if ledger.item(item_id).cost_usd is not None}
    assert spent_so_far(tmp_path, ids) == expected and len(expected) == 3
    fold_runs(tmp_path)
    assert spent_so_far(tmp_path, ids) == expected


def test_a_run_records_through_the_loop_and_the_next_run_folds_it(tmp_path: Path) -> None:
    """End to end: a generic agent's attempts are summed in the run file; the next
    `loop run` folds them before its own, and status shows the last run's."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    assert run_forge("init", cwd=repo).returncode == 0
    backlog = repo / ".forge" / "backlog.json"
    document = json.loads(backlog.read_text())
    document["items"] = [{"id": f"{n:03d}", "type": "feature", "priority": 1,
                          "title": f"Item {n}", "status": "pending"} for n in (1, 2, 3)]
    backlog.write_text(json.dumps(document, indent=2) + "\n")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "backlog", cwd=repo)
    agent = tmp_path / "agent.sh"
    agent.write_text("#!/bin/sh\ncat >/dev/null\necho FORGE_DONE\n")
    agent.chmod(0o755)
    state = repo / ".forge"
    for iterations, done in ((2, 2), (1, 3)):
        ran = run_forge("loop", "run", "--agent", str(agent), "--iterations", str(iterations),
                        cwd=repo)
        assert ran.returncode == 0, ran.stderr
        run_id = json.loads((state / "state.json").read_text())["runId"]
        assert json.loads(run_path(state).read_bytes())["runId"] == run_id
        assert sum(totals.attempts for totals in read_ledger(state).items.values()) == done
        assert run_totals(state, run_id)[0].attempts == iterations
    assert list(json.loads(ledger_path(state).read_bytes())["runs"]) != []  # the first run
    # Both files are ignored — the run's by its directory's own rules, which no
    # project's .gitignore (one written before that directory existed) needs to know.
    assert "run/" not in (state / ".gitignore").read_text()
    assert git("status", "--porcelain", "--ignored", cwd=repo).splitlines().count(
        "!! .forge/run/") == 1
    assert git("status", "--porcelain", cwd=repo).strip() == ""
    shown = run_forge("status", "--json", cwd=repo)
    assert json.loads(shown.stdout)["costs"]["run"]["attempts"] == 1
