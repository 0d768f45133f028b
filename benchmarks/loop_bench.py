"""Benchmark: the embedded loop's own cost per iteration, against the floor.

The floor is a plain shell loop doing the same work per iteration — the prompt on
the agent's stdin, the agent, ``git add -A``, ``git commit`` — on a copy of the
same repository. The agent is the same tiny ``/bin/sh`` script for both: it drains
its prompt, writes one file, notes when it exits, and prints ``FORGE_DONE``.

For each backlog size (10, 1,000 and 10,000 items by default, all independent and
pending) and, with ``--big-repo``, for a repository of 100,000 files, each run
starts from a fresh copy and times, in fresh processes:

* ``git forge loop run --iterations N`` — wall time and CPU (the loop and every
  process under it, from ``RUSAGE_CHILDREN``);
* the shell loop, N times the same work — wall time and CPU;

and reports medians of ``--runs`` runs (at least 5), per iteration, and their
ratios. git-forge's start-up (``git forge loop run`` over the same backlog with
every item done: reading and checking it is start-up too) is measured the same
way and shown apart; "per iteration" subtracts it.

Also reported, once per size:

* durable writes per iteration: ``fsync``/``fdatasync`` calls of the loop and its
  children, counted with ``strace -f -c`` (skipped when strace is missing);
* the wake-up gap: from the agent's exit (its last ``date``) to the journal's
  ``llm_exited`` (median), i.e. how long the loop takes to notice;
* the watchdog's cost: the same run with ``supervisor.watchdog: false``, run beside
  each timed run and differenced in pairs (the median of each run's difference: two
  medians of noisy runs, differenced, mostly measure the noise).

Usage: ``python benchmarks/loop_bench.py [--iterations N] [--runs R]
[--sizes 10,1000,10000] [--big-repo]``. Goals: per iteration within 2x the shell
loop in wall time and in CPU, flat in backlog size; the watchdog under 5 ms.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from datetime import datetime
from pathlib import Path

from timing import bench_env, forge

GOAL_RATIO = 2.0
WATCHDOG_GOAL_MS = 5.0
ENV = bench_env(NO_COLOR="1")
AGENT = """#!/bin/sh
cat >/dev/null
echo "done by the agent" > "work/item-$FORGE_ITEM_ID.txt"
date +%s.%N >> "$AGENT_EXITS"
echo FORGE_DONE
"""
FLOOR = """#!/bin/sh
# The floor: what any loop has to do per iteration, with nothing else.
i=0
while [ "$i" -lt "$1" ]; do
    i=$((i + 1))
    FORGE_ITEM_ID="$i" "$2" < "$3" > /dev/null
    git add -A
    git commit -q -m "item $i"
