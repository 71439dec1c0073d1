"""farm/openjd/faceswap/template.yaml (the Blender bundle) takes the remote cache as its RemoteCache parameter and
hands it to each Blender task in FACECACHE_REMOTE_CACHE, which the extension passes on to its engine. Run for
real with `openjd run`; the task's program stands in for Blender and prints what its environment holds (the
extension's side is tests/blender/test_blender_remote_cache.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from test_openjd_facecache import OPENJD

TEMPLATE = Path(__file__).resolve().parents[2] / "farm" / "openjd" / "faceswap" / "template.yaml"


@pytest.mark.parametrize("given, seen", [("s3://studio-cache/faces", "s3://studio-cache/faces"), (None, "")])
def test_the_remote_cache_reaches_the_blender_task_by_environment(tmp_path, given, seen):
    if OPENJD is None:
        pytest.skip("openjd (openjd-cli) is missing: ./dev installs it from the project's `farm` extra")
    blender = tmp_path / "blender"
    blender.write_text(f"#!{sys.executable}\nimport os\n"
                       "print('remote cache:', repr(os.environ.get('FACECACHE_REMOTE_CACHE')))\n")
    blender.chmod(0o755)
    blend = tmp_path / "edit.blend"
    blend.write_bytes(b"")
    command = [OPENJD, "run", str(TEMPLATE), "--step", "FaceSwap", "-p", f"BlendFile={blend}", "-p", "Frames=1-1",
               "-p", f"CacheDir={tmp_path / 'cache'}", "-p", f"BlenderExecutable={blender}"]
    if given is not None:
        command += ["-p", f"RemoteCache={given}"]
    run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
    assert f"remote cache: {seen!r}" in run.stdout  # empty: none (the extension reads it so)
