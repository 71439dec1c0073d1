"""Condensing a cProfile run into the few lines that say where the time goes.

cProfile sees one thread. The job composites, encodes and writes on a worker
thread, so `profile` also profiles every thread started while it runs (each
with its own profiler, started by a `threading.setprofile` hook that is removed
afterwards) and returns their statistics merged, apart from the caller's.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import threading
from dataclasses import dataclass
from typing import Callable


@dataclass
class Profiles:
    main: pstats.Stats
    threads: pstats.Stats | None  # all other threads started during the run, merged


def profile(action: Callable[[], object]) -> Profiles:
    thread_profilers: list[cProfile.Profile] = []
    lock = threading.Lock()

    def start_thread_profiler(*_args) -> None:
        # Runs once, as the first profile event of a new thread: hand over to cProfile there.
        profiler = cProfile.Profile()
        try:
            profiler.enable()
        except ValueError:
            return  # Python 3.12+: one profiler for all threads (the caller's already sees this one)
        with lock:
            thread_profilers.append(profiler)

    main = cProfile.Profile()
    threading.setprofile(start_thread_profiler)
    main.enable()
    try:
        action()
    finally:
        main.disable()
        threading.setprofile(None)
    main_stats = pstats.Stats(main)
    with lock:
        finished = [p for p in thread_profilers if p.getstats()]
    threads = None
    for profiler in finished:  # their threads have ended; Stats() only reads what they collected
        threads = pstats.Stats(profiler) if threads is None else threads.add(profiler)
    return Profiles(main_stats, threads)


def top_functions(stats: pstats.Stats, per: int, limit: int = 12, key: str = "self") -> list[dict]:
    """The `limit` functions with the most self ("self") or cumulative ("cumulative") time,
    in milliseconds per unit of work (`per`, e.g. frames)."""
    index = 2 if key == "self" else 3
    rows = sorted(stats.stats.items(), key=lambda item: item[1][index], reverse=True)
    result = []
    for (filename, line, name), (_, calls, self_time, cumulative, _) in rows:
        if key == "cumulative" and _is_harness(filename, name):
            continue
        result.append({"function": _label(filename, line, name),
                       "ms_per_frame": round((self_time if key == "self" else cumulative) * 1000 / per, 3),
                       "calls_per_frame": round(calls / per, 2)})
        if len(result) == limit:
            break
    return result


def _label(filename: str, line: int, name: str) -> str:
    if filename == "~":
        return name  # a builtin or C function, e.g. "<method 'read' of 'cv2.VideoCapture' objects>"
    parts = filename.replace(os.sep, "/").split("/")
    short = "/".join(parts[parts.index("facecache"):]) if "facecache" in parts else "/".join(parts[-2:])
    return f"{short}:{line}({name})"


def _is_harness(filename: str, name: str) -> bool:
    """The benchmark's own frames and thread plumbing, which wrap everything."""
    path = filename.replace(os.sep, "/")
    return ("facecache/bench/" in path or path.endswith(("threading.py", "concurrent/futures/thread.py"))
            or name in ("<lambda>", "disable") or (filename == "~" and "exec" in name))
