"""frame_mapping against Blender's own timing: which media frame each timeline frame shows, on every
Blender the manifest claims (Blender stores retiming and playback rates differently in 4.2, 4.5, 5.0).

Blender maps a movie strip and an image strip with the same timing through the same code (its
`give_frame_index`, then `round` + animation offset), and for an image strip it tells which element it
shows at a frame (`strip_elem_from_frame`). So a movie strip and an image strip of as many numbered
elements, edited with Blender's own properties and retiming operators, give the add-on's mapping of the
movie and Blender's mapping to compare. What only movies have (the media's own frame rate), and a key
moved through the Python API (which image strips lack before 4.5), are checked on rendered frames of a
movie whose frames show their own number."""

import ctypes

import cv2
import numpy as np
import pytest

from blender_helpers import edit_with_operators, render_uncached, set_segment_speed, top_strips

pytestmark = [pytest.mark.blender, pytest.mark.index, pytest.mark.every_blender]

ELEMENTS = 36
BITS = 6  # a numbered frame shows its number in binary: one white or black column per bit
WIDTH, HEIGHT = 8 * BITS, 32


def number_picture(number: int) -> np.ndarray:
    picture = np.zeros((HEIGHT, WIDTH, 3), np.uint8)
    for bit in range(BITS):
        if number >> bit & 1:
            picture[:, bit * 8:(bit + 1) * 8] = 255
    return picture


def read_number(picture: np.ndarray) -> int:
    columns = [picture[4:-4, bit * 8 + 2:(bit + 1) * 8 - 2].mean() for bit in range(BITS)]
    return sum(1 << bit for bit, value in enumerate(columns) if value > 128)


def numbered_movie(path, frames: int, fps: float):
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), fps, (WIDTH, HEIGHT))
    for number in range(frames):
        writer.write(number_picture(number))
    writer.release()
    return path


@pytest.fixture(scope="module")
def numbered_clip(tmp_path_factory):
    """A 25 fps movie of ELEMENTS frames, each showing its own number."""
    return numbered_movie(tmp_path_factory.mktemp("numbered") / "numbers.mp4", ELEMENTS, 25)


@pytest.fixture
def sequencer(bpy, addon):
    bpy.ops.wm.read_homefile(use_empty=True)
    return edited_scene(bpy, bpy.context.scene)


def edited_scene(bpy, scene):
    """`scene`, set up at 25 fps, rendered without the sequencer's caches, made the one Blender's
    sequencer operators edit."""
    edit_with_operators(bpy, scene)
    render_uncached(scene)
    scene.render.fps, scene.render.fps_base = 25, 1.0
    scene.view_settings.view_transform = "Standard"
    scene.render.resolution_x, scene.render.resolution_y, scene.render.resolution_percentage = WIDTH, HEIGHT, 100
    scene.render.image_settings.file_format = "PNG"
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


def assert_same_mapping(addon, strip, label, blenders=None):
    """The add-on's mapping of `strip` is Blender's mapping of `blenders` (default: `strip` itself), an
    image strip with the same timing."""
    blenders = blenders or strip
    assert (strip.frame_final_start, strip.frame_final_end) == (blenders.frame_final_start, blenders.frame_final_end)
    ours = addon.frame_mapping.shown_media_frames(strip)
    theirs = blenders_mapping(blenders)
    wrong = {t: (theirs[t], ours.get(t)) for t in theirs if theirs[t] != ours.get(t)}
    assert not wrong, f"{label}: timeline frame: (Blender, ours) {wrong}"


def rendered_numbers(bpy, scene, frames, tmp_path) -> dict:
    """{timeline frame: number of the movie frame Blender renders there}."""
    bpy.context.window.scene = scene  # (the render operator takes the window's frame)
    shown = {}
    for frame in frames:
        scene.frame_set(frame)
        scene.render.filepath = str(tmp_path / "render.png")
        bpy.ops.render.render(write_still=True, scene=scene.name)
        shown[frame] = read_number(cv2.imread(str(tmp_path / "render.png"), cv2.IMREAD_COLOR))
    return shown


def operate(bpy, scene, strip, *operations):
    """Blender's retiming operators on `strip` (the data API's retiming_keys.add() crashes bpy 5.0.1); a
    ("speed", {"key_frame": frame, "percent": p}) is Set Speed on the segment from the key at that frame."""
    for other in top_strips(scene):
        other.select = False
    strip.select = True
    scene.sequence_editor.active_strip = strip
    for name, kwargs in operations:
        if name == "speed":
            set_segment_speed(bpy, scene, strip, **kwargs)
        else:
            assert getattr(bpy.ops.sequencer, name)(**kwargs) == {"FINISHED"}, name


def retimed_pair(bpy, tmp_path, clip, label, operations):
    """A movie strip and an image strip of as many elements, each alone in a new scene (freeze frames act
    on the scene's selected retiming keys), given the same retiming operations."""
    pair = []
    for make in (lambda scene: top_strips(scene).new_movie("movie", str(clip), 1, 1),
                 lambda scene: numbered_strip(scene, tmp_path)):
        scene = edited_scene(bpy, bpy.data.scenes.new(f"{label} {len(pair)}"))
        strip = make(scene)
        scene.frame_current = 10  # where a freeze frame is added
        operate(bpy, scene, strip, *operations)
        pair.append(strip)
    return pair


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


def key_at(frame: int):
    return "retiming_key_add", {"timeline_frame": frame}


def speed(key_frame: int, percent: float):
    return "speed", {"key_frame": key_frame, "percent": percent}


