"""What the benchmark scripts share: the timing helper, the environment their git
and git-forge processes run in, and where git-forge is."""

from __future__ import annotations

import functools
import os
import statistics
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