done
"""


def run(*argv: str, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), cwd=cwd, env=ENV, check=True, **kwargs)


def build(root: Path, items: int, files: int) -> None:
    """A repository with ``files`` tracked files and a committed backlog of
    ``items`` independent pending items."""
    root.mkdir(parents=True)
    run("git", "init", "-q", "-b", "main", cwd=root)
    (root / "work").mkdir()
    (root / "work" / "README").write_text("agent output goes here\n")
    for n in range(files):
        directory = root / "src" / f"d{n // 1000:03d}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"f{n:06d}.txt").write_text(f"file {n}\n")
    run(*forge(), "init", cwd=root, stdout=subprocess.DEVNULL)
    backlog = root / ".forge" / "backlog.json"
    document = json.loads(backlog.read_text())
    document["items"] = [
        {"id": f"{n:05d}", "type": "feature", "priority": 1 + n % 3, "title": f"Item {n}",
         "description": "Write the item's file. " * 3, "acceptanceCriteria": ["the file exists"],
         "status": "pending", "completedAt": None, "needsHuman": False, "blockedReason": None,
         "dependsOn": []}
        for n in range(1, items + 1)
    ]
    backlog.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    run("git", "add", "-A", cwd=root)
    run("git", "commit", "-q", "-m", "backlog", cwd=root)


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s of it and everything under it) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode not in (0, 5):
        raise SystemExit(f"{argv[:3]} exited {result.returncode}: {result.stderr.decode()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def loop_argv(agent: Path, iterations: int) -> list[str]:
    return [*forge(), "loop", "run", "--agent", str(agent), "--iterations", str(iterations),
            "--timeout", "1"]


def moment(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def wake_gaps(root: Path, exits: Path) -> list[float]:
    """ms from each agent's exit to the journal's ``llm_exited`` for it."""
    ended = [float(line) for line in exits.read_text().split()]
    journal = root / ".forge" / "events.ndjson"
    noticed = [moment(json.loads(line)["timestamp"]) for line in journal.read_text().splitlines()
               if '"llm_exited"' in line]
    return [(seen - end) * 1000 for end, seen in zip(ended, noticed, strict=False)]


def fsyncs(root: Path, agent: Path, iterations: int, env: dict[str, str]) -> float | None:
    """fsync + fdatasync calls per iteration of one ``loop run``, from strace."""
    if shutil.which("strace") is None:
        return None
    out = root.parent / "strace.txt"
    subprocess.run(["strace", "-f", "-c", "-o", str(out), "-e",
                    "trace=fsync,fdatasync", *loop_argv(agent, iterations)],
                   cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    calls = 0
    for line in out.read_text().splitlines():
        match = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(fsync|fdatasync)$",
                         line)
        if match:
            calls += int(match.group(1))
    return calls / iterations


def median(values: list[float]) -> float:
    return statistics.median(values)


def measure(template: Path, work: Path, label: str, n: int, runs: int) -> None:
    agent = work / "agent.sh"
    floor = work / "floor.sh"
    prompt = work / "prompt.txt"
    prompt.write_bytes(b"## Backlog item 00001: Item 1\n" + b"Write the item's file. " * 20)
    forge_wall, forge_cpu, floor_wall, floor_cpu, start_wall, start_cpu = ([] for _ in range(6))
    plain_wall: list[float] = []
    plain_cpu: list[float] = []
    gaps: list[float] = []
    for index in range(runs):
        pair = ("forge", "plain") if index % 2 == 0 else ("plain", "forge")  # no order bias
        for what in (*pair, "floor", "start"):
            root = work / f"{label}-{index}-{what}"
            shutil.copytree(template, root, symlinks=True)
            exits = work / f"{label}-{index}-{what}.exits"
            env = {**ENV, "AGENT_EXITS": str(exits)}
            if what == "floor":
                wall, cpu = timed(["/bin/sh", str(floor), str(n), str(agent), str(prompt)],
                                  root, env)
                floor_wall.append(wall / n)
                floor_cpu.append(cpu / n)
            elif what == "start":  # nothing selectable: start-up and shut-down alone
                backlog = root / ".forge" / "backlog.json"  # the same backlog, all done:
                document = json.loads(backlog.read_text())  # its load is start-up too
                for entry in document["items"]:
                    entry["status"] = "done"
                backlog.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
                run("git", "commit", "-qam", "all done", cwd=root)
                wall, cpu = timed(loop_argv(agent, n), root, env)
                start_wall.append(wall)
                start_cpu.append(cpu)
            else:
                if what == "plain":
                    with open(root / ".forge.yaml", "a", encoding="utf-8") as config:
                        config.write("\nsupervisor:\n  watchdog: false\n")
                    run("git", "commit", "-qam", "no watchdog", cwd=root)
                wall, cpu = timed(loop_argv(agent, n), root, env)
                if what == "forge":
                    forge_wall.append(wall)
                    forge_cpu.append(cpu)
                    gaps += wake_gaps(root, exits)
                else:
                    plain_wall.append(wall)
                    plain_cpu.append(cpu)
            shutil.rmtree(root)
    startup_wall, startup_cpu = median(start_wall), median(start_cpu)
    wall = (median(forge_wall) - startup_wall) / n
    cpu = (median(forge_cpu) - startup_cpu) / n
    watchdog_wall, watchdog_cpu = (
        median([with_it - without for with_it, without in zip(on, off, strict=True)]) / n
        for on, off in ((forge_wall, plain_wall), (forge_cpu, plain_cpu)))
    f_wall, f_cpu = median(floor_wall), median(floor_cpu)
    root = work / f"{label}-strace"
    shutil.copytree(template, root, symlinks=True)
    per_iteration_fsyncs = fsyncs(root, agent, n, {**ENV, "AGENT_EXITS": str(work / "x")})
    shutil.rmtree(root)
    ms = 1000
    print(f"{label}: {n} iterations, medians of {runs} runs")
    print(f"  git-forge start-up (nothing to do):  wall {startup_wall * ms:7.1f} ms, "
          f"CPU {startup_cpu * ms:7.1f} ms")
    print(f"  git-forge per iteration:             wall {wall * ms:7.1f} ms, "
          f"CPU {cpu * ms:7.1f} ms")
    print(f"  shell loop per iteration (floor):    wall {f_wall * ms:7.1f} ms, "
          f"CPU {f_cpu * ms:7.1f} ms")
    print(f"  ratio to the floor:                  wall {wall / f_wall:6.2f}x,   "
          f"CPU {cpu / f_cpu:6.2f}x")
    if per_iteration_fsyncs is not None:
        print(f"  durable writes per iteration:        {per_iteration_fsyncs:.1f} fsync/fdatasync")
    if gaps:
        print(f"  agent exit -> loop notices (median): {median(gaps):7.1f} ms")
    print(f"  the watchdog's cost per iteration:   wall {watchdog_wall * ms:+7.1f} ms, "
          f"CPU {watchdog_cpu * ms:+7.1f} ms (median of {runs} paired runs)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="10,1000,10000")
    parser.add_argument("--big-repo", action="store_true",
                        help="also a 100,000-file repository (10-item backlog)")
    options = parser.parse_args()
    cases = [(f"backlog of {int(size):,} items", int(size), 0)
             for size in options.sizes.split(",") if size]
    if options.big_repo:
        cases.append(("100,000-file repository", 10, 100_000))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "agent.sh").write_text(AGENT)
        (work / "agent.sh").chmod(0o755)
        (work / "floor.sh").write_text(FLOOR)
        for label, items, files in cases:
            template = work / f"template-{items}-{files}"
            build(template, items, files)
            measure(template, work, label, min(options.iterations, items), options.runs)
            shutil.rmtree(template)
    print(f"goals: within {GOAL_RATIO:g}x the floor in wall time and CPU, flat in backlog "
          f"size; the watchdog under {WATCHDOG_GOAL_MS:g} ms per iteration")


if __name__ == "__main__":
    main()
