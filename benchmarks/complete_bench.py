"""Benchmark: the completion fast path, ``git-forge __complete KIND``, as a TAB runs it.

Every TAB on a dynamic value (item ids, clusters, handles, backlog dirs) starts a
fresh ``git-forge`` process, so this times exactly that: wall clock of a fresh
process, interpreter start-up included, median of several interleaved rounds, in a
real repository made by ``git forge init`` with a backlog of ``--items`` items (a
fifth of them blocked, on a handful of reasons so that they cluster) and
``--handles`` process manifests. For reference it also times ``python -c pass``,
``git-forge version`` (a command read and run, no parser built) and one whole TAB in bash
(``git forge backlog answer <TAB>`` through git's own bash completion).

Usage: ``python benchmarks/complete_bench.py [--rounds N] [--items N] [--handles N]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import bench_env, forge

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
FORGE = forge()[0] if (BIN / "git-forge").exists() else shutil.which("git-forge")
GIT_BASH_COMPLETION = Path("/usr/share/bash-completion/completions/git")
ENV = bench_env(PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
REASONS = ("waiting on the database schema decision", "which auth provider should we use",
           "flaky network in the integration test", "needs the design review outcome",
           "licence of the vendored parser unclear")


def build_project(root: Path, items: int, handles: int) -> None:
    from git_forge.jsonfile import write_json

    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True, env=ENV)
    subprocess.run([FORGE, "init"], cwd=root, check=True, env=ENV, stdout=subprocess.DEVNULL)
    document = {"schemaVersion": "1", "project": "bench", "description": "", "items": []}
    for number in range(1, items + 1):
        blocked = number % 5 == 0
        item = {"id": f"{number:03d}", "type": "feature", "priority": 2,
                "title": f"Item number {number}", "description": "", "acceptanceCriteria": [],
                "status": "blocked" if blocked else "pending", "completedAt": None,
                "dependsOn": [f"{number - 1:03d}"] if number % 7 == 0 else [], "notes": ""}
        if blocked:
            item.update(blockedReason=REASONS[number % len(REASONS)], needsHuman=True,
                        deferred=False)
        document["items"].append(item)
    write_json(root / ".forge" / "backlog.json", document)
    proc = root / ".forge" / "proc"
    proc.mkdir()
    for number in range(handles):
        handle = f"{number:022d}"
        write_json(proc / f"{handle}.manifest.json",
                   {"version": 1, "handle": handle, "origin": {"item_id": "005"},
                    "state": "exited"})


def timed(argv: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=ENV, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def bash_tab(completion: Path) -> list[str]:
    """One whole ``git forge backlog answer <TAB>`` in a fresh bash, as git's completion
    runs it (sourcing the scripts included)."""
    script = (f"source {GIT_BASH_COMPLETION}; source {completion}; "
              "COMP_WORDS=(git forge backlog answer ''); COMP_CWORD=4; "
              "COMP_LINE='git forge backlog answer '; COMP_POINT=${#COMP_LINE}; "
              "__git_wrap__git_main")
    return ["bash", "--norc", "--noprofile", "-c", script]


def main() -> int:
    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_argument("--rounds", type=int, default=15)
    cli.add_argument("--items", type=int, default=1000)
    cli.add_argument("--handles", type=int, default=50)
    args = cli.parse_args()
    if FORGE is None:
        print("git-forge is not installed", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="git-forge-complete-bench-") as tmp:
        project = Path(tmp) / "project"
        build_project(project, args.items, args.handles)
        cases: dict[str, list[str]] = {"python -c pass": [sys.executable, "-c", "pass"]}
        for kind in ("items", "blocked", "answerable", "clusters", "handles", "backlogs"):
            cases[f"__complete {kind}"] = [FORGE, "__complete", kind]
        cases["__complete items --describe"] = [FORGE, "__complete", "items", "--describe"]
        cases["git-forge version"] = [FORGE, "version"]
        if GIT_BASH_COMPLETION.is_file():
            cases["bash: git forge backlog answer <TAB>"] = bash_tab(
                ROOT / "completions" / "git-forge.bash")
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for argv in cases.values():  # warm the page cache once
            timed(argv, project)
        for _ in range(args.rounds):
            for name, argv in cases.items():
                samples[name].append(timed(argv, project))
    print(f"completion fast path: {args.items} items ({args.items // 5} blocked), "
          f"{args.handles} handles; median of {args.rounds} fresh processes")
    width = max(len(name) for name in cases)
    for name, values in samples.items():
        print(f"  {name:<{width}}  {statistics.median(values) * 1000:7.1f} ms"
              f"  (min {min(values) * 1000:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