RETIMINGS = {
    "250%": [key_at(10), speed(10, 250)],
    "250% then 37%": [key_at(10), speed(10, 250), key_at(14), speed(14, 37)],
    "freeze frame": [("retiming_freeze_frame_add", {"duration": 6})],
}


@pytest.mark.parametrize("label", RETIMINGS)
def test_retimed_movie_maps_as_blender_does(bpy, addon, sequencer, numbered_clip, tmp_path, label):
    movie, image = retimed_pair(bpy, tmp_path, numbered_clip, label, RETIMINGS[label])
    assert len(addon.frame_mapping.retiming_keys(movie)) >= 3
    assert_same_mapping(addon, movie, label, image)
    ours = addon.frame_mapping.shown_media_frames(movie)
    assert rendered_numbers(bpy, movie.id_data, ours, tmp_path) == ours
    movie.use_reverse_frames = image.use_reverse_frames = True
    assert_same_mapping(addon, movie, f"{label}, reversed", image)
    movie.use_reverse_frames = image.use_reverse_frames = False
    for strip in (movie, image):
        strip.strobe, strip.frame_offset_end, strip.frame_offset_start = 2.0, 5, 2
    assert_same_mapping(addon, movie, f"{label}, strobed and trimmed", image)


def test_a_dragged_retiming_key_matches_the_rendered_frames(bpy, addon, sequencer, numbered_clip, tmp_path):
    movie = top_strips(sequencer).new_movie("movie", str(numbered_clip), 1, 1)
    operate(bpy, sequencer, movie, ("retiming_key_add", {"timeline_frame": 12}),
            ("retiming_key_add", {"timeline_frame": 30}))
    movie.retiming_keys[1].timeline_frame = 6  # dragging a key: 0..11 in 5 frames, then slower
    ours = addon.frame_mapping.shown_media_frames(movie)
    assert sorted(ours.values()) != list(range(len(ours)))  # retimed
    assert rendered_numbers(bpy, sequencer, ours, tmp_path) == ours


def test_movie_at_its_own_frame_rate_matches_the_rendered_frames(bpy, addon, sequencer, tmp_path):
    """A 25 fps clip in a 24 fps scene, added as the UI adds it ("Adjust Playback Rate", Blender's
    default): the strip plays at the clip's rate, so timeline frames skip media frames."""
    sequencer.render.fps = 24
    clip = numbered_movie(tmp_path / "numbers25.mp4", 24, 25)
    strip = top_strips(sequencer).new_movie("clip", str(clip), 1, 1)
    assert strip.frame_final_duration == 24 and addon.frame_mapping.playback_rate(strip) == 1.0
    # The data API adds a strip without that option and the Python API does not expose it: set Blender's
    # flag bit (1 << 17 of the strip's flags, the word that Reverse Frames, 1 << 7, toggles).
    before = ctypes.string_at(strip.as_pointer(), 512)
    strip.use_reverse_frames = True
    after = ctypes.string_at(strip.as_pointer(), 512)
    strip.use_reverse_frames = False
    (changed,) = [i for i in range(512) if before[i] != after[i]]
    flags = ctypes.c_uint32.from_address(strip.as_pointer() + changed - changed % 4)
    flags.value |= 1 << 17
    strip.frame_offset_start = 0  # makes Blender recompute the strip's length
    assert strip.frame_final_duration == 23  # 24 frames at 25 fps last 23.04 frames at 24 fps
    assert addon.frame_mapping.playback_rate(strip) == pytest.approx(25 / 24)

    for reverse in (False, True):
        strip.use_reverse_frames = reverse
        ours = addon.frame_mapping.shown_media_frames(strip)
        assert sorted(set(ours.values())) != list(range(len(ours)))  # media frames are skipped
        assert rendered_numbers(bpy, sequencer, ours, tmp_path) == ours, f"reversed {reverse}"


def test_timing_records_that_do_not_read_as_expected_refuse_the_strip(addon, sequencer, numbered_clip, bpy,
                                                                      monkeypatch):
    """A Blender whose strip or retiming key records are laid out otherwise: the strip is refused with
    what to do (the panel and the operators show this message), never mapped from misread memory."""
    records = addon.frame_mapping.strip_records
    movie = top_strips(sequencer).new_movie("movie", str(numbered_clip), 1, 1)
    operate(bpy, sequencer, movie, key_at(10), speed(10, 250))
    addon.frame_mapping.check_supported(movie)
    real = records._key_record()
    other = records._KeyRecord(28 - real.factor_offset, not real.last_is_one)  # the other versions' layout
    monkeypatch.setattr(records, "_key_record", lambda: other)
    assert records.retiming_keys(movie) is None
    assert "does not let Face Swap read" in addon.ops.check_media([movie])
    monkeypatch.setattr(records, "_key_record", lambda: None)  # a Blender this add-on does not know
    assert "reset its retiming" in addon.ops.check_media([movie])

    monkeypatch.undo()
    sequencer.render.fps = 24  # a 25 fps clip: whether it plays at its own rate is read from its flags
    assert addon.frame_mapping.playback_rate(movie) == 1.0
    real = records._strip_record()
    shifted = records._StripRecord(real.name + 8, real.flag + 8, real.type + 8)  # one more pointer before the name
    monkeypatch.setattr(records, "_strip_record", lambda: shifted)
    assert records.plays_at_clip_rate(movie) is None
    assert "convert the clip to the scene's rate" in addon.ops.check_media([movie])
    monkeypatch.setattr(records, "_strip_record", lambda: None)  # a Blender this add-on does not know
    assert records.plays_at_clip_rate(movie) is None
    assert "convert the clip to the scene's rate" in addon.ops.check_media([movie])
