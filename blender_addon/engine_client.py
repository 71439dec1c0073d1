"""The process boundary: the engine runs as `python -m facecache.worker` (Blender's own Python) with the
extension's vendored engine and its wheels on the path. One job per process, JSON lines both ways.

`EngineJob.start()` spawns it; a reader thread puts each line in a queue; `poll()` drains the queue on
Blender's main thread (from a `bpy.app.timers` callback) and `wait()` does the same synchronously
(background mode and the bpy module, where timers never run). A crash of the process becomes an error
message; Blender itself is never at risk.
"""

from __future__ import annotations

import importlib
import json
import os
import queue
import subprocess
import sys
import threading

ADDON_DIR = os.path.dirname(os.path.abspath(__file__))


def engine_module(name: str):
    """A module of the engine imported into Blender's process: the copy vendored beside the add-on
    (the built extension) or the importable package (a development checkout). Only modules that need
    nothing beyond the standard library and the extension's wheels belong here (choices, watch)."""
    if os.path.isdir(os.path.join(ADDON_DIR, "facecache")):
        return importlib.import_module(f"{__package__}.facecache.{name}")
    return importlib.import_module(f"facecache.{name}")


def python_executable() -> str:
    """Blender's Python (sys.executable in Blender 2.91+); the bpy module's host interpreter otherwise."""
    return sys.executable


def worker_env() -> dict:
    env = dict(os.environ)
    paths = [ADDON_DIR] if os.path.isdir(os.path.join(ADDON_DIR, "facecache")) else []
    paths += [p for p in sys.path if p and os.path.isdir(p)]  # Blender's site-packages and the extensions' wheels
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["PYTHONNOUSERSITE"] = "1"
    env.setdefault("PYTHONIOENCODING", "utf-8")
    return env


class EngineJob:
    def __init__(self, job: dict):
        self.job = job
        self.messages: queue.Queue = queue.Queue()
        self.process: subprocess.Popen | None = None
        self.result: dict | None = None
        self.error: str | None = None
        self.error_kind = ""
        self.done = 0
        self.total = 0
        self.label = ""
        self.cancelled = False
        self._stderr: list[str] = []

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> "EngineJob":
        flags = getattr(subprocess, "CREATE_NO_WINDOW", 0)
        self.process = subprocess.Popen([python_executable(), "-m", "facecache.worker"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=worker_env(),
                                        text=True, encoding="utf-8", creationflags=flags)
        self.process.stdin.write(json.dumps(self.job) + "\n")
        self.process.stdin.close()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        return self

    def _read_stdout(self) -> None:
        for line in self.process.stdout:
            try:
                self.messages.put(json.loads(line))
            except ValueError:
                self._stderr.append(line)
        self.messages.put({"type": "eof", "returncode": self.process.wait()})

    def _read_stderr(self) -> None:
        for line in self.process.stderr:
            self._stderr.append(line)
            del self._stderr[:-40]

    def cancel(self) -> None:
        self.cancelled = True
        if self.process and self.process.poll() is None:
            self.process.terminate()

    @property
    def finished(self) -> bool:
        return self.result is not None or self.error is not None

    # -- messages -------------------------------------------------------------------------------

    def poll(self) -> bool:
        """Apply every queued message; True once the job has finished (result or error)."""
        while not self.finished:
            try:
                message = self.messages.get_nowait()
            except queue.Empty:
                return False
            self._apply(message)
        return True

    def wait(self, on_progress=None, heartbeat: float | None = None) -> "EngineJob":
        """Apply messages until the job finishes; `on_progress(job)` after each one, and every
        `heartbeat` seconds while none comes."""
        while not self.finished:
            try:
                self._apply(self.messages.get(timeout=heartbeat))
            except queue.Empty:
                pass
            if on_progress:
                on_progress(self)
        return self

    def _apply(self, message: dict) -> None:
        kind = message.get("type")
        if kind == "progress":
            self.done, self.total, self.label = message.get("done", 0), message.get("total", 0), message.get("label", "")
        elif kind == "result":
            self.result = message.get("summary", {})
        elif kind == "error":
            self.error = message.get("message", "the engine failed")
            self.error_kind = message.get("kind", "")
        elif kind == "eof":
            if self.cancelled:
                self.error = "cancelled"
            else:
                tail = "".join(self._stderr[-5:]).strip()
                self.error = (f"the face swap engine stopped unexpectedly (exit code {message.get('returncode')})"
                              + (f": {tail}" if tail else ""))

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0


def run_sync(job: dict, on_progress=None) -> EngineJob:
    return EngineJob(job).start().wait(on_progress)
