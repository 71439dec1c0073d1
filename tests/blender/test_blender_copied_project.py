"""A copied project (another folder, a NAS seen at another mount point) with its cache copied beside it: the
outputs that are up to date are recognised where they now lie, and nothing is written again."""

import shutil

import pytest

from blender_helpers import add_movie, compat, report, select_only

pytestmark = [pytest.mark.blender, pytest.mark.index]


# With Relative Paths off, a clip in the project folder is stored by its absolute path: the copy's strip still
# shows the original folder's clip, whose outputs are named by that path, not by the copied "//clip.mp4" folder.
NAMED_BY_ANOTHER_PATH = pytest.mark.xfail(strict=True, reason="the copy's strip points at the original folder's "
                                          "clip, whose outputs folder is named by its absolute path: written again")


@pytest.mark.parametrize("footage", ["in the project", pytest.param("in the project, absolute",
                                                                    marks=NAMED_BY_ANOTHER_PATH), "elsewhere"])
def test_a_copied_project_writes_nothing_when_nothing_changed(bpy, addon, project, clip, tmp_path, footage):
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
    assert bpy.ops.faceswap.update(frame_start=1, frame_end=64) == {"FINISHED"}
    again = report(scene)
    assert (again["frames"], again["written"], again["skipped"]) == (8, 0, 8)
    assert again["inferences"] == {"detect": 0, "landmark": 0, "embed": 0, "swap": 0}
