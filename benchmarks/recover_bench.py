"""Benchmark: ``git forge recover`` at scale, against ``recover --plan`` on the same input.

Scales (``--scales``, items:blocked:causes): 1,000:100:20, 10,000:1,000:50 and
30,000:3,000:50 by default. Goals: under two seconds at 1,000 items; at every scale
``recover`` within 3x ``recover --plan`` and growing linearly with the backlog.
The rest of this note describes the 1,000-item case; the others scale it.

The repository is built directly: a ``git forge init`` backlog whose
backlog.json is written by this script and committed — 1,000 items (600 done,
300 pending, 100 blocked with ``needsHuman``), dependency chains, and pending
items gated by blocked ones. The 100 blocked reasons come from 20 causes, 5
phrasings each, worded so that the topology's clustering (token Jaccard ≥ 0.5)
puts each cause's five items into one cluster and no two causes together.

Outside the timing, ``recover --plan --json`` lists the cluster ids (asserted:
20 questions of 5 items) and an answers file answers each one. Then
``git forge recover --non-interactive --answers FILE --json`` is timed as one
fresh process (wall clock, interpreter start-up included) on a fresh copy of
the repository, several times; the median is printed, and ``--profile`` adds
a cProfile breakdown of one in-process run.

Usage: ``python benchmarks/recover_bench.py [--rounds N] [--profile]``.
Goal: under two seconds.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import bench_env, forge

GOAL_S = 2.0
GOAL_RATIO = 3.0
ENV = bench_env(NO_COLOR="1")
#: Five phrasings of one cause; {a}..{d} are the cause's own words. Any two share
#: the cause's four words plus "which"/"the" (Jaccard ≥ 0.5); two causes share at
#: most the template words (≤ 0.3).
TEMPLATES = (
    "Which {a} {b} should the {c} {d} use?",
    "Which {a} {b} does the {c} {d} need?",
    "Unsure which {a} {b} the {c} {d} wants",
    "Which {a} {b} for the {c} {d}, please?",
    "Decide which {a} {b} the {c} {d} takes",
)


def letters(number: int) -> str:
    """0 → a, 25 → z, 26 → ba …: words without digits (digits are dropped as ids)."""
    text = ""
    while True:
        number, digit = divmod(number, 26)
        text = chr(ord("a") + digit) + text
        if not number:
            return text


def cause_words(cause: int) -> dict[str, str]:
    """Four letter-only words unique to ``cause``."""
    tag = letters(cause)
    return {"a": f"store{tag}", "b": f"engine{tag}", "c": f"module{tag}",
            "d": f"service{tag}"}


def item(n: int, items: int, blocked: int, causes: int) -> dict:
    """Item ``n`` (1-based): the last ``blocked`` are blocked (needs-human, ``causes``
    causes), the ``items * 3 // 10`` before them pending, the rest done."""
    width = len(str(items))
    entry = {"id": f"{n:0{width}d}", "type": "feature", "priority": 1 + n % 4,
             "title": f"Item {n}", "description": "Some words about the item. " * 3,
             "acceptanceCriteria": ["it works", "it is tested"],
             "status": "done", "completedAt": "2025-01-01T00:00:00Z", "needsHuman": False,
             "blockedReason": None,
             "dependsOn": [f"{n - 1:0{width}d}"] if n % 3 == 0 else []}
    if n > items - blocked:
        index = n - (items - blocked) - 1
        cause, phrasing = index % causes, index // causes % len(TEMPLATES)
        entry.update(status="blocked", completedAt=None, needsHuman=True,
                     blockedReason=TEMPLATES[phrasing].format(**cause_words(cause)))
    elif n > items - blocked - items * 3 // 10:
        entry.update(status="pending", completedAt=None)
        if n % 7 == 0:  # gated by a blocked item
            entry["dependsOn"] = [f"{items - (n % blocked):0{width}d}"]
    return entry


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True, stdout=subprocess.DEVNULL)


def build(root: Path, items: int, blocked: int, causes: int) -> None:
    root.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=root)
    (root / "README.md").write_text("bench\n")
    subprocess.run([*forge(), "init"], cwd=root, env=ENV, check=True, stdout=subprocess.DEVNULL)
    backlog = root / ".forge" / "backlog.json"
    document = json.loads(backlog.read_text())
    document["items"] = [item(n, items, blocked, causes) for n in range(1, items + 1)]
    backlog.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    git("add", "-A", cwd=root)
    git("commit", "-q", "-m", "backlog", cwd=root)


