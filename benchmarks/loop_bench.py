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

The same loop is also run with the watchdog off (``supervisor.watchdog:
false``): every agent then runs as a direct child, unprotected if the loop
dies. Runs alternate between the two, and the cost of the watchdog is the
difference of the medians of wall time per iteration (and of CPU per
iteration: the loop and every process under it, from ``RUSAGE_CHILDREN``).

Usage: ``python benchmarks/loop_bench.py [--items N] [--rounds R]``. Goals:
overhead under 50 ms per iteration; the watchdog under 5 ms per iteration.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

GOAL_MS = 50.0
WATCHDOG_GOAL_MS = 5.0
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


def build(root: Path, items: int, *, watchdog: bool = True) -> Path:
    """The repository with a committed 200-item backlog; returns the agent's path."""
    root.mkdir(parents=True)
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
    if not watchdog:
        with open(root / ".forge.yaml", "a", encoding="utf-8") as config:
            config.write("\nsupervisor:\n  watchdog: false\n")
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


def run_loop(root: Path, agent: Path, items: int) -> tuple[float, float, list[dict]]:
    """One ``loop run`` in a fresh process: (wall s, CPU s of it and everything under
    it, the journal)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(
        [*forge(), "loop", "run", "--agent", str(agent), "--iterations", str(items),
         "--timeout", "1"],
        cwd=root, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    total = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"loop run exited {result.returncode}: {result.stderr.decode()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    journal = root / ".forge" / "events.ndjson"
    return total, cpu, [json.loads(line) for line in journal.read_text().splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3,
                        help="runs with and without the watchdog, alternating")
    options = parser.parse_args()
    per_iteration_ms: dict[bool, list[float]] = {True: [], False: []}
    cpu_ms: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as tmp:
        for round_number in range(options.rounds):
            for watchdog in (True, False):
                root = Path(tmp) / f"{round_number}-{watchdog}" / "repo"
                agent = build(root, options.items, watchdog=watchdog)
                total, cpu, run_events = run_loop(root, agent, options.items)
                iterations = sum(1 for e in run_events if e["type"] == "iteration_start")
                per_iteration_ms[watchdog].append(total / iterations * 1000)
                cpu_ms[watchdog].append(cpu / iterations * 1000)
                if watchdog and round_number == 0:
                    events, total_first = run_events, total
                    commits = run("git", "rev-list", "--count", "HEAD", cwd=root,
                                  capture_output=True).stdout.decode().strip()
                    agent_alone = standalone_agent_ms(agent, root)
    done = sum(1 for e in events if e["type"] == "item_completed")
    rows = per_iteration(events)
    iterations = len(rows)
    agent_total = sum(agent for _, agent in rows) / 1000
    overhead = [wall - agent for wall, agent in rows]
    mean_overhead = (total_first - agent_total) / iterations * 1000
    print(f"loop run: {iterations} iterations, {done} items done, {commits} commits on main")
    print(f"  agent standalone (sh script, median of 50 direct runs): {agent_alone:7.1f} ms")
    print(f"  total wall time (git-forge loop run, fresh process):     {total_first:7.2f} s")
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
    with_wd, without = (statistics.median(per_iteration_ms[flag]) for flag in (True, False))
    cpu_with, cpu_without = (statistics.median(cpu_ms[flag]) for flag in (True, False))
    print(f"watchdog ({options.rounds} runs each, alternating; medians per iteration):")
    print(f"  with the watchdog:    wall {with_wd:6.1f} ms, CPU {cpu_with:6.1f} ms")
    print(f"  without the watchdog: wall {without:6.1f} ms, CPU {cpu_without:6.1f} ms")
    print(f"  cost of the watchdog: wall {with_wd - without:+6.1f} ms, "
          f"CPU {cpu_with - cpu_without:+6.1f} ms")
    verdict = "met" if with_wd - without < WATCHDOG_GOAL_MS else "MISSED"
    print(f"goal: the watchdog costs under {WATCHDOG_GOAL_MS:.0f} ms per iteration — {verdict}")


if __name__ == "__main__":
    main()
