"""Benchmark: ``git-forge preflight`` against ``git status --porcelain``.

The repository is ``status_bench``'s (100,000 tracked files, 1,000 modified,
1,000 untracked — generated once with the same generator, cached in the system
temp directory), plus a committed ``git forge init`` backlog and a prior run's
``state.json``: so ``preflight`` takes the STOP path, names that run and lists
2,000 stranded paths (exit 1). A clean clone of it (cached too) times the
clean-tree path, which answers "go" (exit 0) silently.

Timed in one run, each as a fresh process (wall clock, interpreter start-up
included, several interleaved rounds): ``git status --porcelain`` and the
installed ``git-forge preflight`` (the launcher, ``bin/git-forge``), in both trees. The goal is
judged on medians; minima are printed too, as the figure least disturbed by
whatever else the machine is doing.

Usage: ``python benchmarks/preflight_bench.py [--rounds N] [--files N]``.
Goal: preflight / git status ≤ 1.5.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from status_bench import ENV, build_repository, git
from timing import forge

GOAL = 1.5
STATE = {"schemaVersion": "1", "status": "stopped", "runId": "20250101T000000Z-bench0",
         "startedAt": "2025-01-01T00:00:00Z", "currentItem": "007", "iteration": 7,
         "maxIterations": 50, "completedItems": ["001", "002"], "blockedItems": ["004"],
         "deferredItems": [], "needsHumanItems": ["003"], "lastSignal": "error",
         "baseCommitHash": None}


def forge_bin() -> str:
    return forge()[0]


def add_backlog(repo: Path) -> None:
    """``git forge init``, committed alone; then a prior run's state.json."""
    subprocess.run([forge_bin(), "init"], cwd=repo, env=ENV, check=True,
                   stdout=subprocess.DEVNULL)
    git("add", "--", ".forge", ".forge.yaml", cwd=repo)
    git("commit", "-q", "-m", "backlog", "--", ".forge", ".forge.yaml", cwd=repo)
    (repo / ".forge" / "state.json").write_text(json.dumps(STATE, indent=2) + "\n")


def cached_repositories(files: int) -> tuple[Path, Path]:
    """(dirty, clean): the generated repository with a backlog, and a clean clone."""
    base = Path(tempfile.gettempdir()) / f"git-forge-preflight-bench-v1-{files}"
    ready = base / "READY"
    if not ready.exists():
        if base.exists():
            shutil.rmtree(base)
        started = time.perf_counter()
        build_repository(base / "dirty", files)
        add_backlog(base / "dirty")
        git("clone", "-q", str(base / "dirty"), str(base / "clean"), cwd=base)
        (base / "clean" / ".forge" / "state.json").write_text(json.dumps(STATE, indent=2) + "\n")
        for repo in (base / "dirty", base / "clean"):
            git("status", "--porcelain", cwd=repo)  # settle the index's stat cache once
        ready.write_text("ok\n")
        print(f"generated {base} in {time.perf_counter() - started:.1f} s")
    return base / "dirty", base / "clean"


def timed(argv: list[str], cwd: Path, expect: int) -> float:
    started = time.perf_counter()
    code = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode
    elapsed = time.perf_counter() - started
    if code != expect:
        raise SystemExit(f"{argv} in {cwd} exited {code}, expected {expect}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--files", type=int, default=100_000)
    options = parser.parse_args()
    dirty, clean = cached_repositories(options.files)
    stop = subprocess.run([forge_bin(), "preflight"], cwd=dirty, capture_output=True)
    stranded = sum(1 for line in stop.stderr.decode().splitlines() if line.startswith("  ")
                   and line[2:4] in ("??", " M"))
    assert stop.returncode == 1 and stranded == 2_000, (stop.returncode, stranded)
    candidates = {
        "dirty: git status --porcelain": (["git", "status", "--porcelain"], dirty, 0),
        "dirty: git-forge preflight (STOP, exit 1)": ([forge_bin(), "preflight"], dirty, 1),
        "clean: git status --porcelain": (["git", "status", "--porcelain"], clean, 0),
        "clean: git-forge preflight (go, exit 0)": ([forge_bin(), "preflight"], clean, 0),
        "python -c pass": ([sys.executable, "-c", "pass"], clean, 0),
    }
    for argv, cwd, expect in candidates.values():  # warm the page cache and stat data
        timed(argv, cwd, expect)
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(options.rounds):
        for name, (argv, cwd, expect) in candidates.items():
            samples[name].append(timed(argv, cwd, expect))
    medians = {name: statistics.median(values) for name, values in samples.items()}
    minima = {name: min(values) for name, values in samples.items()}
    print(f"repository: {options.files:,} tracked files; dirty tree: 1,000 modified, "
          f"1,000 untracked, a prior state.json ({stranded:,} stranded lines); clean clone; "
          f"{options.rounds} interleaved rounds, wall clock, fresh process each")
    print(f"  {'':<45} {'median':>8}        {'':>9}   {'min':>8}")
    for name, value in medians.items():
        reference = ("dirty" if name.startswith("dirty") else "clean") + ": git status --porcelain"
        print(f"  {name:<45} {value * 1000:8.1f} ms   {value / medians[reference]:5.2f}x git"
              f"   {minima[name] * 1000:8.1f} ms   {minima[name] / minima[reference]:5.2f}x git")
    for tree in ("dirty", "clean"):
        forge = next(n for n in medians if n.startswith(f"{tree}: git-forge"))
        ratio = medians[forge] / medians[f"{tree}: git status --porcelain"]
        best = minima[forge] / minima[f"{tree}: git status --porcelain"]
        verdict = "met" if ratio <= GOAL else "MISSED"
        print(f"ratio preflight / git status ({tree}) = {ratio:.2f} of medians, {best:.2f} of "
              f"minima (goal <= {GOAL}) — {verdict}")


if __name__ == "__main__":
    main()
