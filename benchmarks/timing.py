"""What the benchmark scripts share: the timing helper, the environment their git
and git-forge processes run in, and where git-forge is."""

from __future__ import annotations

import functools
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

#: A fixed identity: the scripts' repositories commit, whatever the machine has set.
IDENTITY = {
    "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def bench_env(**extra: str) -> dict[str, str]:
    """The caller's environment with ``IDENTITY`` and ``extra`` over it."""
    return {**os.environ, **IDENTITY, **extra}


def forge() -> list[str]:
    """The ``git-forge`` installed beside this interpreter, its modules compiled.

    ``pip install .`` compiles them, and Python caches what it compiles; where
    ``PYTHONDONTWRITEBYTECODE`` is set and git-forge is installed editable, every
    process would compile every module it imports again (~100 ms of each start),
    which no user pays. Compiled once per benchmark process."""
    _compile_git_forge()
    return [str(Path(sys.executable).with_name("git-forge"))]


@functools.cache
def _compile_git_forge() -> None:
    import compileall

    import git_forge

    compileall.compile_dir(str(Path(git_forge.__file__).parent), quiet=1)


def timed(fn: Callable[[], object], repeat: int = 5) -> float:
    """The median wall time of ``repeat`` calls of ``fn``, in seconds."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def run_timed(argv: list[str], cwd: Path, env: dict[str, str],
              ok: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """(wall s, CPU s) of one fresh process; its CPU is user + system time of it and
    of every process under it that was waited for (``RUSAGE_CHILDREN``, before and
    after: the caller starts nothing else meanwhile). An exit code not in ``ok``
    ends the benchmark: a figure of a failed command would measure nothing."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode not in ok:
        raise SystemExit(f"{argv[:3]} exited {result.returncode}: {result.stderr.decode()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
