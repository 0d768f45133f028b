"""The one timing helper the benchmark scripts share."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def timed(fn: Callable[[], object], repeat: int = 5) -> float:
    """The median wall time of ``repeat`` calls of ``fn``, in seconds."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)
