"""The process boundary: one engine session per Blender session. The engine runs as
`python -m facecache.worker --serve` (Blender's own Python, with the extension's vendored engine and its
wheels on the path) and answers many requests, JSON lines both ways, each request and answer carrying
an id (an actor, as in Dream Textures' generator process). It keeps models, source faces and preview
sessions warm, so a second click does not pay for imports and model loading again.

`EngineSession.request(job)` (the session's one instance is `runtime.ENGINE`) starts the process when none
runs and returns a `Request`; a reader thread sorts the answers into each request's queue; `poll()` applies
them on Blender's main thread (from a `bpy.app.timers` callback) and `wait()` does the same synchronously
(background mode and the bpy module, where timers never run). `cancel()` sends a cancel message, which works on every platform. If the
process dies, every request in flight ends with one error that says so, and the next request starts a
fresh process; Blender itself is never at risk.
"""

from __future__ import annotations

import collections
import importlib
import itertools
import json
import os
import queue
import signal
import subprocess
import sys
import threading

ADDON_DIR = os.path.dirname(os.path.abspath(__file__))


def engine_module(name: str):
    """A module of the engine imported into Blender's process: the copy vendored beside the add-on
    (the built extension) or the importable package (a development checkout). Only modules that need
    nothing beyond the standard library and the extension's wheels belong here (choices, protocol, output_layout,
    watch). This file loaded alone (no package: the Windows session driver) takes the package on the path."""
    if __package__ and os.path.isdir(os.path.join(ADDON_DIR, "facecache")):
        return importlib.import_module(f"{__package__}.facecache.{name}")
    return importlib.import_module(f"facecache.{name}")


protocol = engine_module("protocol")  # the engine's request and answer keys


def python_executable() -> str:
    """Blender's Python (sys.executable in Blender 2.91+); the bpy module's host interpreter otherwise."""
    return sys.executable


def worker_env(extra: dict | None = None) -> dict:
    """The engine's environment: Blender's, its Python path, and `extra` (settings of the preferences that
    the engine reads at its start, e.g. FACECACHE_GPU_RUNTIME)."""
    env = {**os.environ, **(extra or {})}
    paths = [ADDON_DIR] if os.path.isdir(os.path.join(ADDON_DIR, "facecache")) else []
    paths += [p for p in sys.path if p and os.path.isdir(p)]  # Blender's site-packages and the extensions' wheels
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["PYTHONNOUSERSITE"] = "1"
    env.setdefault("PYTHONIOENCODING", "utf-8")
    return env