def answers_for(root: Path, path: Path, blocked: int, causes: int) -> int:
    """Ask ``recover --plan --json`` for the questions; answer each; return how many."""
    result = subprocess.run([*forge(), "recover", "--plan", "--json"], cwd=root, env=ENV,
                            check=True, capture_output=True)
    questions = json.loads(result.stdout)["questions"]
    sizes = sorted(len(q["itemIds"]) for q in questions)
    assert sizes == [blocked // causes] * causes, sizes
    path.write_text(json.dumps({q["id"]: f"Use the default for {q['id']}" for q in questions},
                               indent=2) + "\n")
    return len(questions)


def timed_plan(root: Path) -> float:
    started = time.perf_counter()
    subprocess.run([*forge(), "recover", "--plan", "--json"], cwd=root, env=ENV, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def timed_recover(root: Path, answers: Path, blocked: int) -> tuple[float, dict]:
    started = time.perf_counter()
    result = subprocess.run(
        [*forge(), "recover", "--non-interactive", "--answers", str(answers), "--json"],
        cwd=root, env=ENV, capture_output=True)
    elapsed = time.perf_counter() - started
    report = json.loads(result.stdout)
    if result.returncode != 0 or len(report["applied"]) != blocked:
        raise SystemExit(f"recover exited {result.returncode}: {result.stderr.decode()}"
                         f" {report.get('outcome')} {report.get('failure')}")
    return elapsed, report


def profile_once(root: Path, answers: Path) -> str:
    """A cProfile of one in-process run, the 25 most expensive calls by cumulative time."""
    from git_forge.cli.main import main

    previous = os.getcwd()
    os.chdir(root)
    profiler = cProfile.Profile()
    try:
        with open(os.devnull, "w") as sink:
            stdout, sys.stdout = sys.stdout, sink
            try:
                profiler.runcall(main, ["recover", "--non-interactive", "--answers",
                                        str(answers), "--json"])
            finally:
                sys.stdout = stdout
    finally:
        os.chdir(previous)
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text)
    stats.sort_stats("cumulative").print_stats(25)
    return text.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--scales", default="1000:100:20,10000:1000:50,30000:3000:50")
    parser.add_argument("--profile", action="store_true")
    options = parser.parse_args()
    per_item: list[tuple[int, float]] = []
    for scale in options.scales.split(","):
        items, blocked, causes = (int(part) for part in scale.split(":"))
        with tempfile.TemporaryDirectory() as tmp:
            pristine = Path(tmp) / "pristine"
            build(pristine, items, blocked, causes)
            answers = Path(tmp) / "answers.json"
            questions = answers_for(pristine, answers, blocked, causes)
            size = (pristine / ".forge" / "backlog.json").stat().st_size
            samples, plans, report = [], [], {}
            for round_number in range(options.rounds):
                root = Path(tmp) / f"round-{round_number}"
                shutil.copytree(pristine, root, symlinks=True)
                plans.append(timed_plan(root))
                elapsed, report = timed_recover(root, answers, blocked)
                samples.append(elapsed)
            profile = ""
            if options.profile:
                root = Path(tmp) / "profiled"
                shutil.copytree(pristine, root, symlinks=True)
                os.environ.update({k: v for k, v in ENV.items() if k.startswith("GIT_")})
                profile = profile_once(root, answers)
        median, plan = statistics.median(samples), statistics.median(plans)
        per_item.append((items, median))
        print(f"backlog: {items:,} items ({size / 1e6:.2f} MB), {blocked:,} blocked "
              f"(needs-human) in {questions} clusters of {blocked // causes}")
        print(f"  recover --non-interactive --answers FILE --json: median {median:.2f} s of "
              f"{options.rounds} (min {min(samples):.2f}, max {max(samples):.2f})")
        print(f"  recover --plan --json: median {plan:.2f} s; ratio {median / plan:.2f}x "
              f"(goal <= {GOAL_RATIO:g}x)")
        print(f"  outcome {report['outcome']}, {len(report['recorded'])} recorded, "
              f"{len(report['applied'])} applied, {len(report['proof']['movers'])} moved")
        if items == 1_000:
            print(f"  goal at 1,000 items: under {GOAL_S:.0f} s — "
                  f"{'met' if median < GOAL_S else 'MISSED'}")
        if profile:
            print(profile)
    if len(per_item) > 1:
        (small, t_small), (large, t_large) = per_item[0], per_item[-1]
        print(f"growth: {large / small:.0f}x the items took {t_large / t_small:.1f}x the time "
              "(linear would be about the same factor, less the fixed start-up)")


if __name__ == "__main__":
    main()
