"""The swapped strip really composites over its original in Blender's own sequencer render."""

import cv2
import numpy as np
import pytest

from blender_helpers import add_movie, select_only

pytestmark = [pytest.mark.blender, pytest.mark.index]


def render(bpy, scene, path):
    scene.render.filepath = str(path)
    bpy.ops.render.render(write_still=True, scene=scene.name)
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    assert image is not None
    return image.astype(np.int16)


def test_swapped_strip_changes_only_the_face(bpy, addon, project, clip, tmp_path):
    scene = project
    scene.view_settings.view_transform = "Standard"
    scene.render.resolution_x, scene.render.resolution_y, scene.render.resolution_percentage = 320, 240, 100
    scene.render.image_settings.file_format = "PNG"
    strip = add_movie(scene, clip, frame_start=1)
    strip.frame_offset_end = 18  # media frames 0..5
    select_only(scene, strip)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    scene.frame_set(3)  # media frame 2
    swapped = addon.timeline.swapped_strips(scene)[0]
    with_swap = render(bpy, scene, tmp_path / "with.png")
    swapped.mute = True
    without = render(bpy, scene, tmp_path / "without.png")
    overlay = cv2.imread(bpy.path.abspath(swapped.directory) + "000002.png", cv2.IMREAD_UNCHANGED)
    changed = np.abs(with_swap - without).max(axis=2) > 8
    face = overlay[..., 3] > 0
    assert changed.sum() > 200  # the face changed
    assert not (changed & ~face).any()  # nothing outside the overlay's face region
