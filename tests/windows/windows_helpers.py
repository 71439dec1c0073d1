"""What the Windows tests share besides fixtures: the clips' lengths, the scripts run inside Windows Python,
and reading their output."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from wine import WindowsPython, winpath

INSIDE = Path(__file__).parent / "inside"  # scripts that Windows Python runs
CLIP_FRAMES = 12
LONG_FRAMES = 48


def json_of(result: subprocess.CompletedProcess) -> dict:
    """The one JSON document a `--json` command printed; the failure shows its stderr."""
    assert result.stdout.strip(), f"no output (exit {result.returncode}): {result.stderr[-3000:]}"
    try:
        return json.loads(result.stdout)
    except ValueError:
        raise AssertionError(f"not one JSON document: {result.stdout[-2000:]}\n{result.stderr[-2000:]}") from None


def run_inside(windows_python: WindowsPython, script: str, *args: str, timeout: float = 900):
    return windows_python.run(winpath(INSIDE / script), *args, timeout=timeout)


def json_lines(result: subprocess.CompletedProcess, key: str) -> dict:
    """{line[key]: line} of the JSON lines a script printed, and "_log": what to show when one is missing."""
    found = {"_log": f"exit {result.returncode}\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"}
    for line in result.stdout.splitlines():
        if line.startswith("{"):
            message = json.loads(line)
            found[message[key]] = message
    return found
