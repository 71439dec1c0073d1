"""The swapped strips really composite over their originals in Blender's own sequencer render, also
after a split and Update."""

import importlib

import cv2
import numpy as np
import pytest

from blender_helpers import MODULE, add_movie, compat, report, select_only, top_strips

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


@pytest.mark.every_blender
def test_a_frame_without_a_face_adds_nothing_under_every_geometry_edit(bpy, addon, project, clip, tmp_path):
    """The extension's output for a frame without a face is one transparent pixel (playback reads it for
    nothing). Laid over the movie with the movie's transform, crop, flip and fit mirrored onto it (as the
    swapped strip is), and under opacity, the render is the movie alone, pixel for pixel, in each Blender."""
    from facecache.jobs.swap_job import FACELESS_SIZE
    from facecache.swap.sparse_png import SparseOverlayEncoder

    scene = project
    scene.view_settings.view_transform = "Standard"
    scene.render.resolution_x, scene.render.resolution_y, scene.render.resolution_percentage = 400, 240, 100
    scene.render.image_settings.file_format = "PNG"
    tiny = tmp_path / "000000.png"
    tiny.write_bytes(SparseOverlayEncoder().encode(*FACELESS_SIZE, []))
    movie = top_strips(scene).new_movie("shot", str(clip), 1, 1, fit_method="FILL")  # 320x240 filling 400x240
    overlay = top_strips(scene).new_image("shot.swap", str(tiny), 2, 1)
    overlay.blend_type = "ALPHA_OVER"
    edits = {"fit": lambda: None,
             "transform": lambda: [setattr(movie.transform, name, value) for name, value in
                                   (("offset_x", 40), ("scale_x", 0.7), ("rotation", 0.2), ("origin", (0.3, 0.6)))],
             "crop": lambda: [setattr(movie.crop, name, value) for name, value in (("min_x", 10), ("max_y", 15))],
             "flip": lambda: [setattr(movie, name, True) for name in ("use_flip_x", "use_flip_y")],
             "opacity": lambda: setattr(overlay, "blend_alpha", 0.5)}
    scene.frame_set(3)
    for name, edit in edits.items():  # each on top of the ones before
        edit()
        addon.timeline.mirror_geometry(scene, movie, overlay)
        shown = render(bpy, scene, tmp_path / f"{name}.png")
        overlay.mute = True
        alone = render(bpy, scene, tmp_path / f"{name}_alone.png")
        overlay.mute = False
        assert np.array_equal(shown, alone), f"the faceless overlay changed the picture under {name}"
        assert alone.max() > 0  # the movie is in the picture


@pytest.mark.every_blender
def test_frames_without_a_face_are_keyed_out_in_every_blender(bpy, addon, project, clip, tmp_path):
    """The swapped strip's own opacity, keyed to 0 over frames without a face (constant between keys) and
    1 elsewhere, in each Blender's action layout; keyed again only when the keys change; no keys: no curve."""
    scene = project
    overlay = top_strips(scene).new_image("shot.swap", str(tmp_path / "000000.png"), 2, 1)
    for index in range(1, 8):
        overlay.elements.append(f"{index:06d}.png")
    keys_module = addon.faceless_keys
    keys = keys_module.opacity_keys(1, [5, 6, 7, 8, 9, 10, 11, 12], {7, 8, 12})
    assert keys == [(1, 1.0), (3, 0.0), (5, 1.0), (8, 0.0)]
    assert keys_module.key_opacity(scene, overlay, keys) is True
    shown = []
    for frame in range(1, 9):
        scene.frame_set(frame)
        shown.append(overlay.blend_alpha)
    assert shown == [1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0]
    assert keys_module.key_opacity(scene, overlay, keys) is False  # already so: nothing touched
    assert keys_module.key_opacity(scene, overlay, keys_module.opacity_keys(1, [5, 6], set())) is True
    assert not [c for c in compat().animation_curves(scene) if c.data_path == overlay.path_from_id("blend_alpha")]
    assert overlay.blend_alpha == 1.0


