"""A scene linked from another .blend (a library) can be changed in memory, but nothing of it is saved with
this file: a Swap there used to make its group and swapped strip, write 24 overlays and report success, all
lost without a word when the file was saved and opened again. Swap and Update on a linked scene now say so in
one line and change nothing (issue 36: "a linked scene", not reached before)."""

import pytest

from blender_helpers import add_movie, new_project, top_strips

pytestmark = [pytest.mark.blender, pytest.mark.every_blender]


def test_swap_and_update_on_a_linked_scene_say_why_in_one_line(bpy, addon, tmp_path, clip, portrait_paths):
    library = tmp_path / "library" / "shots.blend"
    shots = new_project(bpy, addon, library, portrait_paths["astronaut"])
    add_movie(shots, clip, frame_start=1).select = True
    name = shots.name
    assert bpy.ops.wm.save_as_mainfile(filepath=str(library)) == {"FINISHED"}
    before = library.read_bytes()

    new_project(bpy, addon, tmp_path / "project" / "edit.blend", portrait_paths["astronaut"])
    with bpy.data.libraries.load(str(library), link=True) as (_, target):
        target.scenes = [name]
    linked = target.scenes[0]
    addon.compat.set_sequencer_scene(bpy.context, linked)  # 5.0+
    bpy.context.window.scene = linked  # before 5.0 the sequencer edits the window's scene
    for operator in (bpy.ops.faceswap.swap, bpy.ops.faceswap.update):
        with pytest.raises(RuntimeError, match=r"linked from shots\.blend, so its strips cannot be changed in this "
                                               r"file: open .*shots\.blend to swap faces there") as refused:
            operator()
        assert "\n" not in str(refused.value).strip()
    assert [strip.faceswap.role for strip in top_strips(linked)] == ["NONE"]  # no group, no swapped strip
    assert not list(tmp_path.rglob("*.png")) and library.read_bytes() == before
