"""Benchmark: ``loop run --parallel N`` against the ideal speed-up.

A repository with 16 independent pending items; the agent (a ``/bin/sh`` script)
drains its prompt, sleeps 2 s, touches one file and prints ``FORGE_DONE``. For
each N in 1, 2, 4, 8 a fresh copy of the repository is run with
``git forge loop run --parallel N`` and timed (wall clock, in a fresh process).

Reported per N: the wall time, the speed-up against N = 1, the ideal speed-up
(N, up to the item count: the agents sleep, so cores are not the limit), and the
runner's own overhead per item — wall time less the agents' own sleeping
(ceil(items / N) rounds of the sleep), divided by the items: worktree creation,
the agent's start, the commit in its worktree, the merge (replay and
fast-forward), the worktree's removal, the bookkeeping commit and start-up.

Every run is checked: every item done, one commit each, linear history, no
worktree or ``forge/`` branch left.

Usage: ``python benchmarks/parallel_bench.py [--items 16] [--sleep 2]
[--parallel 1,2,4,8] [--runs 1]``. Goal: at least 3.5x at N = 4.
"""

from __future__ import annotations

import argparse
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import bench_env, forge

GOAL_AT_4 = 3.5
ENV = bench_env(NO_COLOR="1")
AGENT = """#!/bin/sh
cat >/dev/null
sleep "$BENCH_SLEEP"
echo "done by the agent" > "item-$FORGE_ITEM_ID.txt"
echo FORGE_DONE
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


def one_run(template: Path, work: Path, agent: Path, items: int, parallel: int,
            sleep: float) -> float:
    copy = work / f"run-{parallel}-{time.monotonic_ns()}"
    shutil.copytree(template, copy, symlinks=True)
    env = {**ENV, "BENCH_SLEEP": str(sleep)}
    started = time.perf_counter()
    run(*forge(), "loop", "run", "--agent", str(agent), "--parallel", str(parallel),
        "--iterations", str(items * 2), cwd=copy, env=env)
    elapsed = time.perf_counter() - started
    check(copy, items)
    shutil.rmtree(copy)
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=16)
    parser.add_argument("--sleep", type=float, default=2.0)
    parser.add_argument("--parallel", default="1,2,4,8")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    levels = [int(n) for n in args.parallel.split(",")]
    with tempfile.TemporaryDirectory(prefix="parallel-bench-") as scratch:
        work = Path(scratch)
        template = work / "template"
        build(template, args.items)
        agent = work / "agent.sh"
        agent.write_text(AGENT)
        agent.chmod(0o755)
        walls: dict[int, float] = {}
        for parallel in levels:
            walls[parallel] = statistics.median(
                one_run(template, work, agent, args.items, parallel, args.sleep)
                for _ in range(args.runs))
    base = walls.get(1)
    print(f"{args.items} independent items, agent sleeps {args.sleep:g} s; "
          f"median of {args.runs} run(s)")
    print(f"{'N':>3} {'wall s':>8} {'speed-up':>9} {'ideal':>6} {'of ideal':>9} "
          f"{'overhead/item ms':>17}")
    for parallel in levels:
        wall = walls[parallel]
        ideal = float(min(parallel, args.items))
        speed = base / wall if base else float("nan")
        sleeping = math.ceil(args.items / parallel) * args.sleep
        overhead = (wall - sleeping) / args.items * 1000
        print(f"{parallel:>3} {wall:>8.2f} {speed:>8.2f}x {ideal:>5.0f}x "
              f"{speed / ideal:>8.0%} {overhead:>17.0f}")
    if base and 4 in walls:
        speed = base / walls[4]
        verdict = "meets" if speed >= GOAL_AT_4 else "misses"
        print(f"N=4: {speed:.2f}x — {verdict} the goal of {GOAL_AT_4}x")
        return 0 if speed >= GOAL_AT_4 else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