class Request:
    """One request to the engine session and what has come back for it so far."""

    def __init__(self, job: dict, request_id=None, session: "EngineSession | None" = None):
        self.job = job
        self.id = request_id
        self.session = session
        self.process: subprocess.Popen | None = None  # the engine process it was sent to
        self.messages: queue.Queue = queue.Queue()  # filled by the session's reader thread
        self.result: dict | None = None
        self.error: str | None = None
        self.error_kind = ""
        self.done = 0
        self.total = 0
        self.label = ""
        self.cancelled = False

    def cancel(self) -> None:
        """Ask the engine to stop this request (a swap keeps the frames it finished)."""
        self.cancelled = True
        if self.session is not None and not self.finished:
            self.session.send(protocol.cancel(self.id), self.process)

    @property
    def finished(self) -> bool:
        return self.result is not None or self.error is not None

    def poll(self) -> bool:
        """Apply every queued message; True once the request has finished (result or error)."""
        while not self.finished:
            try:
                message = self.messages.get_nowait()
            except queue.Empty:
                return False
            self._apply(message)
        return True

    def wait(self, on_progress=None, heartbeat: float | None = None) -> "Request":
        """Apply messages until the request finishes; `on_progress(request)` after each one, and every
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
        kind = message.get(protocol.TYPE)
        if kind == protocol.PROGRESS:
            self.done, self.total = message.get(protocol.DONE, 0), message.get(protocol.TOTAL, 0)
            self.label = message.get(protocol.LABEL, "")
        elif kind == protocol.RESULT:
            self.result = message.get(protocol.SUMMARY, {})
        elif kind == protocol.ERROR:
            cancelled = message.get(protocol.KIND) == protocol.CANCELLED_KIND
            # the engine's own line ("cancelled: ..." says what is kept), or the word when it gave none
            self.error = message.get(protocol.MESSAGE) or ("cancelled" if cancelled else "the engine failed")
            self.error_kind = message.get(protocol.KIND, "")

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0


# The engine yields the processor to Blender: its jobs keep every core busy while the window must keep drawing
# (the GUI suite measures the gaps between redraws while a job runs). Windows: below normal, at creation.
ENGINE_NICENESS = 5


def below_this_process(pid: int) -> None:
    """Lower a just-started process ENGINE_NICENESS steps below this one (POSIX). Its imports have not started
    any thread yet; the threads it starts later take its priority (Linux keeps one per thread)."""
    if not hasattr(os, "setpriority"):
        return
    try:
        os.setpriority(os.PRIO_PROCESS, pid, min(19, os.getpriority(os.PRIO_PROCESS, 0) + ENGINE_NICENESS))
    except OSError:
        pass  # a system that refuses: the engine runs at Blender's priority


def death_cause(returncode: int, stderr_lines) -> str:
    """Why the engine process ended, in a few words: the signal that killed it, else its exit code and the last
    line it wrote (a Python error's message; a library's earlier warnings are noise in the panel)."""
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    last = next((line.strip() for line in reversed(list(stderr_lines)) if line.strip()), "")
    return f"exit code {returncode}" + (f": {last}" if last else "")


class EngineSession:
    """The engine process of this Blender session, started on the first request (and again after it died)."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None
        self.starts = 0  # processes started in this session
        self._requests: dict[int, Request] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._stderr: collections.deque = collections.deque(maxlen=40)
        self.environment: dict = {}  # what the preferences add to the engine's environment

    def configure(self, environment: dict) -> None:
        """Set what the preferences add to the engine's environment; a running engine that was started
        with something else is stopped, so the next request starts one that reads the new values."""
        if environment != self.environment:
            self.environment = dict(environment)
            self.stop()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def request(self, job: dict) -> Request:
        """Send a job to the engine (starting it if needed); its answers arrive on the returned Request."""
        with self._lock:
            if not self.alive:
                self._start()
            request = Request(job, next(self._ids), self)
            request.process = process = self.process
            self._requests[request.id] = request
        self.send({**job, protocol.ID: request.id}, process)
        return request

    def send(self, message: dict, process: subprocess.Popen) -> None:
        if message.get(protocol.KIND) == protocol.CANCEL:
            message = {**message, protocol.ID: f"cancel-{message[protocol.TARGET]}"}
        try:
            process.stdin.write(json.dumps(message) + "\n")
            process.stdin.flush()
        except (OSError, ValueError, AttributeError):
            pass  # the process is gone: its reader ends every request in flight with the reason

    def _start(self) -> None:
        flags = getattr(subprocess, "CREATE_NO_WINDOW", 0) | getattr(subprocess, "BELOW_NORMAL_PRIORITY_CLASS", 0)
        self.process = subprocess.Popen([python_executable(), "-m", "facecache.worker", "--serve"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        env=worker_env(self.environment), text=True, encoding="utf-8",
                                        creationflags=flags)
        below_this_process(self.process.pid)
        self.starts += 1
        self._stderr.clear()
        threading.Thread(target=self._read_stdout, args=(self.process,), daemon=True).start()
        threading.Thread(target=self._read_stderr, args=(self.process,), daemon=True).start()

    def _read_stdout(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                self._stderr.append(line)
                continue
            with self._lock:
                request = self._requests.get(message.get(protocol.ID))
                if request is not None and message.get(protocol.TYPE) in (protocol.RESULT, protocol.ERROR):
                    del self._requests[request.id]
            if request is not None:
                request.messages.put(message)
        returncode = process.wait()
        with self._lock:
            if self.process is process:
                self.process = None
            orphans = [request for request in self._requests.values() if request.process is process]
            for request in orphans:
                del self._requests[request.id]
        for request in orphans:
            if request.cancelled:  # the engine ended while stopping it (the session was ended): a cancel
                request.messages.put(protocol.error("cancelled", protocol.CANCELLED_KIND))
                continue
            message = (f"the face swap engine stopped unexpectedly ({death_cause(returncode, self._stderr)}); "
                       "the next request starts it again")
            request.messages.put(protocol.error(message, "EngineDied"))

    def _read_stderr(self, process: subprocess.Popen) -> None:
        for line in process.stderr:
            self._stderr.append(line)

    def stop(self) -> None:
        """End the engine process (requests in flight end with an error); the next request starts a new one."""
        with self._lock:
            process, self.process = self.process, None
        if process is None:
            return
        try:
            process.stdin.close()  # the engine cancels what runs and exits
            process.wait(5)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            process.kill()
