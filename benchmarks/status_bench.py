"""Benchmark: the pre-launch status check on a 100,000-file repository.

The repository (100,000 tracked files in 1,000 directories, 1,000 of them
modified, 1,000 untracked files) is generated once with ``git fast-import``
and ``git checkout``, then cached in the system temp directory between runs.

Timed in one run, each as a fresh process (wall clock, interpreter start-up
included, median of several interleaved rounds):

* ``git status --porcelain`` — the reference the hook must keep up with;
* the fast path as the pre-launch hook runs it: ``python -c`` importing only
  ``git_forge.tree.fast_status`` and calling ``porcelain_fast``;
* pygit2: ``import pygit2`` + ``Repository.status()``;
* git-forge's pygit2 ``porcelain()`` (what reconciliation uses);
* ``python -c pass``, for the interpreter's own share.

Usage: ``python benchmarks/status_bench.py [--rounds N] [--files N]``.
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

from timing import bench_env

DIRECTORIES = 1_000
MODIFIED = 1_000
UNTRACKED = 1_000
ENV = bench_env()


def git(*args: str, cwd: Path, input: bytes | None = None) -> None:
    subprocess.run(["git", *args], cwd=cwd, input=input, env=ENV, check=True,
                   stdout=subprocess.DEVNULL)


def fast_import_stream(files: int) -> bytes:
    per_dir = files // DIRECTORIES
    chunks = [b"commit refs/heads/main\n",
              b"committer Bench <bench@example.invalid> 1700000000 +0000\n",
              b"data 4\nbulk\n"]
    for number in range(files):
        directory, index = divmod(number, per_dir)
        content = f"file {number}\nline two of file {number}\n".encode()
        path = f"d{directory:04d}/f{index:04d}.txt".encode()
        chunks.append(b"M 100644 inline " + path + b"\ndata %d\n" % len(content) + content + b"\n")
    return b"".join(chunks)


def build_repository(root: Path, files: int) -> None:
    """Generate the repository: bulk commit, checkout, then the dirty state."""
    root.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=root)
    git("fast-import", "--quiet", cwd=root, input=fast_import_stream(files))
    git("checkout", "-q", "-f", "main", cwd=root)
    per_dir = files // DIRECTORIES
    for number in range(MODIFIED):
        directory = number % DIRECTORIES
        with open(root / f"d{directory:04d}/f{number // DIRECTORIES:04d}.txt", "ab") as handle:
            handle.write(b"modified\n")
    for number in range(UNTRACKED):
        directory = (number * 7) % DIRECTORIES
        (root / f"d{directory:04d}/new-{number:04d}.txt").write_bytes(b"untracked\n")
    assert per_dir > 0
    git("status", "--porcelain", cwd=root)  # settle the index's stat cache once


def cached_repository(files: int) -> Path:
    base = Path(tempfile.gettempdir()) / f"git-forge-status-bench-v1-{files}"
    ready = base / "READY"
    if not ready.exists():
        if base.exists():
            shutil.rmtree(base)
        started = time.perf_counter()
        build_repository(base / "repo", files)
        ready.write_text("ok\n")
        print(f"generated {base / 'repo'} in {time.perf_counter() - started:.1f} s")
    return base / "repo"


def timed(argv: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--files", type=int, default=100_000)
    options = parser.parse_args()
    repo = cached_repository(options.files)
    python = sys.executable
    candidates = {
        "git status --porcelain": ["git", "status", "--porcelain"],
        "fast path (python -c, fast_status.porcelain_fast)": [
            python, "-c",
            "import sys\nfrom git_forge.tree.fast_status import porcelain_fast\n"
            "sys.exit(1 if porcelain_fast('.') else 0)",
        ],
        "pygit2 Repository.status() (python -c)": [
            python, "-c", "import pygit2\npygit2.Repository('.').status()",
        ],
        "git-forge git_status.porcelain() (python -c)": [
            python, "-c",
            "from git_forge.tree.repo import open_repo\nfrom git_forge.tree.git_status import"
            " porcelain\nporcelain(open_repo('.'))",
        ],
        "python -c pass": [python, "-c", "pass"],
    }
    entries = subprocess.run(["git", "status", "--porcelain"], cwd=repo, check=True,
                             capture_output=True).stdout.count(b"\n")
    for argv in candidates.values():  # warm the page cache and the index stat data
        subprocess.run(argv, cwd=repo, stdout=subprocess.DEVNULL)
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(options.rounds):
        for name, argv in candidates.items():
            if name == "fast path (python -c, fast_status.porcelain_fast)":
                started = time.perf_counter()
                subprocess.run(argv, cwd=repo, stdout=subprocess.DEVNULL)  # exit 1: dirty
                samples[name].append(time.perf_counter() - started)
            else:
                samples[name].append(timed(argv, repo))
    medians = {name: statistics.median(values) for name, values in samples.items()}
    reference = medians["git status --porcelain"]
    print(f"repository: {options.files:,} tracked files, {MODIFIED:,} modified,"
          f" {UNTRACKED:,} untracked ({entries:,} porcelain lines); "
          f"median of {options.rounds} rounds, wall clock, fresh process each")
    for name, value in medians.items():
        print(f"  {name:<55} {value * 1000:8.1f} ms   {value / reference:5.2f}x git")
    fast = medians["fast path (python -c, fast_status.porcelain_fast)"]
    print(f"ratio fast path / git status = {fast / reference:.2f} (goal <= 1.5)")


if __name__ == "__main__":
    main()
