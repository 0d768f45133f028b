"""The loop's ledger writer: every receipt summed, a foreign write read before the
next one (never overwritten), a corrupt ledger refused and left as it was."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from git_forge.agents.receipt import Receipt
from git_forge.errors import StoreError
from git_forge.loop.receipts import KEEP_RUNS, LedgerWriter, ledger_path, read_ledger

PRICED = Receipt(duration_ms=1000, exit_code=0, input_tokens=10, output_tokens=5,
                 cost_usd=0.25)


def test_the_writer_sums_and_reads_another_writers_change(tmp_path: Path) -> None:
    writer = LedgerWriter(tmp_path)
    writer.record("run-1", "001", PRICED)
    LedgerWriter(tmp_path).record("run-0", "002", PRICED)  # another writer, between ours
    writer.record("run-1", "001", PRICED)
    ledger = read_ledger(tmp_path)
    assert ledger.item("001").attempts == 2 and ledger.item("001").cost_usd == 0.5
    assert ledger.item("002").attempts == 1
    assert ledger.run("run-1")[0].attempts == 2
    assert list(ledger.runs) == ["run-0", "run-1"]  # the latest run last
    document = json.loads(ledger_path(tmp_path).read_text())
    assert list(document) == ["schemaVersion", "items", "runs"]


def test_a_corrupt_ledger_is_refused_and_left_alone(tmp_path: Path) -> None:
    writer = LedgerWriter(tmp_path)
    writer.record("run-1", "001", PRICED)
    ledger_path(tmp_path).write_bytes(b'{"items": ')
    with pytest.raises(StoreError, match="corrupt"):
        writer.record("run-1", "001", PRICED)
    assert ledger_path(tmp_path).read_bytes() == b'{"items": '


def test_the_file_is_what_json_dumps_gives_whatever_was_added(tmp_path: Path) -> None:
    """Texts kept between receipts never drift from the document: after every
    receipt (own, foreign, old runs dropped) the bytes are json.dumps' own."""
    rng = random.Random(7)
    writer = LedgerWriter(tmp_path)
    names = ["001", "ünï", 'q"uote', "x\\y", "long-" + "é" * 30]
    for step in range(120):
        run_id = f"run-{rng.randrange(60)}"
        item_id = rng.choice(names) + str(rng.randrange(5))
        receipt = Receipt(duration_ms=rng.randrange(10_000), exit_code=0,
                          input_tokens=rng.randrange(50),
                          cost_usd=rng.choice([None, 0.1, 1e-7, 3.25]))
        if step % 37 == 0:
            LedgerWriter(tmp_path).record(run_id, item_id, receipt)  # another writer
        else:
            writer.record(run_id, item_id, receipt)
        raw = ledger_path(tmp_path).read_bytes()
        expected = json.dumps(json.loads(raw), ensure_ascii=False, separators=(",", ":"))
        assert raw == (expected + "\n").encode()
    ledger = read_ledger(tmp_path)
    assert len(ledger.runs) <= KEEP_RUNS
    assert sum(totals.attempts for totals in ledger.items.values()) == 120


def test_one_runs_readers_agree_with_the_whole_ledger(tmp_path: Path) -> None:
    # What a run's summary, a text status and recover read — one run, a few items —
    # is read without building every item's totals, and agrees with the whole read.
    from git_forge.loop.receipts import check_ledger, run_totals, spent_so_far

    check_ledger(tmp_path)  # no ledger yet: nothing to refuse
    assert run_totals(tmp_path, "run-1") == (read_ledger(tmp_path).run("run-1"))
    writer = LedgerWriter(tmp_path)
    for n in range(40):
        writer.record(f"run-{n % 3}", f"{n % 7:03d}", PRICED if n % 2 else Receipt())
    ledger = read_ledger(tmp_path)
    for run_id in ("run-0", "run-1", "run-2", "run-9", None):
        assert run_totals(tmp_path, run_id) == ledger.run(run_id), run_id
    ids = ["000", "003", "006", "nope"]
    assert spent_so_far(tmp_path, ids) == {
        item_id: ledger.item(item_id).describe() for item_id in ids
        if ledger.item(item_id).cost_usd is not None}
    ledger_path(tmp_path).write_bytes(b'{"runs": ')
    with pytest.raises(StoreError, match="corrupt"):
        check_ledger(tmp_path)
    with pytest.raises(StoreError, match="corrupt"):
        run_totals(tmp_path, "run-1")
    assert spent_so_far(tmp_path, ids) == {}
    assert ledger_path(tmp_path).read_bytes() == b'{"runs": '
