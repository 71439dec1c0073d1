"""The render step of `./dev demo` (scripts/demo_render.py) on a tiny project: the contact sheet lays
Blender's own renders of the timeline side by side, the swapped half differs from the original half in the
face and nowhere else, and the MP4 holds every frame of the timeline, swapped."""

import importlib.util
import sys

import cv2
import numpy as np
import pytest

from blender_helpers import ROOT, add_movie, select_only

pytestmark = [pytest.mark.blender, pytest.mark.index]  # bpy; the default models and portraits from the index

spec = importlib.util.spec_from_file_location("demo_render", ROOT / "scripts" / "demo_render.py")
demo_render = sys.modules["demo_render"] = importlib.util.module_from_spec(spec)  # its dataclass looks it up
spec.loader.exec_module(demo_render)


def read(path):
    picture = cv2.imread(str(path), cv2.IMREAD_COLOR)
    assert picture is not None, path
    return picture


def movie_frames(path):
    capture = cv2.VideoCapture(str(path))
    assert capture.isOpened(), path
    fourcc = int(capture.get(cv2.CAP_PROP_FOURCC)).to_bytes(4, "little").decode().lower()
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(frame)
    capture.release()
    return fourcc, frames


def test_the_demo_renders_a_contact_sheet_and_an_mp4_of_the_swapped_timeline(bpy, addon, project, clip, tmp_path):
    scene = project
    scene.render.resolution_x, scene.render.resolution_y, scene.render.resolution_percentage = 320, 240, 100
    scene.render.fps, scene.render.fps_base = 25, 1.0  # the clip's rate: timeline frame N is media frame N - 1
    scene.view_settings.view_transform = "Standard"
    strip = add_movie(scene, clip, frame_start=1)
    scene.frame_start, scene.frame_end = 1, 24
    scene.frame_set(7)
    select_only(scene, strip)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    swapped = list(addon.timeline.swapped_strips(scene))
    assert swapped

    rendered = demo_render.render_demo(bpy, scene, swapped, tmp_path / "render", count=3)

    assert rendered.frames == [5, 13, 21]  # spread over 1-24, clear of the clip's faceless frames 12 and 24
    assert len(rendered.stills) == 3 and rendered.cell == (320, 240)
    assert all(read(path).shape == (240, 320, 3) for pair in rendered.stills for path in pair)
    sheet = read(rendered.sheet)
    row_height = demo_render.LABEL_HEIGHT + 240
    assert sheet.shape == (3 * row_height, 2 * 320 + demo_render.GAP, 3)
    overlays = bpy.path.abspath(swapped[0].directory)
    for row, (frame, (original, swapped_still)) in enumerate(zip(rendered.frames, rendered.stills)):
        top = row * row_height + demo_render.LABEL_HEIGHT
        left, right = sheet[top:top + 240, :320], sheet[top:top + 240, 320 + demo_render.GAP:]
        assert np.array_equal(left, read(original)) and np.array_equal(right, read(swapped_still))  # Blender's renders
        face = cv2.imread(f"{overlays}{frame - 1:06d}.png", cv2.IMREAD_UNCHANGED)[..., 3] > 0
        changed = np.abs(right.astype(np.int16) - left).max(axis=2) > 8
        assert changed.sum() > 200, frame  # the face was swapped...
        assert not (changed & ~face).any(), frame  # ...and nothing else changed
    assert not any(strip.mute for strip in swapped) and scene.frame_current == 7  # as they were

    assert rendered.movie == tmp_path / "render" / "swapped.mp4"
    fourcc, frames = movie_frames(rendered.movie)
    assert fourcc == "h264" and len(frames) == 24 and frames[0].shape == (240, 320, 3)
    for frame, (original, swapped_still) in zip(rendered.frames, rendered.stills):
        in_movie = frames[frame - 1].astype(np.int16)  # lossy: nearer the swapped render than the original
        face = cv2.imread(f"{overlays}{frame - 1:06d}.png", cv2.IMREAD_UNCHANGED)[..., 3] > 0
        off_swapped = np.abs(in_movie - read(swapped_still))[face].mean()
        assert off_swapped < np.abs(in_movie - read(original))[face].mean() / 2, frame
    assert scene.render.image_settings.file_format == "FFMPEG"  # the movie stays the scene's output
