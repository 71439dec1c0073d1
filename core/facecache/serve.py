"""`python -m facecache.worker --serve`: one long-lived engine session, many requests (the Blender
add-on keeps one per Blender session; an actor, as Dream Textures' generator process, over JSON lines).

Requests, one JSON object a line on stdin, each with an "id" the caller chose (a whole number or a
string, unique among the requests queued or running):

    {"id": 7, "kind": "swap", "settings": {...}, "items": [...]}     a job (see facecache.engine)
    {"id": 8, "kind": "cancel", "target": 7}                           stop request 7 (queued or running)

Every answer carries its request's id: progress lines, then one "result" or "error" (and a request
that never started, cancelled, answers an error of kind "Cancelled"). A cancel is answered by the
request it cancels; a cancel of no queued or running request answers an error with its own id. Jobs
run one at a time, in order. Quick requests (the kinds `engine.JOB_KINDS` marks quick: preview,
coverage, cache_stats) go ahead of queued jobs and also run between the frames of a running swap
(between the segments of an analysis), so the frame under the playhead never waits for a long job.

Any line is answered and the session goes on: a line that is not a request (not UTF-8, not JSON,
nested too deeply, longer than MAX_REQUEST_BYTES, an id or a cancel target that is not a whole
number or a string) answers one error of kind "RequestRefused" (with the line's id when it has a
usable one, else null), and so does a request whose id is already queued or running (id null: that
id's answers belong to the first request; the refused id is in "refused_id").

The process keeps the pipeline parts and preview sessions warm (`engine.Engine`) and ends when its
caller is gone: stdin closed (Blender quit or died, or the add-on ended the session), its answers no
longer read, or its parent process gone (an orphan whose stdin another process still holds). Then it
cancels what runs and what waits, and exits; with `exit_after` it exits at the latest that many seconds
later, whatever still runs (everything it writes is atomic, so nothing is left half-written). So a
request whose input ends right after it (`echo REQUEST | python -m facecache.worker --serve`) is
answered "cancelled before it started", the message naming the one-job mode, which is the way to run
one request from a pipe: `echo JOB | python -m facecache.worker`.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from facecache import protocol
from facecache.errors import Cancelled, FaceCacheError
from facecache.engine import Engine, error_message, is_quick, run_job

MAX_REQUEST_BYTES = 16 * 1024 * 1024  # a timeline's items fit many times over
MAX_ID_CHARS = 200
PARENT_POLL_SECONDS = 1.0


class RequestRefused(FaceCacheError):
    """A line the session cannot take as a request; the message says what a request looks like."""


@dataclass
class Request:
    id: int | str
    job: dict
    cancel: threading.Event = field(default_factory=threading.Event)

    @property
    def quick(self) -> bool:
        return is_quick(self.job.get(protocol.KIND))


def usable_id(value) -> bool:
    """Ids are whole numbers or short strings: hashable, and the same value after a JSON round trip."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, str) and len(value) <= MAX_ID_CHARS)


def parse_request(line: bytes | str, needs_id: bool = True) -> dict:
    """One request line as a JSON object with a usable id (and, for a cancel, a usable target);
    RequestRefused otherwise. The one-job mode's job needs no id (`needs_id=False`)."""
    try:
        text = line.decode("utf-8") if isinstance(line, bytes) else line
        message = json.loads(text)
    except UnicodeDecodeError:
        raise RequestRefused("a request line must be UTF-8 text") from None
    except RecursionError:
        raise RequestRefused("the request is nested too deeply to read") from None
    except ValueError as exc:
        raise RequestRefused(f"the request is not JSON ({exc})") from None
    if not isinstance(message, dict) or (needs_id and protocol.ID not in message):
        raise RequestRefused('a request is a JSON object with an "id", e.g. {"id": 1, "kind": "cache_stats"}')
    if protocol.ID in message and not usable_id(message[protocol.ID]):
        raise RequestRefused(f"a request's id must be a whole number or a string of at most {MAX_ID_CHARS} "
                             f"characters, not {_shown(message[protocol.ID])}")
    if protocol.KIND in message and not isinstance(message[protocol.KIND], str):
        raise RequestRefused(f"a request's kind must be a string, not {_shown(message[protocol.KIND])}")
    if message.get(protocol.KIND) == protocol.CANCEL and not usable_id(message.get(protocol.TARGET)):
        raise RequestRefused('a cancel names the id of the request to stop in "target" (a whole number or a '
                             f"string), not {_shown(message.get(protocol.TARGET))}")
    return message


