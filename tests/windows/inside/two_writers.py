"""Run by Windows Python under Wine (tests/windows/test_windows_session.py): two `facecache swap` processes,
spawned at once by Windows' own process creation, make the same clip into one cache (as two workstations,
or a workstation and a render node, on one shared folder). Prints one JSON object: each process's exit code,
stdout and the tail of its stderr.

Usage: python.exe two_writers.py CONFIG.json
"""

from __future__ import annotations

import json
import subprocess
import sys

from wine_spawn import spawn


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        config = json.load(handle)
    processes = []
    for out in config["outs"]:
        command = [sys.executable, "-m", "facecache", "swap", "--source", config["source"], "--target", config["clip"],
                   "--out", out, "--models-dir", config["models"], "--cache-dir", config["cache"], "--json"]
        processes.append(spawn(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               encoding="utf-8"))
    results = []
    for process in processes:
        stdout, stderr = process.communicate(timeout=900)
        results.append({"exit": process.returncode, "stdout": stdout, "stderr": stderr[-3000:]})
    print(json.dumps(results))


if __name__ == "__main__":
    main()
