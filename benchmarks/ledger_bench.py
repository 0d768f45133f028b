"""Benchmark: what the receipts ledger costs as a project's history grows.

A project's ledger keeps every item ever summed (``receipts.json``); a run sums its
own receipts in ``run/receipts.json``, folded into the ledger when the next run
starts. For histories of 2,000, 20,000 and 100,000 items (ten earlier runs), each
in a fresh state dir, this times — medians of ``--rounds`` rounds:

* a run's start: the check of both files and the fold of the last run's 30
  receipts into the history (``check_ledger`` + ``fold_runs``);
* the first receipt of a run and each later one (``LedgerWriter.record``);
* what the loop's summary and the text ``status`` read: the last run's totals
  (``run_totals``), and what ``status --json`` reads: the whole ledger.

Goal: a receipt's cost flat in the history (only a run's start and ``status
--json`` read the history, once each).

Usage: ``python benchmarks/ledger_bench.py [--rounds N] [--sizes 2000,20000,100000]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from git_forge.agents.receipt import Receipt
from git_forge.loop.receipts import (
    LedgerWriter,
    check_ledger,
    fold_runs,
    ledger_path,
    read_ledger,
    run_totals,
)

RECEIPT = Receipt(duration_ms=1200, exit_code=0, input_tokens=1000, output_tokens=200,
                  cost_usd=0.01)
TOTALS = {"attempts": 1, "durationMs": 1000, "tokens": {"input": 10, "output": 5, "cached": 0},
          "costUsd": 0.1}
RUN_RECEIPTS = 30


def history(state_dir: Path, items: int) -> None:
    """A ledger of ``items`` items over ten earlier runs, and the last run's receipts
    still in its own file (to fold)."""
    state_dir.mkdir()
    runs = {f"run-{k}": {"totals": TOTALS, "items": {
        f"{n:06d}": TOTALS for n in range(k * items // 10, (k + 1) * items // 10)}}
        for k in range(10)}
    document = {"schemaVersion": "1", "items": {f"{n:06d}": TOTALS for n in range(items)},
                "runs": runs}
    ledger_path(state_dir).write_text(json.dumps(document, separators=(",", ":")) + "\n")
    writer = LedgerWriter(state_dir)
    for n in range(RUN_RECEIPTS):
        writer.record("run-last", f"{n:06d}", RECEIPT)


def ms(call) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def one_round(state_dir: Path) -> dict[str, float]:
    figures = {"run start (check + fold)": ms(lambda: fold_runs(state_dir,
                                                                  check_ledger(state_dir)))}
    writer = LedgerWriter(state_dir)
    figures["first receipt"] = ms(lambda: writer.record("run-new", "000000", RECEIPT))
    later = [ms(lambda n=n: writer.record("run-new", f"{n % 7:06d}", RECEIPT))
             for n in range(RUN_RECEIPTS)]
    figures["a later receipt (median)"] = statistics.median(later)
    figures["the last run's totals"] = ms(lambda: run_totals(state_dir, "run-new"))
    figures["the whole ledger (status --json)"] = ms(lambda: read_ledger(state_dir))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", default="2000,20000,100000")
    args = parser.parse_args()
    for items in (int(size) for size in args.sizes.split(",")):
        rounds: list[dict[str, float]] = []
        for _ in range(args.rounds):
            work = Path(tempfile.mkdtemp(prefix="git-forge-ledger-bench-"))
            try:
                history(work / "state", items)
                rounds.append(one_round(work / "state"))
            finally:
                shutil.rmtree(work, ignore_errors=True)
        print(f"history of {items:,} items, medians of {args.rounds} rounds:")
        for name in rounds[0]:
            print(f"  {name + ':':36s} {statistics.median(r[name] for r in rounds):8.2f} ms")


if __name__ == "__main__":
    main()
