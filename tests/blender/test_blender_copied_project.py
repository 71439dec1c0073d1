"""A copied project (another folder, a NAS seen at another mount point) with its cache copied beside it: the
outputs that are up to date are recognised where they now lie, and nothing is written again."""

import shutil
from pathlib import Path

import pytest

from blender_helpers import add_movie, compat, report, select_only

pytestmark = [pytest.mark.blender, pytest.mark.index]


def swap_and_open_a_copy(bpy, project, clip, tmp_path, footage: str):
    """Swap media frames 0..7 of `clip` placed as `footage` says, save, copy the project folder (its cache with
    it) and open the copy. Returns the copy's scene."""
    folder = tmp_path / "project"
    if footage.startswith("in the project"):
        shutil.copy(clip, folder / "clip.mp4")
    shutil.copy(bpy.path.abspath(project.faceswap.sources[0].filepath), folder / "source.png")
    project.faceswap.sources[0].filepath = "//source.png"  # the source photo travels with the project
    strip = add_movie(project, {"in the project": "//clip.mp4", "in the project, absolute": folder / "clip.mp4"}.get(
        footage, clip), frame_start=1)
    strip.frame_offset_end = 16  # media frames 0..7
    select_only(project, strip)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    assert report(project)["written"] == 8
    bpy.ops.wm.save_mainfile()

    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)  # new mtimes and inodes, as a copy to another disk makes them
    bpy.ops.wm.open_mainfile(filepath=str(copy / "edit.blend"))
    scene = bpy.context.scene
    compat().set_sequencer_scene(bpy.context, scene)
    return scene


# "in the project, absolute": with Relative Paths off, the copy's strip still shows the original folder's clip,
# which the copy names by another path than the original did; the swapped strip's folder is kept.
@pytest.mark.parametrize("footage", ["in the project", "in the project, absolute", "elsewhere"])
def test_a_copied_project_writes_nothing_when_nothing_changed(bpy, addon, project, clip, tmp_path, footage):
    scene = swap_and_open_a_copy(bpy, project, clip, tmp_path, footage)
    assert bpy.ops.faceswap.update(frame_start=1, frame_end=64) == {"FINISHED"}
    again = report(scene)
    assert (again["frames"], again["written"], again["skipped"]) == (8, 0, 8)
    assert again["inferences"] == {"detect": 0, "landmark": 0, "embed": 0, "swap": 0}


def test_the_copy_keeps_its_folder_only_for_the_picture_it_holds(bpy, addon, project, clip, tmp_path):
    """The kept folder holds the woven picture: with the Deinterlace option set in the copy, the deinterlaced
    picture gets a folder of its own, and the woven outputs are left as they were."""
    scene = swap_and_open_a_copy(bpy, project, clip, tmp_path, "in the project, absolute")
    original, swapped = addon.timeline.originals(scene)[0], addon.timeline.overlay_of(addon.timeline.originals(scene)[0])
    woven = Path(bpy.path.abspath(swapped.directory))
    before = {p.name: p.read_bytes() for p in woven.iterdir() if p.is_file()}
    original.use_deinterlace = True
    assert bpy.ops.faceswap.update(frame_start=1, frame_end=64) == {"FINISHED"}
    assert report(scene)["written"] == 8
    now = Path(bpy.path.abspath(addon.timeline.overlay_of(original).directory))
    assert now != woven and now.parent.parent == woven.parent.parent  # another folder of the copy's swaps/
    assert {p.name: p.read_bytes() for p in woven.iterdir() if p.is_file()} == before
