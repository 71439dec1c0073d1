"""Small timing helpers for the benchmarks."""

from __future__ import annotations

import os
import statistics
import time
from typing import Callable

import psutil


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


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages, rounded, as the benchmarks report the conditions they ran in;
    None where the system keeps none (Windows without its performance counters, which psutil reads)."""
    try:
        loads = os.getloadavg() if hasattr(os, "getloadavg") else psutil.getloadavg()
    except (OSError, RuntimeError):
        return None
    return [round(load, 2) for load in loads]
