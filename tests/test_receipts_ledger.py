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
