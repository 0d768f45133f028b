"""Benchmark: what the sandbox (``--sandbox bwrap``) costs an agent's start.

Three figures, each with and without the sandbox, interleaved (a round runs one of
each, in turn), medians over the rounds, wall clock:

* **spawn** — ``/bin/true`` started and waited for by ``subprocess.run``: the
  bare price of bubblewrap (its namespaces, its mounts, the two ``env`` it runs
  through) — the wrapper as ``supervisor.sandbox.Sandbox.wrap`` builds it for a
  serial run's agent (its tree writable, the state dir read-only);
* **supervised** — the same command through ``Supervisor.start`` → ``wait``
  (manifest, spool, watchdog), as the loop starts every agent;
* **loop** — ``git forge loop run`` over 8 items with an instant agent (it reads
  its prompt, writes a file and says ``FORGE_DONE``), per item: what a user sees.

Usage: ``python benchmarks/sandbox_bench.py [--rounds 15] [--items 8]``. The goal
(issue: "the cost per agent is a few milliseconds"): the supervised start's extra
cost under 10 ms.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from parallel_bench import build, run
from timing import forge

from git_forge.supervisor.config import SupervisorConfig
from git_forge.supervisor.manifest import ManifestStore
from git_forge.supervisor.process import PreparedProcess
from git_forge.supervisor.sandbox import Sandbox, SandboxError, check
from git_forge.supervisor.supervisor import Supervisor

GOAL_MS = 10.0
AGENT = """#!/bin/sh
cat >/dev/null
echo "done by the agent" > "item-$FORGE_ITEM_ID.txt"
echo FORGE_DONE
"""


def sandbox_for(root: Path, template: Sandbox) -> Sandbox:
    return replace(template, writable=(root, root / ".git"), read_only=(root / ".forge",),
                   visible=(root,))


def spawn_ms(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)
    return (time.perf_counter() - started) * 1000


def supervised_ms(supervisor: Supervisor, cwd: Path, sandbox: Sandbox | None) -> float:
    started = time.perf_counter()
    handle = supervisor.start({"run_id": "bench"}, None,
                              PreparedProcess(["true"], cwd=cwd, sandbox=sandbox))
    supervisor.wait(handle)
    return (time.perf_counter() - started) * 1000


def loop_ms_per_item(template: Path, work: Path, agent: Path, items: int,
                     sandbox: str) -> float:
    copy = work / f"run-{sandbox}-{time.monotonic_ns()}"
    shutil.copytree(template, copy, symlinks=True)
    started = time.perf_counter()
    run(*forge(), "loop", "run", "--agent", str(agent), "--sandbox", sandbox,
        "--iterations", str(items), cwd=copy)
    elapsed = (time.perf_counter() - started) * 1000
    shutil.rmtree(copy)
    return elapsed / items


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--items", type=int, default=8)
    args = parser.parse_args()
    try:
        template = check()
    except SandboxError as exc:
        print(f"no sandbox here: {exc}")
        return 1
    figures: dict[str, dict[str, list[float]]] = {
        name: {"without": [], "with": []} for name in ("spawn", "supervised", "loop")}
    with tempfile.TemporaryDirectory(prefix="sandbox-bench-") as scratch:
        work = Path(scratch)
        repo = work / "template"
        build(repo, args.items)
        agent = work / "agent.sh"
        agent.write_text(AGENT)
        agent.chmod(0o755)
        sandbox = sandbox_for(repo, template)
        supervisor = Supervisor(SupervisorConfig(), ManifestStore(work / "proc"))
        try:
            for _ in range(args.rounds):
                figures["spawn"]["without"].append(spawn_ms(["true"]))
                figures["spawn"]["with"].append(spawn_ms(sandbox.wrap(["true"], repo)))
                figures["supervised"]["without"].append(supervised_ms(supervisor, repo, None))
                figures["supervised"]["with"].append(supervised_ms(supervisor, repo, sandbox))
            for _ in range(max(3, args.rounds // 5)):
                for mode, key in (("none", "without"), ("bwrap", "with")):
                    figures["loop"][key].append(
                        loop_ms_per_item(repo, work, agent, args.items, mode))
        finally:
            supervisor.shutdown()
    print(f"sandbox cost per agent start (wall ms, medians; {args.rounds} rounds, "
          f"{args.items}-item loop runs)")
    print(f"{'':<12}{'without':>9}{'with':>9}{'cost':>9}")
    for name, label in (("spawn", "spawn"), ("supervised", "supervised"),
                        ("loop", "loop/item")):
        without = statistics.median(figures[name]["without"])
        with_ = statistics.median(figures[name]["with"])
        print(f"{label:<12}{without:>9.1f}{with_:>9.1f}{with_ - without:>+9.1f}")
    cost = (statistics.median(figures["supervised"]["with"])
            - statistics.median(figures["supervised"]["without"]))
    verdict = "meets" if cost <= GOAL_MS else "misses"
    print(f"a supervised start costs {cost:.1f} ms more sandboxed — {verdict} the goal of "
          f"{GOAL_MS:g} ms")
    return 0 if cost <= GOAL_MS else 1


if __name__ == "__main__":
    sys.exit(main())
