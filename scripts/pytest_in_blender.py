#!/usr/bin/env python3
"""Run pytest inside a real Blender binary, so that the Blender tests run on that Blender's own `bpy` and
the farm tests run that binary as their `blender` (./dev test: Debian's Blender 4.3.2 in the Debian 13 root).

    python3 scripts/pytest_in_blender.py BLENDER SITE_PACKAGES [PYTEST ARGS...]

SITE_PACKAGES holds pytest and the test requirements, for Blender's Python (a venv made with
--system-site-packages over the Python that Blender runs, so that Blender's own numpy is used). Run with a
plain Python, this gives Blender a fresh user folder (BLENDER_USER_RESOURCES, read when Blender starts,
removed at the end) and starts `BLENDER -b --python-exit-code 1 --python <this file> -- ...`; inside
Blender it puts SITE_PACKAGES and the engine's source on sys.path and runs pytest. The exit status is pytest's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def launch(blender: str, site_packages: str, pytest_args: list[str]) -> int:
    resources = tempfile.mkdtemp(prefix="vse_faceswap_blender_user_")
    try:
        env = {**os.environ, "BLENDER_USER_RESOURCES": resources}
        command = [blender, "-b", "-noaudio", "--python-exit-code", "1", "--python", __file__, "--",
                   site_packages, *pytest_args]
        return subprocess.run(command, env=env).returncode
    finally:
        shutil.rmtree(resources, ignore_errors=True)


def run_inside_blender(site_packages: str, pytest_args: list[str]) -> None:
    sys.path[:0] = [site_packages, str(REPO / "core")]
    # The venv's console scripts (openjd) for the farm tests' subprocesses.
    os.environ["PATH"] = os.pathsep.join([str(Path(site_packages).parents[2] / "bin"), os.environ.get("PATH", "")])
    os.chdir(REPO)
    import pytest

    status = int(pytest.main(pytest_args))
    sys.stdout.flush()
    sys.stderr.flush()
    import bpy

    shutil.rmtree(bpy.app.tempdir, ignore_errors=True)  # what Blender's exit removes and os._exit would not
    os._exit(status)  # Blender's own exit would turn any status into --python-exit-code's 1, or 0


if __name__ == "__main__":
    if "bpy" in sys.modules:  # started by Blender: the arguments after "--" are ours
        arguments = sys.argv[sys.argv.index("--") + 1:]
        run_inside_blender(arguments[0], arguments[1:])
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    sys.exit(launch(sys.argv[1], sys.argv[2], sys.argv[3:]))
