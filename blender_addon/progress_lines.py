"""Progress as text lines, for background runs (`blender -b`, render farms).

A job run synchronously prints, on stdout:

    openjd_progress: 37.5
    openjd_status: faceswap update: 9/24 frames (clip.mp4)

whenever its whole percentage changes, and again at least every HEARTBEAT_SECONDS even when nothing
moved (loading models, waiting for another node's claim on a segment), so a farm that cancels silent
tasks (Flamenco: 10 minutes) never does. The two prefixes are Open Job Description's own progress and
status messages: Deadline Cloud and `openjd run` read them; Flamenco and a terminal show them as they are.
"""

from __future__ import annotations

import sys
import time

HEARTBEAT_SECONDS = 30.0


class ProgressLines:
    def __init__(self, kind: str, out=None, clock=time.monotonic):
        self.kind = kind
        self.out = out or sys.stdout
        self.clock = clock
        self.shown: tuple | None = None
        self.last = clock()

    def __call__(self, job) -> None:
        """Called after each engine message and on each heartbeat with the running engine_client.Request."""
        percent = int(100 * job.done / job.total) if job.total else 0
        now = self.clock()
        if (percent, job.label) == self.shown and now - self.last < HEARTBEAT_SECONDS:
            return
        self.shown, self.last = (percent, job.label), now
        counted = f"{job.done}/{job.total} frames" if job.total else "starting"
        label = f" ({job.label})" if job.label else ""
        self.write(f"openjd_progress: {100 * job.done / job.total if job.total else 0.0:.1f}",
                   f"openjd_status: faceswap {self.kind}: {counted}{label}")

    def finished(self, text: str) -> None:
        self.write("openjd_progress: 100.0", f"openjd_status: faceswap {text}")

    def write(self, *lines: str) -> None:
        self.out.write("".join(line + "\n" for line in lines))
        self.out.flush()
