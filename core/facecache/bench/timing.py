"""Small timing helpers for the benchmarks."""

from __future__ import annotations

import statistics
import time
from typing import Callable


def median_ms(action: Callable[[], object], repeats: int) -> float:
    """Median wall time of `action` in milliseconds over `repeats` runs (after one warm-up)."""
    action()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def median_cpu_ms(action: Callable[[], object], repeats: int) -> float:
    """Median CPU time of the process over `action` in milliseconds over `repeats` runs (after one
    warm-up): the work itself, which other programs on the machine inflate far less than the wall
    time."""
    action()
    samples = []
    for _ in range(repeats):
        start = time.process_time()
        action()
        samples.append((time.process_time() - start) * 1000)
    return statistics.median(samples)
