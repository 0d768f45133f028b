"""Benchmark: the embedded loop's own cost per iteration, against the floor.

The floor is a plain shell loop doing the same work per iteration — the prompt on
the agent's stdin, the agent, ``git add -A``, ``git commit`` — on a copy of the
same repository. The agent is the same tiny ``/bin/sh`` script for both: it drains
its prompt, writes one file, notes when it exits, and prints ``FORGE_DONE``.

For each backlog size (10, 1,000 and 10,000 items by default, all independent and
pending) and, with ``--big-repo``, for a repository of 100,000 files, each run
starts from a fresh copy and times, in fresh processes:

* ``git forge loop run --iterations N`` and ``--iterations 1`` — wall time and CPU
  (the loop and every process under it, from ``RUSAGE_CHILDREN``);
* the shell loop, N times and once the same work — wall time and CPU;
* the same shell loop with the backlog's bookkeeping added: before ``git add -A``
  it marks one pending item done in backlog.json (``awk`` into a new file, renamed
  over it), so each commit carries the backlog as git-forge's do. A backlog file
  committed per item costs what git charges to hash and store it, for any loop:
  this is the floor for "the same work" at a size where that cost shows;

and reports, per iteration, the medians over ``--runs`` runs (at least 5) of what
the N-iteration run took beyond the 1-iteration run of the same run, divided by
N - 1, and their ratios. Differencing the two cancels everything a run pays once —
the interpreter and imports, reading and checking the backlog, the watchdog's boot
(it starts only when an item is selectable), the first iteration's cold caches,
the summary and shut-down — for git-forge and the floor alike, leaving the cost of
one more iteration. git-forge's start-up (``git forge loop run`` over the same
backlog with every item done) is shown apart, and so is the figure an earlier
version of this benchmark gave: the N-iteration run less that start-up, over N
(the watchdog's boot and the first iteration's warm-up are in it).

Also reported, once per size:

* durable writes per iteration: ``fsync``/``fdatasync`` calls of the loop and its
  children, counted with ``strace -f -c`` (skipped when strace is missing);
* the wake-up gap: from the agent's exit (its last ``date``) to the journal's
  ``llm_exited`` (median), i.e. how long the loop takes to notice;
* the watchdog's cost: the same runs with ``supervisor.watchdog: false``, beside the
  timed ones and differenced in pairs (the median of each run's difference: two
  medians of noisy runs, differenced, mostly measure the noise).

Usage: ``python benchmarks/loop_bench.py [--iterations N] [--runs R]
[--sizes 10,1000,10000] [--big-repo]``. Goals: per iteration within 2x the shell
loop in wall time and in CPU, flat in backlog size; the watchdog under 5 ms.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import tempfile
from datetime import datetime
from pathlib import Path

from timing import bench_env, forge, run_timed

GOAL_RATIO = 2.0
WATCHDOG_GOAL_MS = 5.0
ENV = bench_env(NO_COLOR="1")
AGENT = """#!/bin/sh
cat >/dev/null
echo "done by the agent" > "work/item-$FORGE_ITEM_ID.txt"
date +%s.%N >> "$AGENT_EXITS"
echo FORGE_DONE
"""
#: What the shell loops feed their agent on stdin, as git-forge feeds it an item's prompt.
PROMPT = b"## Backlog item 00001: Item 1\n" + b"Write the item's file. " * 20
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
#: The floor plus the bookkeeping every runner with a backlog file does per item (and
#: git-forge does): mark the item done in backlog.json and commit that with the work.
#: POSIX awk rewrites the file into a new one renamed over it, as a careful script would.
FLOOR_BOOKS = """#!/bin/sh
i=0
while [ "$i" -lt "$1" ]; do
    i=$((i + 1))
    FORGE_ITEM_ID="$i" "$2" < "$3" > /dev/null
    awk '!done && sub(/"status": "pending"/, "\\"status\\": \\"done\\"") { done = 1 } { print }' \
        .forge/backlog.json > .forge/backlog.json.new
    mv .forge/backlog.json.new .forge/backlog.json
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


