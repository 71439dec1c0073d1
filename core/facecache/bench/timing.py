"""Small timing helpers for the benchmarks."""

from __future__ import annotations

import statistics
import time
from typing import Callable


def median_ms(action: Callable[[], object], repeats: int, clock: Callable[[], float] = time.perf_counter) -> float:
    """Median time of `action` in milliseconds over `repeats` runs (after one warm-up), by `clock`:
    the wall time, or with `time.process_time` the process's CPU time (the work itself, which other
    programs on the machine inflate far less)."""
    action()
    samples = []
    for _ in range(repeats):
        start = clock()
        action()
        samples.append((clock() - start) * 1000)
    return statistics.median(samples)
