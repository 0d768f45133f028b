"""Benchmark: a backlog of 10,000 items.

Prints the time of loading and validating backlog.json, of picking the next item,
of one `answer` (a locked, atomic rewrite after an unlocked rehearsal), of a refused
`answer` (no lock, no write), and of `backlog list --json` / `backlog answer` through
the CLI (a full process start, as an external caller pays it).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from timing import timed

from git_forge.backlog import model
from git_forge.backlog.errors import BacklogError
from git_forge.backlog.store import BacklogStore, new_document
from git_forge.jsonfile import write_json

ITEMS = 10_000


def seed(backlog: Path) -> BacklogStore:
    document = new_document("bench")
    statuses = ("done", "pending", "blocked", "in_progress")
    document["items"] = [
        {"id": f"{n:05d}", "type": "feature", "priority": 1 + n % 4, "title": f"Item {n}",
         "description": "Some words about the item " * 4, "acceptanceCriteria": ["it works"],
         "status": statuses[n % 4], "completedAt": None, "needsHuman": n % 4 == 2,
         "blockedReason": "Which way?" if n % 4 == 2 else None,
         "dependsOn": [f"{n - 1:05d}"] if n % 10 != 1 else []}
        for n in range(1, ITEMS + 1)
    ]
    store = BacklogStore.in_dir(backlog)
    write_json(store.path, document)
    return store



def refused_answer(store: BacklogStore) -> None:
    try:
        store.answer("00001", "x")  # done, not blocked
    except BacklogError:
        return
    raise AssertionError("expected a refusal")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        backlog = Path(tmp) / ".forge"
        backlog.mkdir()
        store = seed(backlog)
        size = store.path.stat().st_size
        blocked = iter(f"{n:05d}" for n in range(2, ITEMS + 1, 4))
        load_s = timed(store.items, 20)
        items = store.items()
        select_s = timed(lambda: model.select_next(items), 20)
        answer_s = timed(lambda: store.answer(next(blocked), "use the default"), 20)
        refused_s = timed(lambda: refused_answer(store), 20)
        cli = [sys.executable, "-m", "git_forge", "backlog"]
        cli_list_s = timed(lambda: subprocess.run(
            [*cli, "list", tmp, "--json"], check=True, capture_output=True), 10)
        cli_answer_s = timed(lambda: subprocess.run(
            [*cli, "answer", tmp, next(blocked), "use the default", "--json"], check=True,
            capture_output=True), 10)
    print(f"backlog with {ITEMS:,} items ({size / 1e6:.1f} MB on file)")
    print(f"  load + validate (core, median of 20):  {load_s * 1000:7.1f} ms")
    print(f"  select_next (core, median of 20):      {select_s * 1000:7.1f} ms")
    print(f"  answer (core, median of 20):           {answer_s * 1000:7.1f} ms")
    print(f"  refused answer (core, median of 20):   {refused_s * 1000:7.1f} ms")
    print(f"  git-forge backlog list --json (CLI):   {cli_list_s * 1000:7.1f} ms")
    print(f"  git-forge backlog answer --json (CLI): {cli_answer_s * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
