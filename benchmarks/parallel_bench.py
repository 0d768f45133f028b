"""Benchmark: ``loop run --parallel N`` against the serial loop, side by side.

A repository with 16 independent pending items; the agent (a ``/bin/sh`` script)
notes when it starts, drains its prompt, sleeps 2 s, writes one file, prints
``FORGE_DONE`` and, as its last act, notes when it exits (outside the repository).
For each N in 1 (the serial loop), 4 and 8 a fresh
copy of the repository is run with ``git forge loop run --parallel N`` and timed
(wall clock, in a fresh process); with ``--runs`` above 1 the levels take turns,
round after round, so a machine's load weighs on each alike.

Reported per N (medians over the runs): the wall time, the speed-up against N = 1,
the ideal speed-up (N, up to the item count: the agents sleep, so cores are not the
limit), the runner's own overhead per item — wall time less the agents' own
sleeping (ceil(items / N) rounds of the sleep), divided by the items: worktree
creation, the agent's start, the commit in its worktree, the merge (replay and
fast-forward), the worktree's removal, the bookkeeping commit and start-up — and
the merge's overhead per item: from the agent's exit to the journal's
``item_completed`` for its item (its work on the branch; in the serial loop, the
commit), median and worst.

Then where the rest of the wall time went, per N (medians over the runs): start-up
(from the launch to the first agent's start), the first round's spread (from the
first agent's start to the N-th's: the starts one after another), a slot's gap
(from an agent's exit to the start of the agent that took its slot: the k-th exit
frees the slot of the (N + k)-th start; median and worst) and the tail (from the
last agent's exit to the end of ``loop run``: its merge, the bookkeeping commit,
the exit). The load average of the machine is printed before and after: the
figures are wall times, and other work on the machine stretches them.

Every run is checked: every item done, one commit each, linear history, no
worktree or ``forge/`` branch left.

With ``--sandbox``, every level also runs with ``--sandbox bwrap`` (side by side,
in the same rounds), and the sandbox's cost is printed per level: the wall time
with and without it, and the difference per agent start.

Usage: ``python benchmarks/parallel_bench.py [--items 16] [--sleep 2]
[--parallel 1,4,8] [--runs 1] [--sandbox]``. Goals: at least 3.7x at N = 4 and 7.0x at N = 8
(exit 1 when a level measured misses its goal).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from timing import bench_env, forge

#: The speed-up each N must reach against the serial loop.
GOALS = {4: 3.7, 8: 7.0}
ENV = bench_env(NO_COLOR="1")
AGENT = """#!/bin/sh
echo "$FORGE_ITEM_ID start $(date +%s.%N)" >> "$AGENT_TIMES"
cat >/dev/null
sleep "$BENCH_SLEEP"
echo "done by the agent" > "item-$FORGE_ITEM_ID.txt"
echo FORGE_DONE
echo "$FORGE_ITEM_ID exit $(date +%s.%N)" >> "$AGENT_TIMES"
"""


def run(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    return subprocess.run(list(argv), cwd=cwd, env=env or ENV, check=True,
                          capture_output=True, text=True).stdout


def build(root: Path, items: int) -> None:
    root.mkdir(parents=True)
    run("git", "init", "-q", "-b", "main", cwd=root)
    (root / "README.md").write_text("# bench\n")
    run(*forge(), "init", cwd=root)
    for number in range(1, items + 1):
        run(*forge(), "backlog", "add", "--title", f"Item {number}", cwd=root)
    run("git", "add", "-A", cwd=root)
    run("git", "commit", "-q", "-m", "backlog", cwd=root)


def check(root: Path, items: int) -> None:
    subjects = run("git", "log", "--format=%s", cwd=root).splitlines()
    done = [s for s in subjects if s.startswith("[forge] ") and s[8:11].isdigit()
            and s[11] == ":"]
    assert len(done) == items, f"{len(done)} item commits, expected {items}"
    assert run("git", "rev-list", "--merges", "HEAD", cwd=root) == "", "history is not linear"
    assert run("git", "worktree", "list", "--porcelain", cwd=root).count("worktree ") == 1
    assert run("git", "branch", "--list", "forge/*", cwd=root) == ""
    assert run("git", "status", "--porcelain", cwd=root) == ""


def moment(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def agent_times(path: Path) -> dict[str, dict[str, float]]:
    """Item id → when its agent started and exited (``start``, ``exit``)."""
    times: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        item, what, moment = line.split()
        times.setdefault(item, {})[what] = float(moment)
    return times


def merge_gaps(root: Path, times: dict[str, dict[str, float]]) -> list[float]:
    """ms from each agent's exit to the journal's ``item_completed`` for its item."""
    journal = root / ".forge" / "events.ndjson"
    gaps = []
    for line in journal.read_text().splitlines():
        event = json.loads(line)
        if event["type"] == "item_completed":
            gaps.append((moment(event["timestamp"]) - times[event["itemId"]]["exit"]) * 1000)
    return gaps


@dataclass(frozen=True)
class Run:
    """One timed ``loop run``: its wall time (s), each item's merge gap (ms), and
    the phases around the agents (ms): start-up, the first round's spread, each
    slot's gap, the tail."""

    wall: float
    gaps: list[float]
    startup: float
    spread: float
    slot_gaps: list[float]
    tail: float


