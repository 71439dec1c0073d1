"""The built zip in a real Blender binary, the way a user and a render node use it (./dev test runs this in
Debian's Blender 4.3.2, inside the Debian 13 root; it needs a binary, so the bpy module skips it):
install it with Blender's own command line, swap a clip through the operators in `blender -b`, then run a
render farm's chunk on the saved file, each in a fresh Blender process with a fresh user folder."""

import os
import subprocess

import pytest

from blender_helpers import ROOT, fresh_blender, last_json_line
from farm_helpers import model_runs, swapped_outputs

pytestmark = [pytest.mark.blender, pytest.mark.index, pytest.mark.blender_binary]


def run(command: list[str], env: dict) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def test_installed_from_the_command_line_it_swaps_then_runs_a_farm_chunk(bpy, addon_zip, clip, portrait_paths,
                                                                         models_dir, tmp_path):
    if not bpy.app.binary_path:
        pytest.skip("needs a Blender binary: ./dev test runs it in Debian's Blender 4.3.2 (scripts/debian_root.sh)")
    blender = bpy.app.binary_path
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(tmp_path / "user"), "FACECACHE_MODELS": str(models_dir)}
    run([blender, "--command", "extension", "install-file", "-r", "user_default", "-e", str(addon_zip)], env)

    project = tmp_path / "project"
    swapped = run(fresh_blender(ROOT / "tests" / "blender" / "binary_swap.py", str(project), str(clip),
                                str(portrait_paths["astronaut"]), "4"), env)
    first = last_json_line(swapped.stdout)
    assert (first["kind"], first["written"]) == ("swap", 4), first

    # A node's chunk, as docs/render-farm.md runs it: frames 5-12 are made, 1-4 are up to date.
    chunk = run([blender, "-b", str(project / "edit.blend"), "--python-exit-code", "1", "--python-expr",
                 "import bpy; bpy.ops.faceswap.update(frame_start=5, frame_end=12)"], env)
    assert model_runs(chunk.stdout, "detect") == 8, chunk.stdout[-3000:]
    made = swapped_outputs(project / "faceswap_cache")
    assert sorted(made) == [f"{clip.stem}/{i:06d}.png" for i in range(12)]