def _shown(value) -> str:
    text = json.dumps(value) if not isinstance(value, (dict, list)) else type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


class Server:
    def __init__(self, stdin, emit: Callable[[dict], bool | None], exit_after: float | None = None,
                 parent: int | None = None):
        """`stdin` gives request lines (a binary stream is read as is, a text one through its buffer
        where it has one); `emit` writes one answer and returns False once nobody reads them.
        `exit_after`: once the caller is gone, end the process at the latest this many seconds later.
        `parent`: the caller's process id as it was when the process started (default: as it is now)."""
        self._parent = parent
        self.stdin = _own_reader(stdin)
        self._emit_line = emit
        self.engine = Engine()
        self._jobs: deque[Request] = deque()
        self._quick: deque[Request] = deque()
        self._known: dict = {}  # id -> Request, queued or running
        self._ready = threading.Condition()
        self._closed = False
        self._gone = threading.Event()  # set once the caller is gone
        self._gone_because = ""  # how the caller showed it is gone, e.g. "its input ends"
        self._exit_after = exit_after

    def serve(self) -> int:
        threading.Thread(target=self._read, name="facecache-requests", daemon=True).start()
        threading.Thread(target=self._watch_parent, name="facecache-parent", daemon=True).start()
        while (request := self._next()) is not None:
            self._run(request)
        self.engine.previews.close_all()
        return 0

    def _emit(self, message: dict) -> None:
        if self._emit_line(message) is False:  # the caller no longer reads: it is gone
            self.close("its answers are no longer read")

    # -- the caller's end ---------------------------------------------------------------------------

    def close(self, because: str = "its caller ended it") -> None:
        """The caller is gone (`because` says how that showed): cancel what runs and what waits; the session
        ends (and, with `exit_after`, the process does at the latest that long after)."""
        with self._ready:
            if self._closed:
                return
            self._closed = True
            self._gone_because = because
            self._gone.set()
            for request in self._known.values():
                request.cancel.set()
            self._ready.notify()
        if self._exit_after is not None:
            timer = threading.Timer(self._exit_after, _exit_now)
            timer.daemon = True
            timer.start()

    def _watch_parent(self) -> None:
        """An orphan's stdin may stay open (another process inherited the pipe): watch the parent too."""
        alive = parent_watch(self._parent)
        while not self._gone.wait(PARENT_POLL_SECONDS):
            if not alive():
                self.close("its parent process is gone")

    # -- requests in ----------------------------------------------------------------------------

    def _read(self) -> None:
        try:
            while line := self.stdin.readline(MAX_REQUEST_BYTES + 1):
                if len(line) > MAX_REQUEST_BYTES:
                    self._skip_line(line)
                    self._refuse(RequestRefused(f"a request line is longer than {MAX_REQUEST_BYTES} bytes"))
                elif line.strip():
                    self._take(line)
        except (OSError, ValueError):
            pass  # stdin itself failed (closed under us): the caller is gone
        finally:
            self.close("its input ends")

    def _skip_line(self, start: bytes | str) -> None:
        newline = b"\n" if isinstance(start, bytes) else "\n"
        line = start
        while line and not line.endswith(newline):
            line = self.stdin.readline(MAX_REQUEST_BYTES)

    def _take(self, line: bytes | str) -> None:
        """Queue one request, or answer why not; never raises, so no line ends the session."""
        message = None
        try:
            message = parse_request(line)
            with self._ready:
                if message.get(protocol.KIND) == protocol.CANCEL:
                    self._cancel(message)
                    return
                if message[protocol.ID] in self._known:
                    refused = RequestRefused(f"request id {message[protocol.ID]!r} is already used by a queued or "
                                             "running request: give every request its own id")
                    self._emit({protocol.ID: None, protocol.REFUSED_ID: message[protocol.ID], **error_message(refused)})
                    return
                request = Request(message[protocol.ID], message)
                self._known[request.id] = request
                (self._quick if request.quick else self._jobs).append(request)
                self._ready.notify()
        except Exception as exc:  # noqa: BLE001 - every line is answered; the session goes on
            self._refuse(exc, message)

    def _cancel(self, message: dict) -> None:
        target = self._known.get(message[protocol.TARGET])
        if target is None:
            self._emit({protocol.ID: message[protocol.ID], **error_message(RequestRefused(
                f"no request {message[protocol.TARGET]!r} is queued or running (it may have finished already)"))})
        else:
            target.cancel.set()

    def _refuse(self, exc: Exception, message: dict | None = None) -> None:
        request_id = message.get(protocol.ID) if isinstance(message, dict) else None
        self._emit({protocol.ID: request_id if usable_id(request_id) else None, **error_message(exc)})

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
                raise Cancelled(self._not_started())
            summary = run_job(request.job, self._emitter(request), request.cancel, self.engine)
            self._emit({protocol.ID: request.id, **protocol.result(summary)})
        except Exception as exc:  # noqa: BLE001 - every failure is an answer; the session goes on
            self._emit({protocol.ID: request.id, **error_message(exc)})
        finally:
            with self._ready:
                self._known.pop(request.id, None)
            if not request.quick:
                # A job may have changed outputs, models or sources behind the preview sessions.
                self.engine.previews.close_all()

    def _not_started(self) -> str:
        if not self._closed:
            return "cancelled before it started"
        return (f"cancelled before it started: the engine session ends when {self._gone_because}; to run one job "
                "from a pipe, use the one-job mode: `echo JOB | python -m facecache.worker` (without --serve)")

    def _emitter(self, request: Request):
        def emit(message: dict) -> None:
            self._emit({protocol.ID: request.id, **message})
            if not request.quick and message.get(protocol.TYPE) == protocol.PROGRESS:
                self._run_quick_requests()  # between frames (segments) of the running job
        return emit

    def _run_quick_requests(self) -> None:
        while (quick := self._quick_pending()) is not None:
            self._run(quick)


