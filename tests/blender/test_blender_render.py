"""The swapped strips really composite over their originals in Blender's own sequencer render, also
after a split and Update."""

import cv2
import numpy as np
import pytest

from blender_helpers import add_movie, report, select_only

pytestmark = [pytest.mark.blender, pytest.mark.index]


def render(bpy, scene, path):
    scene.render.filepath = str(path)
    bpy.ops.render.render(write_still=True, scene=scene.name)
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    assert image is not None
    return image.astype(np.int16)


@pytest.mark.every_blender
def test_swapped_strips_change_only_the_face_after_a_split(bpy, addon, project, clip, tmp_path, capfd):
    scene = project
    scene.view_settings.view_transform = "Standard"
    scene.render.resolution_x, scene.render.resolution_y, scene.render.resolution_percentage = 320, 240, 100
    scene.render.image_settings.file_format = "PNG"
    strip = add_movie(scene, clip, frame_start=1)
    strip.frame_offset_end = 18  # media frames 0..5 on timeline frames 1..6
    select_only(scene, strip)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    strip.split(4, "SOFT")
    assert bpy.ops.faceswap.update() == {"FINISHED"}
    assert (report(scene)["written"], report(scene)["skipped"]) == (0, 6)  # the split needs no new frame
    swapped = sorted(addon.timeline.swapped_strips(scene), key=lambda s: s.frame_final_start)
    assert [(s.frame_final_start, s.frame_final_end) for s in swapped] == [(1, 4), (4, 7)]
    for frame, media_frame in ((3, 2), (5, 4)):  # one frame on each side of the split
        scene.frame_set(frame)
        for s in swapped:
            s.mute = False
        with_swap = render(bpy, scene, tmp_path / f"with{frame}.png")
        for s in swapped:
            s.mute = True
        without = render(bpy, scene, tmp_path / f"without{frame}.png")
        overlay = cv2.imread(bpy.path.abspath(swapped[0].directory) + f"{media_frame:06d}.png", cv2.IMREAD_UNCHANGED)
        changed = np.abs(with_swap - without).max(axis=2) > 8
        face = overlay[..., 3] > 0
        assert changed.sum() > 200, frame  # the face changed
        assert not (changed & ~face).any(), frame  # nothing outside the overlay's face region
    output = capfd.readouterr()
    assert "Error in bpy.app.handlers" not in output.out + output.err
