"""Where editors keep projects and clips, through the extension: names with spaces and non-ASCII characters,
a clip named after a Windows device, a path past Windows' 260 characters, two Blender processes on one cache,
and on Windows a project on another drive letter and on a UNC share (`./dev test-windows-blender` maps both in
its Wine prefix, a Wine folder standing in for the share, and names them in $VSE_FACESWAP_WINDOWS_PLACES).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from blender_helpers import ROOT, add_movie, last_json_line, new_project, report, select_only
from farm_helpers import blender_exe  # noqa: F401 - fixture

pytestmark = [pytest.mark.blender, pytest.mark.index]

FRAMES = 3
WINDOWS_DEVICES = {"CON", "PRN", "AUX", "NUL", *(f"COM{n}" for n in range(1, 10)), *(f"LPT{n}" for n in range(1, 10))}


def swap_in(bpy, addon, folder: Path, clip: Path, source: Path, cache: str = ""):
    """A new project saved in `folder` with `clip` on the timeline, its first FRAMES frames swapped into the
    cache beside it (or `cache`, chosen in the preferences); the scene."""
    scene = new_project(bpy, addon, folder / "edit.blend", source, cache)
    select_only(scene, add_movie(scene, clip))
    assert bpy.ops.faceswap.swap(frame_start=1, frame_end=FRAMES) == {"FINISHED"}
    return scene


def overlays(bpy, addon, scene) -> list[Path]:
    (swapped,) = addon.timeline.swapped_strips(scene)
    return sorted(Path(bpy.path.abspath(swapped.directory)).glob("*.png"))


def test_names_with_spaces_and_accents(bpy, addon, clip, portrait_paths, tmp_path):
    folder = tmp_path / "Projets d’été" / "shot 1 – final ✓"
    folder.mkdir(parents=True)
    named = folder / "prise 1 façade.mp4"
    shutil.copyfile(clip, named)
    scene = swap_in(bpy, addon, folder, named, portrait_paths["astronaut"])
    assert report(scene)["written"] == FRAMES
    assert Path(addon.paths.cache_dir(scene)) == folder / "faceswap_cache"
    assert len(overlays(bpy, addon, scene)) == FRAMES


def test_a_clip_named_after_a_windows_device(bpy, addon, clip, portrait_paths, tmp_path):
    """A clip from a Linux or macOS machine named CON.mp4: its output folder must be one Windows can open (a
    teammate's Windows workstation reads the same cache). Windows itself holds no file by that name."""
    named = tmp_path / "media" / "CON.mp4"
    named.parent.mkdir()
    try:
        shutil.copyfile(clip, named)
    except OSError as exc:  # Windows: the device, not a file
        assert sys.platform == "win32", exc
        pytest.skip(f"Windows has no file named CON.mp4 ({exc}); clips by that name come from other machines")
    scene = swap_in(bpy, addon, tmp_path / "project", named, portrait_paths["astronaut"])
    assert report(scene)["written"] == FRAMES
    cache = Path(addon.paths.cache_dir(scene))
    made = [path.relative_to(cache) for path in cache.rglob("*")]
    assert made and not [p for p in made if any(part.split(".")[0].upper() in WINDOWS_DEVICES for part in p.parts)]
    assert len(overlays(bpy, addon, scene)) == FRAMES


def test_a_path_past_260_characters(bpy, addon, clip, portrait_paths, tmp_path):
    """Windows refuses paths of 260 characters and more unless long paths are enabled (LongPathsEnabled, and a
    program that declares it: Blender's and Python's executables do). The swap works, or says so in one line."""
    folder = tmp_path.joinpath(*["a folder nested deep inside the studio's project tree"] * 5)
    assert len(str(folder / "faceswap_cache")) > 260
    try:
        scene = swap_in(bpy, addon, folder, clip, portrait_paths["astronaut"])
    except RuntimeError as exc:
        assert re.search(r"longer than the 260 characters Windows allows.*LongPathsEnabled", str(exc)), exc
        return
    assert report(scene)["written"] == FRAMES and len(overlays(bpy, addon, scene)) == FRAMES


def test_two_blender_processes_swap_on_one_cache(bpy, addon, blender_exe, clip, portrait_paths, tmp_path):  # noqa: F811
    """An editor and a teammate (another Blender process, as a second workstation) swap the same clip at the
    same time into one shared cache: both finish, and between them each frame is analysed and made."""
    shared = tmp_path / "shared cache"
    other = subprocess.Popen([str(blender_exe), "-b", "--python-exit-code", "1", "--python",
                              str(ROOT / "tests" / "blender" / "binary_swap.py"), "--", str(tmp_path / "teammate"),
                              str(clip), str(portrait_paths["astronaut"]), str(FRAMES)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "FACESWAP_CACHE_DIR": str(shared)})
    try:
        scene = swap_in(bpy, addon, tmp_path / "editor", clip, portrait_paths["astronaut"], cache=str(shared))
        assert Path(addon.paths.cache_dir(scene)) == shared
        out, err = other.communicate(timeout=300)
    finally:
        other.kill()
        addon.prefs.cache_dir_override = ""
    assert other.returncode == 0, err[-3000:]
    teammate = last_json_line(out)
    for made in (report(scene), teammate):
        assert made["written"] + made["skipped"] == FRAMES, made
    assert len(list((shared / "swaps").glob(f"*/{clip.stem}/*.png"))) == FRAMES


def windows_places() -> list[str]:
    """The project folders ./dev test-windows-blender maps: a second drive (P:\\) and a UNC share."""
    return [place for place in os.environ.get("VSE_FACESWAP_WINDOWS_PLACES", "").split(";") if place]


@pytest.mark.skipif(sys.platform != "win32" or not windows_places(),
                    reason="Windows' drive letters and UNC shares: ./dev test-windows-blender maps them under Wine")
@pytest.mark.parametrize("index", range(2), ids=["drive letter", "UNC share"])
def test_a_project_on_another_drive_and_on_a_unc_share(bpy, addon, clip, portrait_paths, index):
    place = Path(windows_places()[index]) / f"shot {os.getpid()}"
    media = place / "media" / "clip.mp4"
    media.parent.mkdir(parents=True)
    shutil.copyfile(clip, media)
    scene = swap_in(bpy, addon, place / "edit", media, portrait_paths["astronaut"])
    assert report(scene)["written"] == FRAMES
    cache = addon.paths.cache_dir(scene)
    assert cache.lower().startswith(str(place).lower()) and Path(cache) == place / "edit" / "faceswap_cache", cache
    (swapped,) = addon.timeline.swapped_strips(scene)
    assert swapped.directory.startswith("//")  # beside the .blend, so the project moves with its drive
    assert len(overlays(bpy, addon, scene)) == FRAMES
    bpy.ops.wm.read_homefile(use_empty=True)  # lets go of the project: it can be removed
    shutil.rmtree(place)