def _own_reader(stdin):
    """Request lines as bytes, from a reader of our own over the same file where there is one: at exit
    the interpreter takes sys.stdin's lock, which the reading thread holds while it waits for a line
    (Python aborts with "could not acquire lock ... at interpreter shutdown")."""
    try:
        return os.fdopen(os.dup(stdin.fileno()), "rb")
    except (AttributeError, OSError, ValueError):  # no file under it (a test's stream)
        return getattr(stdin, "buffer", stdin)


def parent_watch(parent: int | None = None) -> Callable[[], bool]:
    """A check that this process's parent (its caller: `parent` as it was when the process started, else as it
    is now) still lives. POSIX re-parents an orphan (to init or a subreaper), so its parent id changes; Windows
    keeps the id, so the process is looked up (and its start time compared, against a reused id)."""
    if sys.platform != "win32":
        expected = os.getppid() if parent is None else parent
        return lambda: os.getppid() == expected
    import psutil

    try:
        parent = psutil.Process().ppid() if parent is None else parent  # not os.getppid: see worker.PARENT_AT_START
        started = psutil.Process(parent).create_time()
    except psutil.NoSuchProcess:
        return lambda: False  # gone before the session looked
    except psutil.Error:
        return lambda: True  # unknown from the start: stdin and the answers still tell

    def alive() -> bool:
        try:
            return psutil.Process(parent).create_time() == started
        except psutil.Error:
            return False
    return alive


def _exit_now() -> None:
    """The caller is long gone and a job did not stop: end the process (every write is atomic)."""
    os._exit(0)
