"""`python -m facecache.worker`: the engine behind a JSON-lines pipe (the Blender add-on's process boundary).

Two modes, one protocol:
- `python -m facecache.worker --serve` (the add-on's engine session, `facecache.serve`): many requests per
  process, each with an "id" that every answer carries; models, sessions, source faces and preview
  sessions stay warm between requests; `{"id": N, "kind": "cancel", "target": ID}` cancels a request.
- `python -m facecache.worker` (one job: `blender -b` scripts, farms, tests): the caller writes ONE job
  on a line of stdin, the worker answers and exits.

Answers, one JSON object a line on stdout:

    {"type": "progress", "done": 3, "total": 24, "label": "clip.mp4"}
    {"type": "result", "summary": {...}}                  the job's summary (its last line on success)
    {"type": "error", "message": "...", "kind": "ModelMissing", "exit_code": 2}   (its last line on failure)

The jobs, their fields and their summaries are the engine's (`facecache.engine`); the one-job mode exits
with the error's `exit_code`. Everything else the worker would print (warnings, logs, ONNX Runtime's own
output) goes to stderr, so stdout stays parseable (`stdout_guard`).
"""

from __future__ import annotations

import os

# The caller, as it was when this process started: the imports below take seconds on a loaded machine, and POSIX
# re-parents an orphan at once, so a caller that died meanwhile would be missed. Windows keeps the id: the
# session reads it when it starts (Python 3.13's os.getppid there needs PssCaptureSnapshot, which Wine lacks).
PARENT_AT_START = os.getppid() if os.name == "posix" else None

import contextlib  # noqa: E402 - after the parent is known
import json  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402

from facecache import protocol  # noqa: E402
from facecache.engine import Emit, error_message, run_job  # noqa: E402
from facecache.errors import EXIT_CLOSED_PIPE, EXIT_USAGE  # noqa: E402
from facecache.gpu_runtime.activate import use_runtime  # noqa: E402
from facecache.remote_support.layout import use_support  # noqa: E402
from facecache.stdout_guard import silence_stdout, stdout_reserved  # noqa: E402

ORPHAN_EXIT_SECONDS = 10.0  # the session's caller is gone: the process ends at the latest this long after


class _Terminate:
    """The one-job mode's SIGTERM: the first asks the job to stop cleanly (a swap keeps finished frames),
    a second stops the process at once."""

    def __init__(self, cancel: threading.Event) -> None:
        self.cancel = cancel

    def __call__(self, _signum=None, _frame=None) -> None:
        if self.cancel.is_set():
            raise SystemExit(143)
        self.cancel.set()


def main(argv: list[str] | None = None, stdin=None, stdout=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    use_runtime()  # the NVIDIA GPU runtime's onnxruntime first on the path, when installed
    use_support()  # the extension's remote cache support (botocore) on the path, when a remote cache is set
    stdin = stdin or sys.stdin
    try:
        # stray prints, Python's or ONNX Runtime's at the C level, must not corrupt the protocol
        with stdout_reserved() if stdout is None else contextlib.nullcontext(stdout) as protocol:
            return _answer(argv, stdin, protocol)
    except BrokenPipeError:  # the caller went away: nobody is left to tell
        silence_stdout()
        return EXIT_CLOSED_PIPE


def _answer(argv: list[str], stdin, protocol) -> int:
    lock = threading.Lock()

    def emit(message: dict) -> bool:
        """Write one answer; False when the caller is gone (its end of the pipe closed)."""
        with lock:
            try:
                protocol.write(json.dumps(message, default=str) + "\n")
                protocol.flush()
                return True
            except (BrokenPipeError, ValueError):
                return False

    if argv == ["--serve"]:
        from facecache.serve import Server

        return Server(stdin, emit, exit_after=ORPHAN_EXIT_SECONDS, parent=PARENT_AT_START).serve()
    if argv:
        emit(protocol.error(f"unknown arguments {' '.join(argv)}: use --serve or none", "UsageError", EXIT_USAGE))
        return EXIT_USAGE
    return _one_job(stdin, emit)


def _one_job(stdin, emit: Emit) -> int:
    cancel = threading.Event()
    signal_set = threading.current_thread() is threading.main_thread()
    if signal_set:
        signal.signal(signal.SIGTERM, _Terminate(cancel))
    try:
        emit(protocol.result(run_job(_read_job(stdin), emit, cancel)))
        return 0
    except Exception as exc:  # noqa: BLE001 - the caller shows the message
        message = error_message(exc)
        emit(message)
        return message[protocol.EXIT_CODE]
    finally:
        if signal_set:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _read_job(stdin) -> dict:
    """The one job of stdin's first line, read as the session reads a request (`serve.parse_request`)."""
    from facecache.serve import MAX_REQUEST_BYTES, RequestRefused, parse_request

    line = getattr(stdin, "buffer", stdin).readline(MAX_REQUEST_BYTES + 1)
    if len(line) > MAX_REQUEST_BYTES:
        raise RequestRefused(f"the job line is longer than {MAX_REQUEST_BYTES} bytes")
    return parse_request(line if line.strip() else "{}", needs_id=False)


if __name__ == "__main__":
    sys.exit(main())
