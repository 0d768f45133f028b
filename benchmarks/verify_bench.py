"""Benchmark: what a verification gate (``loop.verify``) adds to each attempt, beyond
its own command's time.

A backlog of N independent items is run by an instant agent (it drains its prompt,
writes one file, prints ``FORGE_DONE``) on fresh copies of one repository, with no
gate and with one gate, interleaved, ``--runs`` times each (medians). A run with a
gate runs it N + 1 times: once on the starting tip (the baseline), then after each
item. The gate's own time is measured apart: the median wall time of the same
command run alone, in a fresh process, in the same tree.

Reported per gate command (``true``, and ``python3 -c pass`` for a command that
starts an interpreter):

* the run's wall time without and with the gate, and the difference per gate run;
* the command's own time;
* the overhead per gate run: the difference less the command's own time.

Goal (issue: verification gates): the overhead ≤ 10 ms per attempt.

Usage: ``python benchmarks/verify_bench.py [--items N] [--runs R]``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import bench_env, forge, run_timed

AGENT = """#!/bin/sh
cat >/dev/null
echo x > "file-$FORGE_ITEM_ID.txt"
echo FORGE_DONE
"""
GOAL_MS = 10.0


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=bench_env(), check=True,
                   stdout=subprocess.DEVNULL)


def _template(base: Path, items: int) -> tuple[Path, Path]:
    repo = base / "template"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("bench\n")
    env = bench_env()
    subprocess.run([*forge(), "init"], cwd=repo, env=env, check=True, stdout=subprocess.DEVNULL)
    for number in range(items):
        subprocess.run([*forge(), "backlog", "add", "--title", f"item {number + 1}"], cwd=repo,
                       env=env, check=True, stdout=subprocess.DEVNULL)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    agent = base / "agent.sh"
    agent.write_text(AGENT)
    agent.chmod(0o755)
    return repo, agent


def _run(template: Path, base: Path, agent: Path, gate: list[str] | None,
         name: str) -> float:
    copy = base / name
    shutil.copytree(template, copy, symlinks=True)
    argv = [*forge(), "loop", "run", "--agent", str(agent)]
    if gate is not None:
        argv += ["--verify", " ".join(gate)]
    wall, _ = run_timed(argv, copy, bench_env())
    shutil.rmtree(copy)
    return wall


def _alone(gate: list[str], cwd: Path, runs: int) -> float:
    times = []
    for _ in range(max(runs * 4, 20)):
        started = time.perf_counter()
        subprocess.run(gate, cwd=cwd, env=bench_env(), check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    gates = {"true": ["true"], "python3 -c pass": [sys.executable, "-c", "pass"]}
    with tempfile.TemporaryDirectory() as directory:
        base = Path(directory)
        template, agent = _template(base, args.items)
        print(f"verification gate overhead: {args.items} items, {args.runs} runs each "
              f"(medians), a gate runs {args.items + 1} times a run (baseline + items)")
        for label, gate in gates.items():
            without, with_gate = [], []
            for run in range(args.runs):  # interleaved
                without.append(_run(template, base, agent, None, f"plain-{run}"))
                with_gate.append(_run(template, base, agent, gate, f"gated-{run}"))
            runs_of_gate = args.items + 1
            per_gate = (statistics.median(with_gate) - statistics.median(without)) / runs_of_gate
            alone = _alone(gate, template, args.runs)
            overhead = per_gate - alone
            verdict = "within" if overhead * 1000 <= GOAL_MS else "OVER"
            print(f"  {label:<16} run without {statistics.median(without) * 1000:7.1f} ms, "
                  f"with {statistics.median(with_gate) * 1000:7.1f} ms; per gate run "
                  f"{per_gate * 1000:6.1f} ms = the command {alone * 1000:5.1f} ms + "
                  f"{overhead * 1000:5.1f} ms ({verdict} the {GOAL_MS:.0f} ms goal)")


if __name__ == "__main__":
    main()
