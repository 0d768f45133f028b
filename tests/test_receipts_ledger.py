"""The loop's ledger writer: every receipt summed, a foreign write read before the
next one (never overwritten), a corrupt ledger refused and left as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from git_forge.agents.receipt import Receipt
from git_forge.errors import StoreError
from git_forge.loop.receipts import LedgerWriter, ledger_path, read_ledger, record

PRICED = Receipt(duration_ms=1000, exit_code=0, input_tokens=10, output_tokens=5,
                 cost_usd=0.25)


def test_the_writer_sums_and_reads_another_writers_change(tmp_path: Path) -> None:
    writer = LedgerWriter(tmp_path)
    writer.record("run-1", "001", PRICED)
    record(tmp_path, "run-0", "002", PRICED)  # another writer, between two of ours
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
