"""Render-farm test helpers: a `blender` command for subprocesses, and a demo project.

There is no Blender executable on these machines. `blender_exe` stands in for it: a shell script that
runs scripts/bpy_blender.py, the Blender Python module (bpy 5.0.1) with Blender's command-line contract
(`-b file.blend --python-exit-code 1 --python-expr ...`, arguments in order, the user's preferences
loaded at start). The extension is the zip the other Blender tests install, enabled in the user
preferences this session saves under $BLENDER_USER_RESOURCES, as on a farm node where Blender has it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STANDIN = ROOT / "scripts" / "bpy_blender.py"


@pytest.fixture(scope="session")
def blender_exe(bpy, addon, tmp_path_factory) -> Path:
    """An executable `blender` (the stand-in) that has the extension enabled, with the test models."""
    assert bpy.ops.wm.save_userpref() == {"FINISHED"}
    exe = tmp_path_factory.mktemp("blender_bin") / "blender"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{STANDIN}" "$@"\n')
    exe.chmod(0o755)
    return exe


def run_blender(exe: Path, *args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def progress_lines(stdout: str) -> list[float]:
    return [float(line.split(":", 1)[1]) for line in stdout.splitlines() if line.startswith("openjd_progress:")]


def make_demo_project(bpy, addon, folder: Path, clip: Path) -> dict:
    """An edited timeline saved as folder/edit.blend, as an editor hands it to the farm: two strips of
    one clip with a gap between them, marked for swapping (one frame was swapped on the workstation,
    in its own cache beside the .blend). Frames 1-36:
        1-24   clip, media frames 0-23
        25-28  nothing
        29-36  clip again, media frames 4-11 (its frames are shared with the first strip)"""
    from blender_helpers import add_movie, select_only

    scene = bpy.context.scene
    first = add_movie(scene, clip, frame_start=1, name="shot")
    second = add_movie(scene, clip, frame_start=25, channel=1, name="shot_again")
    second.frame_offset_start, second.frame_offset_end = 4, 12
    scene.frame_start, scene.frame_end = 1, 36
    select_only(scene, first, second)
    assert bpy.ops.faceswap.swap(frame_start=1, frame_end=1) == {"FINISHED"}
    assert [(s.frame_final_start, s.frame_final_end) for s in addon.timeline.originals(scene)] == [(1, 25), (29, 37)]
    blend = folder / "edit.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    return {"blend": blend, "frames": range(1, 37), "media_frames": set(range(24))}


def swapped_outputs(cache: Path) -> dict[str, bytes]:
    """{relative path: bytes} of every swapped frame under a cache's swaps/ folder."""
    root = cache / "swaps"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.png"))}
