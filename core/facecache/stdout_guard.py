"""Keep stdout for one machine-readable stream: the `--json` document, the worker's JSON lines.

While the guard is held, everything else that would reach stdout goes to stderr: Python-level prints
(onnxruntime prints its execution-provider errors with `print`) through `sys.stdout`, and C-level
writes (ONNX Runtime's and OpenCV's own logging) through file descriptor 1, which points at stderr.
The stream yielded writes to the real stdout.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterator, TextIO


@contextlib.contextmanager
def stdout_reserved() -> Iterator[TextIO]:
    out = sys.stdout
    try:
        fd = out.fileno()
    except (OSError, ValueError, AttributeError):  # not a real file (a test's capture): Python level only
        fd = None
    real = None
    if fd is not None:
        out.flush()
        real = os.dup(fd)
        reserved: TextIO = os.fdopen(real, "w", encoding=getattr(out, "encoding", None) or "utf-8")
        os.dup2(sys.stderr.fileno(), fd)
    else:
        reserved = out
    sys.stdout = sys.stderr
    try:
        yield reserved
        reserved.flush()
    finally:
        sys.stdout = out
        if real is not None:
            os.dup2(real, fd)
            with contextlib.suppress(OSError):  # a closed pipe: what was left to say is lost anyway
                reserved.close()


def silence_stdout() -> None:
    """After the reader closed the pipe, point stdout at the null device, so the interpreter's last
    flush at exit does not report the closed pipe again."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):
        pass
