"""Benchmark: output capture at pipe speed, in bounded memory.

A child writes N bytes to stdout as fast as it can (1 MiB writes). Measured in
one run, alternating, median of several rounds:

* baseline — the same child piped into ``cat > /dev/null``;
* reference — a plain Python ``os.read`` loop on the child's stdout;
* supervisor — the child started through ``Supervisor.start`` and drained into
  its 64 MiB spool, timed from ``start`` to ``wait`` returning (terminal
  manifest durable, spool flushed and fsynced, events published).

The supervisor runs in its own Python process so that its peak RSS
(``ru_maxrss``) is its own; it is measured for 1 GiB and for 128 MiB of output
to show that memory does not grow with the amount of output.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

GIB = 1024**3
MIB = 1024**2
ROUNDS = 7

WRITER = (
    "import os, sys\n"
    "total = int(sys.argv[1]); block = b'x' * (1 << 20); fd = sys.stdout.fileno()\n"
    "while total > 0:\n"
    "    view = memoryview(block)[:min(total, len(block))]\n"
    "    total -= len(view)\n"
    "    while len(view):\n"
    "        view = view[os.write(fd, view):]\n"
)

SUPERVISED = """
import json, resource, sys, tempfile, time
from pathlib import Path
from git_forge.supervisor.config import SupervisorConfig
from git_forge.supervisor.manifest import ManifestStore
from git_forge.supervisor.process import PreparedProcess
from git_forge.supervisor.supervisor import Supervisor

size = int(sys.argv[1])
with tempfile.TemporaryDirectory() as tmp:
    root = Path(tmp) / "proc"
    supervisor = Supervisor(SupervisorConfig(), ManifestStore(root))
    argv = [sys.executable, "-c", sys.argv[2], str(size)]
    started = time.perf_counter()
    handle = supervisor.start({"run_id": "bench"}, None, PreparedProcess(argv, cwd=tmp))
    manifest = supervisor.wait(handle)
    elapsed = time.perf_counter() - started
    on_disk = sum(f.stat().st_size for f in (root / f"{handle}.spool").glob("*.seg"))
    supervisor.shutdown()
print(json.dumps({
    "seconds": elapsed,
    "state": manifest.state,
    "total_bytes": manifest.cursors.total_bytes,
    "retained_bytes": manifest.cursors.total_bytes - manifest.cursors.retained_from,
    "on_disk": on_disk,
    "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
}))
"""


def baseline(size: int) -> float:
    """The same child piped into ``cat > /dev/null``."""
    started = time.perf_counter()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(size)], stdout=subprocess.PIPE)
    cat = subprocess.Popen(["cat"], stdin=writer.stdout, stdout=subprocess.DEVNULL)
    assert writer.stdout is not None
    writer.stdout.close()
    writer.wait()
    cat.wait()
    return time.perf_counter() - started


def read_loop(size: int) -> float:
    """For reference: a plain Python loop reading the child's stdout (no spool)."""
    started = time.perf_counter()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(size)], stdout=subprocess.PIPE,
                              bufsize=0)
    assert writer.stdout is not None
    fd = writer.stdout.fileno()
    while os.read(fd, 1 << 20):
        pass
    writer.wait()
    return time.perf_counter() - started


def supervised(size: int) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", SUPERVISED, str(size), WRITER],
        capture_output=True, text=True, check=True,
    )
    report = json.loads(result.stdout)
    if report["state"] != "exited" or report["total_bytes"] != size:
        raise SystemExit(f"supervised run went wrong: {report}")
    return report


def idle_rss_kib() -> int:
    """Peak RSS of a process that only imports the supervisor (the floor)."""
    script = (
        "import resource\n"
        "import git_forge.supervisor.supervisor\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    return int(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              check=True).stdout)


def main() -> None:
    cat_times: list[float] = []
    loop_times: list[float] = []
    runs: list[dict] = []
    for _ in range(ROUNDS):  # interleaved, so a noisy moment hits every contender
        cat_times.append(baseline(GIB))
        loop_times.append(read_loop(GIB))
        runs.append(supervised(GIB))
    small = [supervised(128 * MIB) for _ in range(3)]
    cat_s = statistics.median(cat_times)
    loop_s = statistics.median(loop_times)
    sup_s = statistics.median(run["seconds"] for run in runs)
    rss_big = max(run["maxrss_kib"] for run in runs)
    rss_small = max(run["maxrss_kib"] for run in small)
    last = runs[-1]
    print(f"1 GiB from a child writing 1 MiB blocks; median (min) of {ROUNDS} interleaved rounds")
    print(f"  child | cat > /dev/null:            {cat_s:6.3f} s  ({min(cat_times):.3f})")
    print(f"  child -> plain Python read loop:    {loop_s:6.3f} s  ({min(loop_times):.3f})")
    print(f"  child -> supervisor (64 MiB spool): {sup_s:6.3f} s  "
          f"({min(run['seconds'] for run in runs):.3f})")
    print(f"  ratio supervisor / cat:             {sup_s / cat_s:6.2f}")
    print(f"  spool after 1 GiB: {last['total_bytes']:,} bytes counted, "
          f"{last['retained_bytes'] / MIB:.0f} MiB retained, "
          f"{last['on_disk'] / MIB:.0f} MiB on disk")
    print("peak RSS of the supervising process (ru_maxrss)")
    print(f"  imports only:          {idle_rss_kib() / 1024:6.1f} MiB")
    print(f"  128 MiB of output:     {rss_small / 1024:6.1f} MiB")
    print(f"  1 GiB of output:       {rss_big / 1024:6.1f} MiB")


if __name__ == "__main__":
    main()
