"""Benchmark: the embedded loop runner's own overhead per iteration.

A real repository (``git forge init`` + 200 items, every fifth depending on the
item before it) and a trivial agent: a ``/bin/sh`` script that drains the prompt
from stdin, writes one file and prints ``FORGE_DONE``. One
``git forge loop run --iterations 200`` is timed as a fresh process.

The agent's share is each iteration's ``llm_exited`` ``durationMs`` from the
journal (the supervisor's start → finish of the agent process); the agent is
also timed standalone (N direct runs) to show what the script itself costs.
Per-iteration wall time is the gap between consecutive ``iteration_start``
events (the last one ends at ``loop_completed``); overhead = wall − agent.

Usage: ``python benchmarks/loop_bench.py [--items N]``. Goal: under 50 ms per
iteration.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

GOAL_MS = 50.0
ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "NO_COLOR": "1",
}
AGENT = """#!/bin/sh
cat >/dev/null
echo "done by the agent" > "work/item-$FORGE_ITEM_ID.txt"
echo FORGE_DONE
"""


def run(*argv: str, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), cwd=cwd, env=ENV, check=True, **kwargs)


def forge() -> list[str]:
    return [str(Path(sys.executable).with_name("git-forge"))]


def build(root: Path, items: int) -> Path:
    """The repository with a committed 200-item backlog; returns the agent's path."""
    root.mkdir()
    run("git", "init", "-q", "-b", "main", cwd=root)
    (root / "work").mkdir()
    (root / "work" / "README").write_text("agent output goes here\n")
    run(*forge(), "init", cwd=root, stdout=subprocess.DEVNULL)
    backlog = root / ".forge" / "backlog.json"
    document = json.loads(backlog.read_text())
    document["items"] = [
        {"id": f"{n:03d}", "type": "feature", "priority": 1 + n % 3, "title": f"Item {n}",
         "description": "Write the item's file. " * 3, "acceptanceCriteria": ["the file exists"],
         "status": "pending", "completedAt": None, "needsHuman": False, "blockedReason": None,
         "dependsOn": [f"{n - 1:03d}"] if n % 5 == 0 else []}
        for n in range(1, items + 1)
    ]
    from git_forge.atomic import write_json

    write_json(backlog, document)
    agent = root.parent / "agent.sh"
    agent.write_text(AGENT)
    agent.chmod(0o755)
    run("git", "add", "-A", cwd=root)
    run("git", "commit", "-q", "-m", "backlog", cwd=root)
    return agent


def standalone_agent_ms(agent: Path, root: Path, runs: int = 50) -> float:
    """Median wall time of the agent run directly (prompt on stdin, as the loop runs it)."""
    samples = []
    scratch = root.parent / "scratch"
    (scratch / "work").mkdir(parents=True)
    prompt = b"## Backlog item 001: Item 1\n" + b"Write the item's file. " * 20
    for n in range(runs):
        started = time.perf_counter()
        subprocess.run([str(agent)], cwd=scratch, input=prompt, check=True,
                       stdout=subprocess.DEVNULL, env={**ENV, "FORGE_ITEM_ID": str(n)})
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def moment(event: dict) -> datetime:
    return datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00"))


def per_iteration(events: list[dict]) -> list[tuple[float, float]]:
    """(wall ms, agent ms) of each iteration, from the journal."""
    starts = [e for e in events if e["type"] == "iteration_start"]
    end = next(e for e in events if e["type"] == "loop_completed")
    exits = [e for e in events if e["type"] == "llm_exited"]
    assert len(starts) == len(exits), (len(starts), len(exits))
    rows = []
    for index, start in enumerate(starts):
        following = starts[index + 1] if index + 1 < len(starts) else end
        wall = (moment(following) - moment(start)).total_seconds() * 1000
        rows.append((wall, float(exits[index]["durationMs"])))
    return rows


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=200)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        agent = build(root, options.items)
        agent_alone = standalone_agent_ms(agent, root)
        started = time.perf_counter()
        result = subprocess.run(
            [*forge(), "loop", "run", "--agent", str(agent),
             "--iterations", str(options.items), "--timeout", "1"],
            cwd=root, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        total = time.perf_counter() - started
        if result.returncode != 0:
            raise SystemExit(f"loop run exited {result.returncode}: {result.stderr.decode()}")
        journal = root / ".forge" / "events.ndjson"
        events = [json.loads(line) for line in journal.read_text().splitlines()]
        done = sum(1 for e in events if e["type"] == "item_completed")
        commits = run("git", "rev-list", "--count", "HEAD", cwd=root,
                      capture_output=True).stdout.decode().strip()
    rows = per_iteration(events)
    iterations = len(rows)
    agent_total = sum(agent for _, agent in rows) / 1000
    overhead = [wall - agent for wall, agent in rows]
    mean_overhead = (total - agent_total) / iterations * 1000
    print(f"loop run: {iterations} iterations, {done} items done, {commits} commits on main")
    print(f"  agent standalone (sh script, median of 50 direct runs): {agent_alone:7.1f} ms")
    print(f"  total wall time (git-forge loop run, fresh process):     {total:7.2f} s")
    print(f"  summed agent time (llm_exited durationMs):               {agent_total:7.2f} s")
    print(f"  overhead per iteration, (total - agent) / iterations:    {mean_overhead:7.1f} ms")
    print(f"  per iteration from the journal: wall p50 "
          f"{percentile([w for w, _ in rows], 0.5):.1f} ms, agent p50 "
          f"{percentile([a for _, a in rows], 0.5):.1f} ms")
    print(f"  overhead per iteration from the journal: mean {statistics.fmean(overhead):.1f} ms,"
          f" p50 {percentile(overhead, 0.5):.1f} ms, p95 {percentile(overhead, 0.95):.1f} ms,"
          f" max {max(overhead):.1f} ms")
    verdict = "met" if mean_overhead < GOAL_MS else "MISSED"
    print(f"goal: overhead under {GOAL_MS:.0f} ms per iteration — {verdict}")


if __name__ == "__main__":
    main()