def one_run(template: Path, work: Path, agent: Path, items: int, parallel: int,
            sleep: float, sandbox: str = "none") -> Run:
    stamp = f"{parallel}-{time.monotonic_ns()}"
    copy = work / f"run-{stamp}"
    # outside the repository: never the agent's work (and writable in a sandbox)
    noted = work / "times" / f"times-{stamp}.txt"
    noted.parent.mkdir(exist_ok=True)
    shutil.copytree(template, copy, symlinks=True)
    env = {**ENV, "BENCH_SLEEP": str(sleep), "AGENT_TIMES": str(noted)}
    launched, started = time.time(), time.perf_counter()
    run(*forge(), "loop", "run", "--agent", str(agent), "--parallel", str(parallel),
        "--iterations", str(items * 2), "--sandbox", sandbox,
        *(("--sandbox-writable", str(noted.parent)) if sandbox != "none" else ()),
        cwd=copy, env=env)
    elapsed = time.perf_counter() - started
    ended = launched + elapsed
    check(copy, items)
    times = agent_times(noted)
    gaps = merge_gaps(copy, times)
    assert len(gaps) == items, f"{len(gaps)} items completed in the journal, expected {items}"
    starts = sorted(each["start"] for each in times.values())
    exits = sorted(each["exit"] for each in times.values())
    first_round = min(parallel, items)
    later = starts[first_round:]  # the k-th exit frees the slot of the k-th of these
    slot_gaps = [(start - end) * 1000 for start, end in zip(later, exits[:len(later)],
                                                             strict=True)]
    shutil.rmtree(copy)
    noted.unlink()
    return Run(elapsed, gaps, (starts[0] - launched) * 1000,
               (starts[first_round - 1] - starts[0]) * 1000, slot_gaps,
               (ended - exits[-1]) * 1000)


def load() -> str:
    """The machine's load average (1 min) and its cores, as the figures' context."""
    cores = os.cpu_count() or 1
    return f"load average {os.getloadavg()[0]:.2f} on {cores} core{'s' * (cores > 1)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=16)
    parser.add_argument("--sleep", type=float, default=2.0)
    parser.add_argument("--parallel", default="1,4,8")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--sandbox", action="store_true",
                        help="also run each level with --sandbox bwrap")
    args = parser.parse_args()
    levels = [int(n) for n in args.parallel.split(",")]
    runs: dict[int, list[Run]] = {parallel: [] for parallel in levels}
    sandboxed: dict[int, list[Run]] = {parallel: [] for parallel in levels}
    before = load()
    with tempfile.TemporaryDirectory(prefix="parallel-bench-") as scratch:
        work = Path(scratch)
        template = work / "template"
        build(template, args.items)
        agent = work / "agent.sh"
        agent.write_text(AGENT)
        agent.chmod(0o755)
        for _ in range(args.runs):  # the levels take turns: side by side
            for parallel in levels:
                runs[parallel].append(
                    one_run(template, work, agent, args.items, parallel, args.sleep))
                if args.sandbox:
                    sandboxed[parallel].append(one_run(template, work, agent, args.items,
                                                       parallel, args.sleep, "bwrap"))
    walls = {parallel: statistics.median(r.wall for r in done) for parallel, done in runs.items()}
    base = walls.get(1)
    print(f"{args.items} independent items, agent sleeps {args.sleep:g} s; "
          f"median of {args.runs} run(s); {before} before, {load()} after")
    print(f"{'N':>3} {'wall s':>8} {'speed-up':>9} {'ideal':>6} {'of ideal':>9} "
          f"{'overhead/item ms':>17} {'merge/item ms':>14} {'worst ms':>9}")
    for parallel in levels:
        wall = walls[parallel]
        ideal = float(min(parallel, args.items))
        speed = base / wall if base else float("nan")
        sleeping = math.ceil(args.items / parallel) * args.sleep
        overhead = (wall - sleeping) / args.items * 1000
        gaps = [gap for r in runs[parallel] for gap in r.gaps]
        print(f"{parallel:>3} {wall:>8.2f} {speed:>8.2f}x {ideal:>5.0f}x "
              f"{speed / ideal:>8.0%} {overhead:>17.0f} {statistics.median(gaps):>14.0f} "
              f"{max(gaps):>9.0f}")
    print(f"{'N':>3} {'start-up ms':>12} {'1st round ms':>13} {'slot gap ms':>12} "
          f"{'worst ms':>9} {'tail ms':>8}")
    for parallel in levels:
        done = runs[parallel]
        slot_gaps = [gap for r in done for gap in r.slot_gaps]
        gap_text = (f"{statistics.median(slot_gaps):>12.0f} {max(slot_gaps):>9.0f}"
                    if slot_gaps else f"{'-':>12} {'-':>9}")
        print(f"{parallel:>3} {statistics.median(r.startup for r in done):>12.0f} "
              f"{statistics.median(r.spread for r in done):>13.0f} {gap_text} "
              f"{statistics.median(r.tail for r in done):>8.0f}")
    if args.sandbox:
        print(f"{'N':>3} {'wall s':>8} {'sandboxed s':>12} {'cost/agent start ms':>20}")
        for parallel in levels:
            with_ = statistics.median(r.wall for r in sandboxed[parallel])
            print(f"{parallel:>3} {walls[parallel]:>8.2f} {with_:>12.2f} "
                  f"{(with_ - walls[parallel]) / args.items * 1000:>20.1f}")
    met = True
    for parallel, goal in GOALS.items():
        if base and parallel in walls:
            speed = base / walls[parallel]
            verdict = "meets" if speed >= goal else "misses"
            print(f"N={parallel}: {speed:.2f}x — {verdict} the goal of {goal}x")
            met = met and speed >= goal
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
