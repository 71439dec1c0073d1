"""frame_mapping against Blender's own timing: which media frame each timeline frame shows.

Blender maps a movie strip and an image strip with the same timing through the same code (its
`give_frame_index`, then `round` + animation offset), and for an image strip it tells which element it
shows at a frame (`strip_elem_from_frame`). So image strips of N numbered elements, edited with
Blender's own properties and retiming operators, give Blender's mapping to compare with; a movie strip
is then checked on rendered frames for what only movies have (the media's own frame rate)."""

import ctypes

import cv2
import numpy as np
import pytest

from blender_helpers import compat, top_strips

pytestmark = [pytest.mark.blender, pytest.mark.index]

ELEMENTS = 36


@pytest.fixture
def sequencer(bpy, addon):
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    compat().set_sequencer_scene(bpy.context, scene)
    scene.sequence_editor_create()
    scene.render.fps, scene.render.fps_base = 25, 1.0
    return scene


def numbered_strip(scene, tmp_path, channel=1, start=1):
    path = tmp_path / "000000.png"
    if not path.exists():
        cv2.imwrite(str(path), np.zeros((8, 8, 3), np.uint8))
    strip = top_strips(scene).new_image(f"numbers{channel}", str(path), channel, start)
    for index in range(1, ELEMENTS):
        strip.elements.append(f"{index:06d}.png")  # names only: Blender maps without loading them
    return strip


def blenders_mapping(strip) -> dict:
    """{timeline frame: element index} as Blender shows it."""
    names = {e.filename: i for i, e in enumerate(strip.elements)}
    shown = {}
    for frame in range(strip.frame_final_start, strip.frame_final_end):
        element = strip.strip_elem_from_frame(frame)
        shown[frame] = names[element.filename] if element is not None else None
    return shown


def assert_same_mapping(addon, strip, label):
    ours = addon.frame_mapping.shown_media_frames(strip)
    theirs = blenders_mapping(strip)
    wrong = {t: (theirs[t], ours.get(t)) for t in theirs if theirs[t] != ours.get(t)}
    assert not wrong, f"{label}: timeline frame: (Blender, ours) {wrong}"


def operate(bpy, scene, strip, *operations):
    """Blender's retiming operators on `strip` (the data API's retiming_keys.add() crashes bpy 5.0.1)."""
    for other in top_strips(scene):
        other.select = False
    strip.select = True
    scene.sequence_editor.active_strip = strip
    for name, kwargs in operations:
        assert getattr(bpy.ops.sequencer, name)(**kwargs) == {"FINISHED"}, name


def test_trim_holds_reverse_and_strobe(addon, sequencer, tmp_path):
    strip = numbered_strip(sequencer, tmp_path, start=-3)
    strip.frame_offset_start, strip.frame_offset_end = 4, 6
    assert_same_mapping(addon, strip, "trimmed")
    strip.animation_offset_start = 5  # content starts at element 5
    assert_same_mapping(addon, strip, "animation offset")
    start = int(strip.frame_start)
    strip.frame_final_start, strip.frame_final_end = start - 3, start + ELEMENTS
    assert_same_mapping(addon, strip, "holds before and after the content")
    for reverse, strobe in ((True, 1.0), (False, 3.0), (True, 2.5)):
        strip.use_reverse_frames, strip.strobe = reverse, strobe
        assert_same_mapping(addon, strip, f"reverse {reverse}, strobe {strobe}")


def test_retiming_keys_speeds_and_freeze_frames(bpy, addon, sequencer, tmp_path):
    fast = numbered_strip(sequencer, tmp_path, channel=1)
    operate(bpy, sequencer, fast, ("retiming_key_add", {"timeline_frame": 10}),
            ("retiming_segment_speed_set", {"speed": 250}))
    assert len(addon.frame_mapping.retiming_keys(fast)) >= 3
    assert_same_mapping(addon, fast, "250%")
    operate(bpy, sequencer, fast, ("retiming_key_add", {"timeline_frame": 14}),
            ("retiming_segment_speed_set", {"speed": 37}))
    assert_same_mapping(addon, fast, "250% then 37%")
    fast.use_reverse_frames = True
    assert_same_mapping(addon, fast, "retimed and reversed")
    fast.use_reverse_frames, fast.strobe, fast.frame_offset_end = False, 2.0, 5
    assert_same_mapping(addon, fast, "retimed, strobed and trimmed")

    moved = numbered_strip(sequencer, tmp_path, channel=2)
    operate(bpy, sequencer, moved, ("retiming_key_add", {"timeline_frame": 12}),
            ("retiming_key_add", {"timeline_frame": 30}))
    moved.retiming_keys[1].timeline_frame = 6  # dragging a key: 0..11 in 5 frames, then slower
    assert_same_mapping(addon, moved, "dragged key")

    frozen = numbered_strip(sequencer, tmp_path, channel=3)
    operate(bpy, sequencer, frozen, ("retiming_key_add", {"timeline_frame": 10}),
            ("retiming_freeze_frame_add", {"duration": 6}))
    assert_same_mapping(addon, frozen, "freeze frame")


def test_movie_at_its_own_frame_rate_matches_the_rendered_frames(bpy, addon, sequencer, clip, tmp_path):
    """A 25 fps clip in a 24 fps scene, added as the UI adds it ("Adjust Playback Rate", Blender's
    default): the strip plays at the clip's rate, so timeline frames skip media frames."""
    sequencer.render.fps = 24
    sequencer.view_settings.view_transform = "Standard"
    sequencer.render.resolution_x, sequencer.render.resolution_y, sequencer.render.resolution_percentage = 320, 240, 100
    sequencer.render.image_settings.file_format = "PNG"
    strip = top_strips(sequencer).new_movie("clip", str(clip), 1, 1)
    assert strip.frame_duration == 24 and addon.frame_mapping.playback_rate(strip) == 1.0
    # The data API cannot add a strip with that option and the Python API does not expose it: set
    # Blender's flag bit (1 << 17 of the strip's flags, the word that Reverse Frames, 1 << 7, toggles).
    before = ctypes.string_at(strip.as_pointer(), 512)
    strip.use_reverse_frames = True
    after = ctypes.string_at(strip.as_pointer(), 512)
    strip.use_reverse_frames = False
    (changed,) = [i for i in range(512) if before[i] != after[i]]
    flags = ctypes.c_uint32.from_address(strip.as_pointer() + changed - changed % 4)
    flags.value |= 1 << 17
    strip.frame_offset_start = 0  # makes Blender recompute the strip's length
    assert strip.frame_duration == 23  # 24 frames at 25 fps last 23.04 frames at 24 fps
    assert addon.frame_mapping.playback_rate(strip) == pytest.approx(25 / 24)

    capture, decoded = cv2.VideoCapture(str(clip)), []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        decoded.append(frame.astype(np.int16))
    ours = addon.frame_mapping.shown_media_frames(strip)
    assert sorted(set(ours.values())) != list(range(len(ours)))  # media frames are skipped
    for frame in (2, 9, 20):  # (media frames 11 and 23 are empty: not these)
        sequencer.frame_set(frame)
        sequencer.render.filepath = str(tmp_path / "movie.png")
        bpy.ops.render.render(write_still=True, scene=sequencer.name)
        rendered = cv2.imread(str(tmp_path / "movie.png"), cv2.IMREAD_COLOR).astype(np.int16)
        nearest = int(np.argmin([np.abs(rendered - d).mean() for d in decoded]))
        assert nearest == ours[frame], f"timeline frame {frame}: Blender shows media frame {nearest}"