@pytest.mark.every_blender
def test_frames_not_made_yet_show_the_shot_not_missing_media(bpy, addon, project, clip, tmp_path, monkeypatch):
    """A swap of part of a shot (a frame range; likewise a swap running, cancelled or stopped): the swapped
    strip's other frames name the transparent stand-in, not overlays that do not exist (Blender would mark the
    group as missing media and, with Show Missing Media on, paint those frames magenta); Update points them at
    their overlays once made."""
    scene = project
    scene.view_settings.view_transform = "Standard"
    scene.render.resolution_x, scene.render.resolution_y, scene.render.resolution_percentage = 320, 240, 100
    scene.render.image_settings.file_format = "PNG"
    scene.sequence_editor.show_missing_media = True
    pending_frame = importlib.import_module(f"{MODULE}.pending_frame")
    assert not pending_frame.in_use()  # background mode (farms): a missing overlay stays visible in a render
    monkeypatch.setattr(pending_frame, "in_use", lambda: True)  # as in Blender's window
    strip = add_movie(scene, clip, frame_start=1)
    strip.frame_offset_end = 16  # media frames 0..7
    addon.coverage_watch.refresh(scene, wait=True)  # the engine has said which frames exist, as in the UI
    select_only(scene, strip)
    assert bpy.ops.faceswap.swap(frame_start=1, frame_end=4) == {"FINISHED"}
    swapped = addon.timeline.swapped_strips(scene)[0]
    assert [e.filename for e in swapped.elements] == [f"{i:06d}.png" for i in range(4)] + ["pending.png"] * 4
    stand_in = cv2.imread(bpy.path.abspath(swapped.directory) + "pending.png", cv2.IMREAD_UNCHANGED)
    assert stand_in.shape == (1, 1, 4) and stand_in.max() == 0
    scene.frame_set(6)
    shown = render(bpy, scene, tmp_path / "pending.png")
    swapped.mute = True
    alone = render(bpy, scene, tmp_path / "alone.png")
    swapped.mute = False
    assert np.array_equal(shown, alone)  # the shot itself, not magenta
    assert addon.timeline.is_up_to_date(scene, strip) is False  # the panel still says: press Update
    monkeypatch.setattr(addon.runtime.PREVIEW, "ui", True)  # live previews, as in the window
    scene.frame_set(7)  # the playhead rests on media frame 6, never made: the preview makes it
    assert [e.filename for e in swapped.elements][5:] == ["pending.png", "000006.png", "pending.png"]

    assert bpy.ops.faceswap.update() == {"FINISHED"}
    assert [e.filename for e in swapped.elements] == [f"{i:06d}.png" for i in range(8)]
    assert addon.timeline.is_up_to_date(scene, strip)
    assert not np.array_equal(render(bpy, scene, tmp_path / "made.png"), alone)  # frame 6 has its face now


@pytest.mark.every_blender
def test_a_portrait_phone_clip_is_swapped_where_this_blender_shows_it(bpy, addon, project, portraits, tmp_path):
    """A phone's portrait clip, stored sideways with a display matrix: its overlays have the strip's size as
    this Blender shows it (upright from 4.4, on its side in 4.2 and 4.3), and where Blender shows the face
    upright it is swapped, nothing outside the face changed."""
    from footage import write_phone_clip

    clip = write_phone_clip(tmp_path / "phone.mp4", portraits["grace_hopper"], frames=3)
    scene = project
    strip = add_movie(scene, clip, frame_start=1)
    element = strip.elements[0]
    shown = (element.orig_width, element.orig_height)
    upright = tuple(bpy.app.version[:2]) >= (4, 4)
    assert shown == ((240, 320) if upright else (320, 240))
    scene.view_settings.view_transform = "Standard"
    scene.render.resolution_x, scene.render.resolution_y = shown
    scene.render.resolution_percentage = 100
    scene.render.image_settings.file_format = "PNG"
    select_only(scene, strip)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    (swapped,) = addon.timeline.swapped_strips(scene)
    overlay = cv2.imread(bpy.path.abspath(swapped.directory) + "000001.png", cv2.IMREAD_UNCHANGED)
    if not upright:  # on its side, as Blender 4.2 shows it and the engine analyses it, no face is found:
        assert overlay.shape[:2] in ((1, 1), shown[::-1])  # the faceless overlay, or one of the strip's size
        return
    assert overlay.shape[1::-1] == shown
    assert report(scene)["faces_swapped"] == 3
    scene.frame_set(2)
    with_swap = render(bpy, scene, tmp_path / "with.png")
    swapped.mute = True
    without = render(bpy, scene, tmp_path / "without.png")
    changed = np.abs(with_swap - without).max(axis=2) > 8
    assert changed.sum() > 200 and not (changed & ~(overlay[..., 3] > 0)).any()
