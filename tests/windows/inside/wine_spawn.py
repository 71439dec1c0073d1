"""Another Windows process, windowless, for the scripts run under Wine (imported from beside them).

Wine's CreateProcess now and then fails with ERROR_INTERNAL_ERROR (1359) on a command it runs fine a moment
later (seen in CI on 2026-12-04, Wine 8.0, and 2026-12-06, Wine 8.0 with Python 3.13). Windows itself has no such
failure and it is no case's subject, so only that error is retried.
"""

from __future__ import annotations

import subprocess
import sys
import time

WINE_INTERNAL_ERROR = 1359
SPAWN_ATTEMPTS = 4


def spawn(command: list[str], **options) -> subprocess.Popen:
    for attempt in range(1, SPAWN_ATTEMPTS):
        try:
            return subprocess.Popen(command, creationflags=subprocess.CREATE_NO_WINDOW, **options)
        except OSError as exc:
            if getattr(exc, "winerror", None) != WINE_INTERNAL_ERROR:
                raise
            print(f"spawn attempt {attempt}: {exc}; again", file=sys.stderr)
            time.sleep(1.0)
    return subprocess.Popen(command, creationflags=subprocess.CREATE_NO_WINDOW, **options)


def run(command: list[str], **options) -> subprocess.CompletedProcess:
    """`subprocess.run(..., capture_output=True, text=True)` through `spawn`."""
    process = spawn(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8", **options)
    stdout, stderr = process.communicate()
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
