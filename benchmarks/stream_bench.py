"""Benchmark: reading a 100 MB Claude Code ``stream-json`` transcript as it is spooled.

A child process writes the transcript to its stdout as fast as a pipe takes it
(``cat`` of a file made here: an init line, then assistant text and tool events
of a few KiB each, rate-limit events, and the final result). It runs under the
supervisor twice per round: once plainly (the drain, spool and window alone)
and once with the Claude stream reader observing stdout — what ``loop run
--agent claude`` does. Medians of ``--rounds`` rounds; the reader's own peak
memory (tracemalloc, fed the same bytes in the same chunks) is measured on 10
and 100 MB to show it is flat in the transcript's size.

Usage: ``python benchmarks/stream_bench.py [--megabytes N] [--rounds R]``.
Goal: within 1.5x the plain drain; the reader's memory flat.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from agent_streams import (  # noqa: E402
    claude_assistant,
    claude_init,
    claude_rate_limit,
    claude_result,
    claude_tool_use,
)

from git_forge.agents.streams import ClaudeStream  # noqa: E402
from git_forge.supervisor.config import SupervisorConfig  # noqa: E402
from git_forge.supervisor.manifest import ManifestStore  # noqa: E402
from git_forge.supervisor.process import PreparedProcess  # noqa: E402
from git_forge.supervisor.supervisor import Supervisor  # noqa: E402

GOAL = 1.5


def transcript(path: Path, megabytes: int) -> int:
    body = "\n".join([claude_assistant("s", "Let me look at the code. " * 120),
                      claude_tool_use("s"),
                      claude_rate_limit("s", "allowed", 1767270000)]) + "\n"
    block = body.encode()
    count = megabytes * 1024 * 1024 // len(block)
    with open(path, "wb") as handle:
        handle.write((claude_init("s") + "\n").encode())
        for _ in range(count):
            handle.write(block)
        handle.write((claude_result("s", "Finished.\nFORGE_DONE") + "\n").encode())
    return path.stat().st_size


def run_once(root: Path, path: Path, reader: ClaudeStream | None) -> float:
    supervisor = Supervisor(SupervisorConfig(), ManifestStore(root))
    try:
        observe = None
        if reader is not None:
            def observe(stream: str, data: bytes) -> None:
                if stream == "stdout":
                    reader.feed(data)

        started = time.perf_counter()
        handle = supervisor.start({"run_id": "bench"}, None, PreparedProcess(
            ["cat", str(path)], cwd=str(root), observe=observe))
        supervisor.wait(handle, timeout=600)
        elapsed = time.perf_counter() - started
    finally:
        supervisor.shutdown()
    if reader is not None:
        assert reader.finish().final_text.endswith("FORGE_DONE")
    return elapsed


def reader_peak(path: Path, chunk: int = 1024 * 1024) -> int:
    reader = ClaudeStream()
    tracemalloc.start()
    with open(path, "rb") as handle:
        while data := handle.read(chunk):
            reader.feed(data)
    reader.finish()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        big = work / "big.jsonl"
        size = transcript(big, options.megabytes)
        plain, parsed = [], []
        for index in range(options.rounds):
            plain.append(run_once(work / f"plain-{index}", big, None))
            parsed.append(run_once(work / f"parsed-{index}", big, ClaudeStream()))
        small = work / "small.jsonl"
        transcript(small, max(1, options.megabytes // 10))
        peaks = (reader_peak(small), reader_peak(big))
    mib = size / 2**20
    base, with_reader = statistics.median(plain), statistics.median(parsed)
    print(f"transcript: {mib:.0f} MiB of stream-json, medians of {options.rounds}")
    print(f"  plain drain:             {base:6.2f} s  ({mib / base:7.1f} MiB/s)")
    print(f"  with the Claude reader:  {with_reader:6.2f} s  ({mib / with_reader:7.1f} MiB/s)"
          f"  ratio {with_reader / base:.2f}x (goal <= {GOAL:g}x)")
    print(f"  reader peak memory: {peaks[0] / 2**20:.2f} MiB on a tenth of it, "
          f"{peaks[1] / 2**20:.2f} MiB on all of it")


if __name__ == "__main__":
    main()
