"""`python -m facecache.worker --serve`: one long-lived engine session, many requests (the Blender
add-on keeps one per Blender session; an actor, as Dream Textures' generator process, over JSON lines).

Requests, one JSON object a line on stdin, each with an "id" the caller chose:

    {"id": 7, "kind": "swap", "settings": {...}, "items": [...]}     a job (see facecache.worker)
    {"id": 8, "kind": "cancel", "target": 7}                           stop request 7 (queued or running)

Every answer carries its request's id: progress lines, then one "result" or "error" (and a request
that never started, cancelled, answers an error of kind "Cancelled"). A cancel is answered by the
request it cancels. Jobs run one at a time, in order. Quick requests (preview, coverage, cache_stats)
go ahead of queued jobs and also run between the frames of a running swap (between the segments of an
analysis), so the frame under the playhead never waits for a long job. The process keeps the pipeline
parts and preview sessions warm (`worker.Engine`) and ends when stdin closes (Blender quit or died),
cancelling what runs.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field

from facecache.errors import FaceCacheError
from facecache.worker import Cancelled, Emit, Engine, error_message, run_job

QUICK = frozenset({"preview", "coverage", "cache_stats"})


@dataclass
class Request:
    id: object
    job: dict
    cancel: threading.Event = field(default_factory=threading.Event)

    @property
    def quick(self) -> bool:
        return self.job.get("kind") in QUICK


class Server:
    def __init__(self, stdin, emit: Emit):
        self.stdin = stdin
        self._emit = emit
        self.engine = Engine()
        self._jobs: deque[Request] = deque()
        self._quick: deque[Request] = deque()
        self._known: dict = {}  # id -> Request, queued or running
        self._ready = threading.Condition()
        self._closed = False

    def serve(self) -> int:
        threading.Thread(target=self._read, name="facecache-requests", daemon=True).start()
        while (request := self._next()) is not None:
            self._run(request)
        self.engine.previews.close_all()
        return 0

    # -- requests in ----------------------------------------------------------------------------

    def _read(self) -> None:
        for line in self.stdin:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
                if not isinstance(message, dict) or "id" not in message:
                    raise ValueError("a request is a JSON object with an id")
            except ValueError as exc:
                self._emit({"id": None, **error_message(FaceCacheError(f"unreadable request ({exc}): {line[:200]}"))})
                continue
            with self._ready:
                if message.get("kind") == "cancel":
                    target = self._known.get(message.get("target"))
                    if target is not None:
                        target.cancel.set()
                    continue
                request = Request(message["id"], message)
                self._known[request.id] = request
                (self._quick if request.quick else self._jobs).append(request)
                self._ready.notify()
        with self._ready:  # stdin closed: the caller is gone; stop what runs and what waits
            self._closed = True
            for request in self._known.values():
                request.cancel.set()
            self._ready.notify()

    def _next(self) -> Request | None:
        with self._ready:
            while not (self._quick or self._jobs or self._closed):
                self._ready.wait()
            if self._quick:
                return self._quick.popleft()
            if self._jobs:
                return self._jobs.popleft()
            return None

    def _quick_pending(self) -> Request | None:
        with self._ready:
            return self._quick.popleft() if self._quick else None

    # -- requests run ---------------------------------------------------------------------------

    def _run(self, request: Request) -> None:
        if not request.quick:
            self.engine.previews.close_all()  # what previews collected goes to the cache before a job
        try:
            if request.cancel.is_set():
                raise Cancelled("cancelled before it started")
            summary = run_job(request.job, self._emitter(request), request.cancel, self.engine)
            self._emit({"id": request.id, "type": "result", "summary": summary})
        except Exception as exc:  # noqa: BLE001 - every failure is an answer; the session goes on
            self._emit({"id": request.id, **error_message(exc)})
        finally:
            with self._ready:
                self._known.pop(request.id, None)
            if not request.quick:
                # A job may have changed outputs, models or sources behind the preview sessions.
                self.engine.previews.close_all()

    def _emitter(self, request: Request) -> Emit:
        def emit(message: dict) -> None:
            self._emit({"id": request.id, **message})
            if not request.quick and message.get("type") == "progress":
                self._run_quick_requests()  # between frames (segments) of the running job
        return emit

    def _run_quick_requests(self) -> None:
        while (quick := self._quick_pending()) is not None:
            self._run(quick)