def one_run(what: str, iterations: int, root: Path, work: Path,
            env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s) of one timed run of ``what`` over ``root``, a fresh copy."""
    floor = work / f"{what}.sh"
    if floor.is_file():  # a shell loop: floor.sh, books.sh, or one another benchmark wrote
        return run_timed(["/bin/sh", str(floor), str(iterations), str(work / "agent.sh"),
                          str(work / "prompt.txt")], root, env)
    if what == "start":  # nothing selectable: start-up and shut-down alone
        backlog = root / ".forge" / "backlog.json"  # the same backlog, all done:
        document = json.loads(backlog.read_text())  # its load is start-up too
        for entry in document["items"]:
            entry["status"] = "done"
        backlog.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
        run("git", "commit", "-qam", "all done", cwd=root)
    elif what == "plain":
        with open(root / ".forge.yaml", "a", encoding="utf-8") as config:
            config.write("\nsupervisor:\n  watchdog: false\n")
        run("git", "commit", "-qam", "no watchdog", cwd=root)
    return run_timed(loop_argv(work / "agent.sh", iterations), root, env, ok=(0, 5))


def marginal(long: list[tuple[float, float]], short: list[tuple[float, float]],
             extra: int, part: int) -> list[float]:
    """Per run, what the long run took beyond the short one of the same run (wall:
    ``part`` 0, CPU: 1), per iteration of the ``extra`` iterations it did more."""
    return [(a[part] - b[part]) / extra for a, b in zip(long, short, strict=True)]


def measure(template: Path, work: Path, label: str, n: int, runs: int) -> None:
    if n < 2:
        raise SystemExit("a per-iteration figure needs at least 2 iterations")
    (work / "prompt.txt").write_bytes(PROMPT)
    times: dict[tuple[str, int], list[tuple[float, float]]] = {}
    gaps: list[float] = []
    for index in range(runs):
        pair = ("forge", "plain") if index % 2 == 0 else ("plain", "forge")  # no order bias
        for iterations in (n, 1):
            for what in (*pair, "floor", "books", *(("start",) if iterations == 1 else ())):
                root = work / f"{label}-{index}-{what}-{iterations}"
                shutil.copytree(template, root, symlinks=True)
                exits = work / f"{label}-{index}-{what}-{iterations}.exits"
                env = {**ENV, "AGENT_EXITS": str(exits)}
                times.setdefault((what, iterations), []).append(
                    one_run(what, iterations, root, work, env))
                if what == "forge" and iterations == n:
                    gaps += wake_gaps(root, exits)
                shutil.rmtree(root)
    forge_each, floor_each, books_each, plain_each = (
        [marginal(times[what, n], times[what, 1], n - 1, part) for part in (0, 1)]
        for what in ("forge", "floor", "books", "plain"))
    wall, cpu = (median(values) for values in forge_each)
    f_wall, f_cpu = (median(values) for values in floor_each)
    b_wall, b_cpu = (median(values) for values in books_each)
    watchdog_wall, watchdog_cpu = (
        median([on - off for on, off in zip(forge_each[part], plain_each[part], strict=True)])
        for part in (0, 1))
    startup_wall, startup_cpu = (median([sample[part] for sample in times["start", 1]])
                                 for part in (0, 1))
    amortised_wall, amortised_cpu = ((median([sample[part] for sample in times["forge", n]])
                                      - startup) / n
                                     for part, startup in ((0, startup_wall), (1, startup_cpu)))
    root = work / f"{label}-strace"
    shutil.copytree(template, root, symlinks=True)
    per_iteration_fsyncs = fsyncs(root, work / "agent.sh", n,
                                  {**ENV, "AGENT_EXITS": str(work / "x")})
    shutil.rmtree(root)
    ms = 1000
    print(f"{label}: {n} iterations against 1, medians of {runs} runs")
    print(f"  git-forge start-up (nothing to do):  wall {startup_wall * ms:7.1f} ms, "
          f"CPU {startup_cpu * ms:7.1f} ms")
    print(f"  git-forge per iteration:             wall {wall * ms:7.1f} ms, "
          f"CPU {cpu * ms:7.1f} ms")
    print(f"  shell loop per iteration (floor):    wall {f_wall * ms:7.1f} ms, "
          f"CPU {f_cpu * ms:7.1f} ms")
    print(f"  ratio to the floor:                  wall {wall / f_wall:6.2f}x,   "
          f"CPU {cpu / f_cpu:6.2f}x")
    print(f"  shell loop + backlog bookkeeping:    wall {b_wall * ms:7.1f} ms, "
          f"CPU {b_cpu * ms:7.1f} ms ({wall / b_wall:.2f}x / {cpu / b_cpu:.2f}x of it)")
    print(f"{f'  ({n}-iteration run - start-up) / {n}:':<39}wall "
          f"{amortised_wall * ms:7.1f} ms, CPU {amortised_cpu * ms:7.1f} ms "
          f"({amortised_wall / f_wall:.2f}x / {amortised_cpu / f_cpu:.2f}x the floor)")
    if per_iteration_fsyncs is not None:
        print(f"  durable writes per iteration:        {per_iteration_fsyncs:.1f} fsync/fdatasync")
    if gaps:
        print(f"  agent exit -> loop notices (median): {median(gaps):7.1f} ms")
    print(f"  the watchdog's cost per iteration:   wall {watchdog_wall * ms:+7.1f} ms, "
          f"CPU {watchdog_cpu * ms:+7.1f} ms (runs with and without it, side by side)")


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
        (work / "books.sh").write_text(FLOOR_BOOKS)
        for label, items, files in cases:
            template = work / f"template-{items}-{files}"
            build(template, items, files)
            measure(template, work, label, min(options.iterations, items), options.runs)
            shutil.rmtree(template)
    print(f"goals: within {GOAL_RATIO:g}x the floor in wall time and CPU, flat in backlog "
          f"size; the watchdog under {WATCHDOG_GOAL_MS:g} ms per iteration")


if __name__ == "__main__":
    main()
