"""Render-farm test helpers: a `blender` command for subprocesses, and a demo project.

Inside a Blender binary (./dev test runs these tests in Debian's Blender 4.3.2 with
scripts/pytest_in_blender.py) `blender_exe` is that binary. In the bpy module a stand-in takes its place: a
shell script (a batch file on Windows) that runs scripts/bpy_blender.py, the module with Blender's command-line contract
(`-b file.blend --python-exit-code 1 --python-expr ...`, arguments in order, the user's preferences
loaded at start). The extension is the zip the other Blender tests install, enabled in the user
preferences this session saves under $BLENDER_USER_RESOURCES, as on a farm node where Blender has it.
Where the bpy module cannot read saved preferences (4.2: see scripts/bpy_blender.py), the stand-in first runs a
script that gives it what they hold: the extension enabled, with this session's preference values.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STANDIN = ROOT / "scripts" / "bpy_blender.py"


@pytest.fixture(scope="session")
def blender_exe(bpy, addon, tmp_path_factory) -> Path:
    """An executable `blender` that has the extension enabled, with the test models: this Blender itself when
    the tests run inside a Blender binary (scripts/pytest_in_blender.py), else the stand-in."""
    assert bpy.ops.wm.save_userpref() == {"FINISHED"}
    if bpy.app.binary_path:
        return Path(bpy.app.binary_path)
    folder = tmp_path_factory.mktemp("blender_bin")
    start = ""  # the stand-in's own first arguments
    if not _standin().reads_saved_preferences(bpy.app.version):
        start = f' --python "{_preferences_script(bpy, folder)}"'
    if sys.platform == "win32":  # Windows runs no #! scripts: a batch file, as a farm's wrapper would be
        exe = folder / "blender.cmd"
        exe.write_text(f'@"{sys.executable}" "{STANDIN}"{start} %*\n')
        return exe
    exe = folder / "blender"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{STANDIN}"{start} "$@"\n')
    exe.chmod(0o755)
    return exe


def _standin():
    """scripts/bpy_blender.py as a module (it imports bpy only when it runs)."""
    spec = importlib.util.spec_from_file_location("bpy_blender", STANDIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _preferences_script(bpy, folder: Path) -> Path:
    """folder/preferences.py: what the saved preferences give a Blender at start, for one that cannot read
    them: the extension enabled, with this session's values of its settings."""
    from blender_helpers import MODULE

    prefs = bpy.context.preferences.addons[MODULE].preferences
    values = {p.identifier: getattr(prefs, p.identifier) for p in prefs.bl_rna.properties
              if not (p.is_readonly or p.is_registered)}  # its settings, not rna_type or bl_idname
    script = folder / "preferences.py"
    script.write_text(f"import addon_utils, bpy\n"
                      f"addon_utils.enable({MODULE!r}, default_set=True)\n"
                      f"prefs = bpy.context.preferences.addons[{MODULE!r}].preferences\n"
                      f"for name, value in {values!r}.items():\n"
                      f"    setattr(prefs, name, value)\n", encoding="utf-8")
    return script


def run_blender(exe: Path, *args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def progress_lines(stdout: str) -> list[float]:
    return [float(line.split(":", 1)[1]) for line in stdout.splitlines() if line.startswith("openjd_progress:")]


def make_demo_project(bpy, addon, folder: Path, clip: Path, source: Path) -> Path:
    """An edited timeline saved as folder/edit.blend, as an editor hands it to the farm: two strips of
    one clip with a gap between them, marked for swapping (one frame was swapped on the workstation,
    in the cache beside the .blend), rendered small. Frames 1-36:
        1-24   clip, media frames 0-23
        25-28  nothing
        29-36  clip again, media frames 4-11 (frames the first strip shows too)"""
    from blender_helpers import add_movie, compat, select_only

    bpy.ops.wm.read_homefile(use_empty=True)
    addon.jobs.reset()
    addon.prefs.cache_dir_override = ""
    scene = bpy.context.scene
    compat().set_sequencer_scene(bpy.context, scene)
    scene.sequence_editor_create()
    scene.faceswap.sources.add().filepath = str(source)
    scene.render.resolution_x, scene.render.resolution_y, scene.render.resolution_percentage = 320, 240, 100
    scene.view_settings.view_transform = "Standard"
    scene.render.image_settings.file_format = "PNG"
    folder.mkdir(parents=True, exist_ok=True)
    blend = folder / "edit.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    scene = bpy.context.scene
    first = add_movie(scene, clip, frame_start=1, name="shot")
    second = add_movie(scene, clip, frame_start=25, channel=1, name="shot_again")
    second.frame_offset_start, second.frame_offset_end = 4, 12
    scene.frame_start, scene.frame_end = 1, 36
    select_only(scene, first, second)
    assert bpy.ops.faceswap.swap(frame_start=1, frame_end=1) == {"FINISHED"}
    assert [(s.frame_final_start, s.frame_final_end) for s in addon.timeline.originals(scene)] == [(1, 25), (29, 37)]
    # Paths relative to the .blend, as Blender stores the files an editor picks (Relative Paths is on by
    # default): a node that opens the project through another mount finds the clip at its own path.
    bpy.ops.file.make_paths_relative()
    bpy.ops.wm.save_mainfile()
    return blend


@pytest.fixture(scope="session")
def farm_demo(bpy, addon, blender_exe, clip, portrait_paths, tmp_path_factory) -> dict:
    """The demo project, and what ONE background run of the whole timeline makes of it (the reference
    every chunked run must equal): {"blend", "folder", "reference": {name: bytes}}."""
    folder = tmp_path_factory.mktemp("farm_demo")
    blend = make_demo_project(bpy, addon, folder / "project", clip, portrait_paths["astronaut"])
    single = run_blender(blender_exe, "-b", str(blend), "--python-exit-code", "1", "--python-expr",
                         "import bpy; bpy.ops.faceswap.update()", env={"FACESWAP_CACHE_DIR": str(folder / "single")})
    assert single.returncode == 0, single.stderr[-3000:]
    reference = swapped_outputs(folder / "single")
    assert sorted(reference) == [f"{clip.stem}/{i:06d}.png" for i in range(24)]
    return {"blend": blend, "folder": folder, "reference": reference}


def model_runs(stdout: str, stage: str = "detect") -> int:
    """Model runs of one stage, summed over every job summary a task printed."""
    return sum(int(n) for n in re.findall(rf"openjd_status: faceswap \w+: [^\n]*model runs: [^\n]*\b{stage} (\d+)",
                                          stdout))


def swapped_outputs(cache: Path) -> dict[str, bytes]:
    """{"<clip stem>/<frame>.png": bytes} of every swapped frame in a cache's swaps/ folder (whatever
    folder the media path's digest names)."""
    found = {}
    for path in sorted((cache / "swaps").glob("*/*/*.png")):
        name = f"{path.parent.name}/{path.name}"
        assert name not in found, f"{name} made in two output folders"
        found[name] = path.read_bytes()
    return found
