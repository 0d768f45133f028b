"""Benchmark: what the supervisor costs per process, apart from the output.

* the exit gap — from the agent's exit to ``Supervisor.wait`` returning (the
  agent is ``date``, which prints the moment it is about to exit);
* durable writes per process — ``fsync``/``fdatasync`` calls of a supervisor
  starting and waiting for ``true`` N times, counted with ``strace -f -c``
  (skipped when strace is missing), minus those of the same supervisor with
  no process;
* launch cost in history — a new supervisor's ``restore`` and its first
  start/wait, in a process root that already holds 10 and 10,000 earlier
  processes (terminal, published; spread over 10 runs). The first launch
  after the history was written and later ones are shown apart; then a prune
  to the last 10 runs (the 3 launches added runs of their own), and another.

Usage: ``python benchmarks/proc_bench.py [--runs N] [--history 10,10000]``.
Goals: the exit gap a few ms; launch after 10,000 earlier processes about the
cost after 10.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from git_forge.atomic import atomic_write
from git_forge.supervisor.config import SupervisorConfig
from git_forge.supervisor.handles import mint_handle
from git_forge.supervisor.manifest import ManifestStore
from git_forge.supervisor.process import PreparedProcess
from git_forge.supervisor.supervisor import Supervisor

CHILD = """
import sys
from pathlib import Path
from git_forge.supervisor.config import SupervisorConfig
from git_forge.supervisor.manifest import ManifestStore
from git_forge.supervisor.process import PreparedProcess
from git_forge.supervisor.supervisor import Supervisor
root, count, argv = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
with Supervisor(SupervisorConfig(), ManifestStore(root)) as supervisor:
    supervisor.restore()
    for _ in range(count):
        handle = supervisor.start({"run_id": "bench"}, None, PreparedProcess(argv, cwd="/"))
        supervisor.wait(handle, timeout=60)
"""


def exit_gaps(root: Path, runs: int) -> list[float]:
    """ms from ``date``'s last moment to ``wait`` returning, one supervisor."""
    gaps = []
    with Supervisor(SupervisorConfig(), ManifestStore(root)) as supervisor:
        for _ in range(runs):
            handle = supervisor.start({"run_id": "bench"}, None,
                                      PreparedProcess(["date", "+%s.%N"], cwd="/"))
            supervisor.wait(handle, timeout=60)
            returned = time.time()
            printed = float(supervisor.read(handle, 0, 100).data)
            gaps.append((returned - printed) * 1000)
    return gaps


def fsyncs(root: Path, count: int, argv: tuple[str, ...] = ("true",)) -> int | None:
    if shutil.which("strace") is None:
        return None
    out = root.parent / f"strace-{count}.txt"
    subprocess.run(["strace", "-f", "-c", "-o", str(out), "-e", "trace=fsync,fdatasync",
                    sys.executable, "-c", CHILD, str(root), str(count), *argv],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    calls = 0
    for line in out.read_text().splitlines():
        match = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(fsync|fdatasync)$",
                         line)
        if match:
            calls += int(match.group(1))
    return calls


def history(root: Path, count: int, runs: int = 10) -> None:
    """``count`` finished processes in ``root`` (as the supervisor leaves them), in
    ``runs`` runs, written directly: saving each through the store would take
    two fsyncs apiece to build the fixture."""
    root.mkdir(parents=True)
    template = None
    with Supervisor(SupervisorConfig(), ManifestStore(root)) as supervisor:
        handle = supervisor.start({"run_id": "seed"}, {"item_id": "1", "iteration": 1},
                                  PreparedProcess(["echo", "hello"], cwd="/"))
        template = supervisor.wait(handle, timeout=60).to_dict()
        spool = root / f"{handle}.spool"
    segment = next(spool.glob("*.seg")).read_bytes()
    index = (spool / "index.json").read_bytes()
    shutil.rmtree(spool)
    for suffix in (".manifest.json", ".alive"):
        (root / f"{handle}{suffix}").unlink(missing_ok=True)
    for number in range(count):
        handle = mint_handle()
        document = {**template, "handle": handle,
                    "owner": {"run_id": f"run-{number * runs // count:03d}"},
                    "origin": {"item_id": str(number), "iteration": 1}}
        atomic_write(root / f"{handle}.manifest.json",
                     json.dumps(document).encode(), mode=0o600, durable=False)
        directory = root / f"{handle}.spool"
        directory.mkdir()
        (directory / "00000000000000000000.seg").write_bytes(segment)
        (directory / "index.json").write_bytes(index)


def launch(root: Path) -> tuple[float, float]:
    """(restore, restore + the first start and wait), in ms."""
    started = time.perf_counter()
    with Supervisor(SupervisorConfig(keep_runs=1000) if _has_keep_runs() else
                    SupervisorConfig(), ManifestStore(root)) as supervisor:
        supervisor.restore()
        restored = time.perf_counter()
        handle = supervisor.start({"run_id": f"later-{time.time_ns()}"}, None,
                                  PreparedProcess(["true"], cwd="/"))
        supervisor.wait(handle, timeout=60)
        finished = time.perf_counter()
    return (restored - started) * 1000, (finished - started) * 1000


def prune(root: Path) -> tuple[float, int]:
    """(ms, processes removed) of one prune to the last 10 runs."""
    from git_forge.supervisor.manifest import ManifestStore
    from git_forge.supervisor.retention import prune as prune_root

    store = ManifestStore(root)
    started = time.perf_counter()
    report = prune_root(store, store.paths, 10)
    return (time.perf_counter() - started) * 1000, len(report.removed)


def _has_keep_runs() -> bool:
    return "keep_runs" in SupervisorConfig.__dataclass_fields__


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--history", default="10,10000")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        gaps = exit_gaps(work / "gaps", options.runs)
        print(f"agent exit -> wait returns: median {statistics.median(gaps):.2f} ms, "
              f"max {max(gaps):.2f} ms ({options.runs} processes)")
        count = 20
        none = fsyncs(work / "fs0", 0)
        for argv in (("true",), ("echo", "hello")):
            some = fsyncs(work / f"fs-{argv[0]}", count, argv)
            if none is not None and some is not None:
                print(f"durable writes per process ({' '.join(argv)}): "
                      f"{(some - none) / count:.1f} fsync/fdatasync ({none} with no process)")
        for size in (int(n) for n in options.history.split(",")):
            root = work / f"history-{size}"
            history(root, size)
            first = launch(root)
            again = [launch(root) for _ in range(3)]
            steady = (statistics.median(a[0] for a in again),
                      statistics.median(a[1] for a in again))
            print(f"after {size:>6,} earlier processes: restore {first[0]:7.1f} ms, "
                  f"launch {first[1]:7.1f} ms (first); restore {steady[0]:7.1f} ms, "
                  f"launch {steady[1]:7.1f} ms (later, median of 3)")
            if _has_keep_runs():
                pruned = prune(root)
                again = prune(root)
                print(f"  prune to the last 10 runs: {pruned[0]:7.1f} ms ({pruned[1]:,} "
                      f"removed); then {again[0]:7.1f} ms ({again[1]:,} removed)")


if __name__ == "__main__":
    main()
