"""Progress of long steps on stderr, on a terminal and off it (a log file, a pipe, CI, a render farm).

On a terminal a bar is redrawn in place. Anywhere else a carriage return would pile up into one
endless line, so a plain line is printed every few seconds instead, and one at the end of a step
that printed any; while a step is quiet (waiting for another process's claim on a segment) its last
line comes again every HEARTBEAT_S, so a render farm never takes the task for a hung one (Flamenco
cancels a task silent for 10 minutes). Steps with no counts to report (a download by pip, building the extension) use
``still_working``, which prints how long the step has run every few seconds.

Hand-written rather than tqdm: tqdm rewrites one line with carriage returns off a terminal too,
and the Blender extension would have to vendor it.

    bar = ProgressLine("clip.mp4")
    bar(12, 48, "12 written, 0 up to date")      # per frame; prints at most every INTERVAL_S off a terminal
    ProgressLine("downloading", counts=bytes_of)  # "downloading: 12.3 MB of 1.9 GB (35 s)"
    with still_working("building the extension"):
        build()
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, TextIO

INTERVAL_S = 5.0
HEARTBEAT_S = 30.0
_BAR_WIDTH = 30


class ProgressLine:
    """Counts of a long step (``done`` of ``total`` frames) on ``stream`` (default: stderr)."""

    def __init__(self, label: str, stream: TextIO | None = None, interval: float = INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic, terminal: bool | None = None,
                 heartbeat: float = HEARTBEAT_S, counts: Callable[[int, int], str] | None = None):
        self.label = label
        self.counts = counts or _frames
        self.stream = stream if stream is not None else sys.stderr
        self.terminal = _is_terminal(self.stream) if terminal is None else terminal
        self.interval = interval
        self.heartbeat = heartbeat
        self.clock = clock
        self._started = clock()
        self._last_line = self._started
        self._printed = False
        self._counts = ""
        self._lock = threading.Lock()
        self._finished = threading.Event()
        self._beating = False

    def __call__(self, done: int, total: int, detail: str = "") -> None:
        if total <= 0:
            return
        finished = done >= total
        detail = f" {detail}" if detail else ""
        if self.terminal:
            filled = int(_BAR_WIDTH * min(done, total) / total)
            shown = f"{done}/{total}" if self.counts is _frames else self.counts(done, total)
            self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (_BAR_WIDTH - filled)}] {shown}"
                              f"{detail}\033[K" + ("\n" if finished else ""))
            self.stream.flush()
            return
        with self._lock:
            self._counts = f"{self.counts(done, total)}{detail}"
            now = self.clock()
            if (finished and self._printed) or (not finished and now - self._last_line >= self.interval):
                self._line(now)
            start_beating = not (finished or self._beating)
            self._beating = self._beating or start_beating
        if finished:
            self._finished.set()
        elif start_beating:
            threading.Thread(target=self._beat, name="facecache-progress", daemon=True).start()

    def close(self) -> None:
        """The step ended before its count was reached (an error, an interruption): no more heartbeats."""
        self._finished.set()

    def _line(self, now: float) -> None:
        self.stream.write(f"{self.label}: {self._counts} ({now - self._started:.0f} s)\n")
        self.stream.flush()
        self._last_line, self._printed = now, True

    def _beat(self) -> None:
        """Repeat the last counts while no call came for HEARTBEAT_S (until the step finishes)."""
        while not self._finished.wait(self.heartbeat):
            with self._lock:
                now = self.clock()
                if now - self._last_line >= self.heartbeat:
                    self._line(now)


@contextmanager
def still_working(label: str, stream: TextIO | None = None, interval: float = INTERVAL_S) -> Iterator[None]:
    """Print ``label: still working (N s)`` every ``interval`` seconds while the block runs, and how
    long it took at the end if it printed anything (a step without counts: a download, a build)."""
    stream = stream if stream is not None else sys.stderr
    started = time.monotonic()
    done = threading.Event()
    printed = []

    def beat() -> None:
        while not done.wait(interval):
            stream.write(f"{label}: still working ({time.monotonic() - started:.0f} s)\n")
            stream.flush()
            printed.append(True)

    thread = threading.Thread(target=beat, name="facecache-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        if printed:
            stream.write(f"{label}: done in {time.monotonic() - started:.0f} s\n")
            stream.flush()


def _frames(done: int, total: int) -> str:
    return f"{done}/{total} frames"


def bytes_of(done: int, total: int) -> str:
    """`counts` of a download for ProgressLine: "12.3 MB of 1.9 GB"."""
    return f"{human_bytes(done)} of {human_bytes(total)}"


def human_bytes(n: float) -> str:
    """A byte count as people read it: 512 B, 3.4 MB, 1.9 GB (powers of 1000, as the index's sizes)."""
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or not a file
        return False
