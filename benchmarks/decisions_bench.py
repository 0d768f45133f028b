"""Benchmark: the decision record with 10,000 entries on file.

Prints the time of one `record` (an append that rewrites the file atomically under
its sidecar lock) and of one `list --unapplied`, both in-process (the core) and
through the CLI (a full process start, as an operator or a hook pays it).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from timing import timed

from git_forge import decisions
from git_forge.clock import wire_now
from git_forge.jsonfile import write_json

ENTRIES = 10_000


def seed(backlog: Path) -> decisions.DecisionRecord:
    rec = decisions.open_record(backlog, ".forge")
    rec.path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "schemaVersion": "1", "feature": backlog.name, "createdAt": wire_now(),
        "decisions": [
            {"itemId": f"{n % 2000:03d}", "question": f"Question number {n}?",
             "answer": None if n % 3 == 0 else f"answer {n}", "deferred": n % 3 == 0,
             "decidedAt": wire_now(), "recordedBy": "bench@host",
             "appliedAt": wire_now() if n % 5 == 0 else None,
             "appliedBy": "bench@host" if n % 5 == 0 else None}
            for n in range(ENTRIES)
        ],
        "updatedAt": wire_now(),
    }
    write_json(rec.path, document, mode=decisions.RECORD_MODE)
    return rec



def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        backlog = Path(tmp) / "feature"
        backlog.mkdir()
        rec = seed(backlog)
        size = rec.path.stat().st_size
        record_s = timed(lambda: decisions.record(rec, ["9999"], "q?", answer="a"), 20)
        list_s = timed(lambda: decisions.unapplied_view(rec), 20)
        cli = [sys.executable, "-m", "git_forge", "decision"]
        d = ["--backlog-dir", str(backlog)]
        cli_record_s = timed(lambda: subprocess.run(
            [*cli, "record", *d, "--item", "9998", "--question", "q", "--answer", "a"],
            check=True, capture_output=True), 10)
        cli_list_s = timed(lambda: subprocess.run(
            [*cli, "list", *d, "--unapplied", "--json"], check=True, capture_output=True), 10)
    print(f"decision record with {ENTRIES:,} entries ({size / 1e6:.1f} MB on file)")
    print(f"  record (core, median of 20):           {record_s * 1000:7.1f} ms")
    print(f"  list --unapplied (core, median of 20): {list_s * 1000:7.1f} ms")
    print(f"  git-forge decision record (CLI):       {cli_record_s * 1000:7.1f} ms")
    print(f"  git-forge decision list --unapplied:   {cli_list_s * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
