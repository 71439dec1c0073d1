"""A project survives its files moving (issue 11, item 8): swapped strips are stored relative to the
.blend, and a missing overlay frame renders as nothing (never a crash) until Update remakes it.

Each render runs in its own bpy process (`render_frames.py`): before the fix, a missing frame made
Blender allocate from garbage element sizes and segfault (exit 139), which must not end the test run.
"""

import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from blender_helpers import MODULE, add_movie, compat, report, select_only, top_strips

pytestmark = [pytest.mark.blender, pytest.mark.index]

RENDER = Path(__file__).with_name("render_frames.py")
FRAMES = (2, 3, 5)  # timeline frames; media frames 1, 2, 4
# A size no element of another test has: elements left unwritten hold whatever their memory held before (a
# strip of 320x240 frames freed by an earlier test reads back as 320x240), so the test's size must be unusual.
SIZE = (3217, 1931)


def render(blend: Path, out: Path) -> dict[int, np.ndarray]:
    out.mkdir(parents=True, exist_ok=True)
    result = subprocess.run([sys.executable, str(RENDER), str(blend), str(out), *map(str, FRAMES)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"render crashed (exit {result.returncode}): {result.stderr[-2000:]}"
    return {f: cv2.imread(str(out / f"{f}.png"), cv2.IMREAD_COLOR).astype(np.int16) for f in FRAMES}


def differs(a, b) -> int:
    return int((np.abs(a - b).max(axis=2) > 8).sum())


def test_deleted_frames_cleared_cache_and_a_moved_project(bpy, addon, project, clip, tmp_path):
    scene = project
    scene.render.resolution_x, scene.render.resolution_y, scene.render.resolution_percentage = 320, 240, 100
    scene.render.image_settings.file_format = "PNG"
    scene.view_settings.view_transform = "Standard"
    folder = tmp_path / "project"
    shutil.copy(clip, folder / "clip.mp4")
    strip = add_movie(scene, "//clip.mp4", frame_start=1)
    strip.frame_offset_end = 18  # media frames 0..5
    select_only(scene, strip)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    swapped = addon.timeline.swapped_strips(scene)[0]
    assert swapped.directory.startswith("//") and Path(swapped.directory[2:]).parts[:2] == ("faceswap_cache", "swaps")  # relative to the .blend
    assert all((e.orig_width, e.orig_height) == (320, 240) for e in swapped.elements)  # no garbage sizes
    blend = folder / "edit.blend"
    bpy.ops.wm.save_mainfile()

    swapped.mute = True
    bpy.ops.wm.save_as_mainfile(filepath=str(folder / "plain.blend"), copy=True)
    swapped.mute = False
    plain = render(folder / "plain.blend", tmp_path / "r-plain")
    swapped_render = render(blend, tmp_path / "r-swapped")
    assert all(differs(swapped_render[f], plain[f]) > 200 for f in FRAMES)  # the face changed

    # One overlay deleted: that frame renders as the original (with Blender's "Show Missing Media" off)
    # or as solid magenta (on, the default in new files), never a crash; the others are still swapped.
    overlays = Path(bpy.path.abspath(swapped.directory))
    (overlays / "000002.png").unlink()
    magenta = render(blend, tmp_path / "r-missing-shown")
    assert differs(magenta[3], plain[3]) > 0.9 * 320 * 240 and differs(magenta[2], plain[2]) > 200
    scene.sequence_editor.show_missing_media = False
    bpy.ops.wm.save_mainfile()
    after_delete = render(blend, tmp_path / "r-deleted")
    assert differs(after_delete[3], plain[3]) == 0 and differs(after_delete[2], plain[2]) > 200
    assert bpy.ops.faceswap.update() == {"FINISHED"}
    assert report(scene)["written"] == 1  # only the missing frame was remade

    # The whole cache folder gone, then the project folder moved: renders show the originals.
    shutil.rmtree(folder / "faceswap_cache")
    bpy.ops.wm.save_mainfile()
    moved = tmp_path / "moved-project"
    folder.rename(moved)
    after_move = render(moved / "edit.blend", tmp_path / "r-moved")
    assert all(differs(after_move[f], plain[f]) == 0 for f in FRAMES)

    # Opened from its new place, Update remakes the frames beside it and the render is swapped again.
    bpy.ops.wm.open_mainfile(filepath=str(moved / "edit.blend"))
    scene = bpy.context.scene
    compat().set_sequencer_scene(bpy.context, scene)
    assert bpy.ops.faceswap.update() == {"FINISHED"}
    assert report(scene)["written"] == 6
    swapped = addon.timeline.swapped_strips(scene)[0]
    assert swapped.directory.startswith("//") and Path(swapped.directory[2:]).parts[:2] == ("faceswap_cache", "swaps")
    assert Path(bpy.path.abspath(swapped.directory)).resolve().is_relative_to(moved.resolve())
    bpy.ops.wm.save_mainfile()
    remade = render(moved / "edit.blend", tmp_path / "r-remade")
    assert all(differs(remade[f], swapped_render[f]) == 0 for f in FRAMES)


@pytest.mark.every_blender
def test_appended_elements_record_the_given_size_or_nothing(bpy, addon, tmp_path, monkeypatch):
    """The elements a swapped strip gets record the movie's size on every Blender (never the garbage that
    made a missing frame crash); where their memory does not read as expected, nothing is written."""
    elements = importlib.import_module(f"{MODULE}.strip_elements")
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.sequence_editor_create()
    names = [f"{i:06d}.png" for i in range(1, 40)]
    first = top_strips(scene).new_image("sized", str(tmp_path / "000000.png"), 1, 1)
    assert elements.append_frames(first, names, SIZE)
    assert [e.filename for e in first.elements] == ["000000.png", *names]
    assert all((e.orig_width, e.orig_height) == SIZE for e in first.elements)

    second = top_strips(scene).new_image("unsized", str(tmp_path / "000000.png"), 2, 1)
    monkeypatch.setattr(elements, "_ELEMENT_BYTES", elements._ELEMENT_BYTES + 4)  # a record laid out otherwise
    before = [(e.orig_width, e.orig_height) for e in second.elements]
    assert not elements.append_frames(second, names[:3], SIZE)
    assert [(e.orig_width, e.orig_height) for e in second.elements][:1] == before
    assert all((e.orig_width, e.orig_height) != SIZE for e in second.elements)
