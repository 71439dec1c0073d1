"""The swapped face follows every edit an editor makes to a shot, checked on the rendered picture.

Each test swaps a 12-frame 320x240 clip, makes an edit, runs faceswap.update, and renders frames in the
bpy module (Standard view transform). The reference is the engine's full-frame swapped output of the
same clip (`facecache swap --output-form full`) as an image strip given the same edit, in a scene of its
own (no original, no overlay). Both must match within TOLERANCE; each comparison also checks that the
picture without the swapped strip does NOT match, so a misplaced or missing face fails.

Every update after an edit must run no model and write no frame (only a speed change computes, and
only the media frames never made before). A colour strip under the shot makes opacity and blend modes
visible. All tests share one cache folder, so only the first swap analyses the clip.
"""

import ctypes
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import pytest

from blender_helpers import (compat, edit_with_operators, render_uncached, report, select_only, set_segment_speed,
                             top_strips)

pytestmark = [pytest.mark.blender, pytest.mark.index]

SIZE = (320, 240)
FRAMES = 12
# A render matches its reference when no pixel differs by more than MAX_DIFF (of 255) in any channel and
# at most MAX_OFF pixels (0.1%) by more than NEAR. Measured over every test here: at most 6 anywhere
# (Blender's and OpenCV's movie decoders differ by up to 5; the feathered mask edge, composited after
# the transform rather than before, stays within that), and no pixel above NEAR. Without the swapped
# strip the same frames differ by 67-185 on 800-2200 pixels; a misplaced face fails both bounds.
NEAR, MAX_OFF, MAX_DIFF = 8, int(0.001 * SIZE[0] * SIZE[1]), 16
NO_WORK = {"detect": 0, "embed": 0, "landmark": 0, "swap": 0}
FACELESS = "000011.png"  # the one media frame of the clip without a face (sample clips: every 12th)


@pytest.fixture(scope="module")
def shot_clip(tmp_path_factory, portrait_paths) -> Path:
    from facecache.media.sample_clip import write_sample_clip

    return write_sample_clip(portrait_paths["grace_hopper"], tmp_path_factory.mktemp("edits") / "shot.mp4",
                             frames=FRAMES, size=SIZE)


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("edits_cache")


@pytest.fixture(scope="module")
def full_frames(bpy, shot_clip, shared_cache, models_dir, portrait_paths, tmp_path_factory) -> Path:
    """The engine's full swapped frames of the whole clip (same settings as the add-on's defaults, the picture
    of this Blender among them)."""
    from facecache import choices

    out = tmp_path_factory.mktemp("full")
    result = subprocess.run([sys.executable, "-m", "facecache", "swap", "--source", str(portrait_paths["astronaut"]),
                             "--target", str(shot_clip), "--out", str(out), "--output-form", "full",
                             "--cache-dir", str(shared_cache), "--models-dir", str(models_dir), "--json",
                             "--picture-rules", choices.picture_rules_for(tuple(bpy.app.version), sys.platform)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return out / shot_clip.stem


@dataclass
class Shot:
    scene: object  # the project's scene: background, the swapped strip in its group
    reference: object  # a scene of its own: background, the engine's full frames as an image strip
    original: object
    group: object
    full: object  # the reference image strip


def set_up(scene, size=SIZE):
    scene.view_settings.view_transform = "Standard"
    scene.render.resolution_x, scene.render.resolution_y = size
    scene.render.resolution_percentage = 100
    scene.render.image_settings.file_format = "PNG"
    scene.render.fps, scene.render.fps_base = 25, 1.0
    scene.frame_start, scene.frame_end = 1, FRAMES
    render_uncached(scene)
    background = compat().new_effect(top_strips(scene), "background", "COLOR", 1, -20, length=60)
    background.color = (0.85, 0.7, 0.5)


def full_strip(collection, frames: Path, channel=2, start=1, fit="ORIGINAL"):
    strip = collection.new_image("reference", str(frames / "000000.png"), channel, start, fit_method=fit)
    for index in range(1, FRAMES):
        strip.elements.append(f"{index:06d}.png")
    return strip


@pytest.fixture
def make_shot(bpy, addon, project, shot_clip, shared_cache, full_frames):
    """make_shot(size=SIZE, fit="ORIGINAL", before_swap=None) -> Shot: a swapped movie strip (channel
    2, frame 1) and its reference. `before_swap(strip, scene)` edits both scenes first; it may return
    the strip to select for the swap (else the movie strip is selected)."""
    addon.prefs.cache_dir_override = str(shared_cache)

    def make(size=SIZE, fit="ORIGINAL", before_swap=None):
        scene = project
        set_up(scene, size)
        original = top_strips(scene).new_movie("shot", str(shot_clip), 2, 1, fit_method=fit)
        reference = bpy.data.scenes.new("reference")
        set_up(reference, size)
        full = full_strip(top_strips(reference), full_frames, fit=fit)
        chosen = original
        if before_swap is not None:
            chosen = before_swap(original, scene) or original
            before_swap(full, reference)
        select_only(scene, chosen)
        assert bpy.ops.faceswap.swap() == {"FINISHED"}
        return Shot(scene, reference, original, original.parent_meta(), full)

    yield make
    addon.prefs.cache_dir_override = ""


def update(bpy, scene) -> dict:
    assert bpy.ops.faceswap.update() == {"FINISHED"}
    return report(scene)


def assert_no_work(result: dict) -> None:
    assert result["written"] == 0 and result["inferences"] == NO_WORK, result
    assert result["not_followed"] == {}, result["not_followed"]


def render(bpy, scene, frame: int, path: Path) -> np.ndarray:
    scene.frame_set(frame)
    if scene != bpy.context.scene:
        apply_keyframes(scene, frame)
    scene.render.filepath = str(path)
    bpy.ops.render.render(write_still=True, scene=scene.name)
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    assert image is not None
    return image.astype(np.int16)


def apply_keyframes(scene, frame: int) -> None:
    """Blender writes animated values into strips for the window's scene only; the reference scene's
    keyframes are evaluated here."""
    for curve in compat().animation_curves(scene):
        owner, _, prop = curve.data_path.rpartition(".")
        target = scene.path_resolve(owner)
        if isinstance(getattr(target, prop), (int, float, bool)):
            setattr(target, prop, type(getattr(target, prop))(curve.evaluate(frame)))
        else:
            getattr(target, prop)[curve.array_index] = curve.evaluate(frame)


def differences(a: np.ndarray, b: np.ndarray) -> tuple[int, int]:
    """(largest channel difference, pixels off by more than NEAR)."""
    diff = np.abs(a - b).max(axis=2)
    return int(diff.max()), int((diff > NEAR).sum())


def assert_matches_reference(bpy, shot: Shot, frames, tmp_path: Path, label: str) -> None:
    """Each frame renders as its reference, and not as the picture without the swapped strip; the frame
    without a face renders exactly as the picture without the swapped strip."""
    swapped = swapped_of(shot)
    assert_faceless_frame_adds_nothing(bpy, shot, swapped, tmp_path, label)
    for frame in frames:
        got = render(bpy, shot.scene, frame, tmp_path / f"{label}_{frame}.png")
        assert swapped.blend_alpha == 1.0, f"{label}, frame {frame}: a frame with a face is keyed out"
        want = render(bpy, shot.reference, frame, tmp_path / f"{label}_{frame}_ref.png")
        largest, off = differences(got, want)
        assert largest <= MAX_DIFF and off <= MAX_OFF, f"{label}, frame {frame}: max {largest}, {off} pixels off"
        swapped.mute = True
        unswapped = render(bpy, shot.scene, frame, tmp_path / f"{label}_{frame}_unswapped.png")
        swapped.mute = False
        assert differences(unswapped, want)[1] > 4 * MAX_OFF, f"{label}, frame {frame}: the face did not change"


def assert_faceless_frame_adds_nothing(bpy, shot: Shot, swapped, tmp_path: Path, label: str) -> None:
    """The clip's frame without a face is one transparent pixel in the swapped strip, and the strip's
    opacity is keyed to 0 there (playback then skips the strip); where the strip shows it, the render is
    the shot's picture without the swapped strip, pixel for pixel, whatever the edit (transform, crop,
    flip, fit, opacity, blend, transitions)."""
    names = [element.filename for element in swapped.elements]
    if FACELESS not in names:
        return  # the edit does not show that frame
    frame = int(swapped.frame_start) + names.index(FACELESS)
    if not swapped.frame_final_start <= frame < swapped.frame_final_end:
        return
    tiny = cv2.imread(str(Path(bpy.path.abspath(swapped.directory)) / FACELESS), cv2.IMREAD_UNCHANGED)
    assert tiny is not None and tiny.shape == (1, 1, 4) and tiny.max() == 0
    shown = render(bpy, shot.scene, frame, tmp_path / f"{label}_{frame}_faceless.png")
    assert swapped.blend_alpha == 0.0, f"{label}, frame {frame}: the frame without a face is not keyed out"
    swapped.mute = True
    alone = render(bpy, shot.scene, frame, tmp_path / f"{label}_{frame}_faceless_alone.png")
    swapped.mute = False
    assert np.array_equal(shown, alone), f"{label}, frame {frame}: the faceless overlay changed the picture"


def transform(strip, offset=(40, -15), scale=0.7, rotation=0.2, origin=(0.3, 0.6)):
    t = strip.transform
    t.offset_x, t.offset_y = offset
    t.scale_x, t.scale_y = t.scale_x * scale, t.scale_y * scale
    t.rotation, t.origin = rotation, origin


def test_transform_crop_flip_and_fit_to_a_scene_of_another_size(bpy, addon, make_shot, tmp_path):
    shot = make_shot(size=(400, 240), fit="FILL")  # 320x240 clip filling a 400x240 scene
    for strip in (shot.original, shot.full):
        transform(strip)
        strip.crop.min_x, strip.crop.max_x, strip.crop.min_y, strip.crop.max_y = 10, 25, 5, 15
        strip.use_flip_x = strip.use_flip_y = True
    assert not addon.timeline.is_up_to_date(shot.scene, shot.original)
    assert_no_work(update(bpy, shot.scene))
    assert addon.timeline.is_up_to_date(shot.scene, shot.original)
    assert_matches_reference(bpy, shot, (3, 8), tmp_path, "geometry")


def test_keyframed_transform_opacity_and_crop(bpy, make_shot, tmp_path):
    shot = make_shot()
    for strip in (shot.original, shot.full):
        for frame, (x, rotation, alpha, crop) in ((1, (0, 0.0, 1.0, 0)), (12, (90, 0.35, 0.35, 70))):
            strip.transform.offset_x, strip.transform.rotation = x, rotation
            strip.blend_alpha, strip.crop.min_x = alpha, crop
            for owner, prop in ((strip.transform, "offset_x"), (strip.transform, "rotation"), (strip, "blend_alpha"),
                                (strip.crop, "min_x")):
                owner.keyframe_insert(prop, frame=frame)
    assert_no_work(update(bpy, shot.scene))
    fade = {c.data_path for c in compat().animation_curves(shot.scene) if c.data_path.endswith("blend_alpha")}
    # the fade moved to the group; the swapped strip's own opacity is keyed out over the frame without a face
    assert fade == {shot.group.path_from_id("blend_alpha"), swapped_of(shot).path_from_id("blend_alpha")}
    assert_matches_reference(bpy, shot, (4, 10), tmp_path, "keyframes")


def test_frames_without_a_face_are_keyed_out_and_the_keys_follow_the_shot(bpy, addon, make_shot, tmp_path):
    """Playback skips the swapped strip over a frame without a face: the strip's own opacity is keyed to
    0 there (constant), 1 elsewhere. The keys move with the group when the editor moves it (before any
    Update); a swapped strip made anew gets them; a face that comes to that frame is shown again."""
    shot = make_shot()
    scene = shot.scene

    def opacities(first: int) -> list[float]:
        swapped = swapped_of(shot)
        values = []
        for frame in range(first, first + FRAMES):
            scene.frame_set(frame)
            values.append(swapped.blend_alpha)
        return values

    keyed_out = [1.0] * (FRAMES - 1) + [0.0]  # media frame 11 has no face
    assert opacities(1) == keyed_out
    shot.group.frame_start += 5
    assert opacities(6) == keyed_out  # moved with the group, before Update
    assert_no_work(update(bpy, scene))
    assert opacities(6) == keyed_out
    compat().meta_contents(shot.group).remove(swapped_of(shot))
    assert update(bpy, scene)["written"] == 0
    assert opacities(6) == keyed_out  # the strip made anew
    assert_faceless_frame_adds_nothing(bpy, shot, swapped_of(shot), tmp_path, "moved")
    overlays = Path(bpy.path.abspath(swapped_of(shot).directory))
    kept = (overlays / FACELESS).read_bytes()
    try:  # a teammate's swap gave the frame a face: the next coverage refresh shows it
        shutil.copyfile(overlays / "000010.png", overlays / FACELESS)
        assert addon.coverage_watch.refresh(scene, wait=True)["media"] == 1
        assert opacities(6) == [1.0] * FRAMES
        assert not [c for c in compat().animation_curves(scene) if c.data_path.endswith('swap"].blend_alpha')]
    finally:
        (overlays / FACELESS).write_bytes(kept)
    assert addon.coverage_watch.refresh(scene, wait=True)["media"] == 1
    assert opacities(6) == keyed_out


def test_opacity_blend_mode_and_colour_modifiers(bpy, make_shot, tmp_path):
    def grade(strip, scene):
        strip.blend_alpha, strip.blend_type = 0.7, "MULTIPLY"
        strip.color_saturation = 0.4
        balance = strip.modifiers.new("Grade", "COLOR_BALANCE")
        balance.color_balance.gain = (1.3, 0.95, 0.8)
        curves = strip.modifiers.new("Curves", "CURVES")
        curves.curve_mapping.curves[3].points.new(0.4, 0.6)
        curves.curve_mapping.update()
        contrast = strip.modifiers.new("Contrast", "BRIGHT_CONTRAST")
        contrast.bright, contrast.contrast = 0.05, 0.3

    shot = make_shot()  # graded after the swap: the update moves the grade to the group
    grade(shot.original, shot.scene)
    grade(shot.full, shot.reference)
    assert_no_work(update(bpy, shot.scene))
    assert [m.type for m in shot.group.modifiers] == ["COLOR_BALANCE", "CURVES", "BRIGHT_CONTRAST"]
    assert (shot.group.blend_type, len(shot.original.modifiers)) == ("MULTIPLY", 0)
    assert_matches_reference(bpy, shot, (3, 8), tmp_path, "grade")


def test_cross_fade_and_wipe_with_neighbours(bpy, make_shot, tmp_path):
    def neighbours(strip, scene):
        after = compat().new_effect(top_strips(scene), "next", "COLOR", 3, 9, length=12)
        after.color = (0.1, 0.3, 0.8)
        compat().new_effect(top_strips(scene), "cross", "CROSS", 5, 9, input1=strip, input2=after)

    shot = make_shot(before_swap=neighbours)  # the cross-fade took the movie strip: it now takes the group
    assert top_strips(shot.scene)["cross"].input_1 == shot.group
    for scene, strip in ((shot.scene, shot.group), (shot.reference, shot.full)):
        before = compat().new_effect(top_strips(scene), "previous", "COLOR", 3, -8, length=12)
        before.color = (0.2, 0.7, 0.3)
        wipe = compat().new_effect(top_strips(scene), "wipe", "WIPE", 4, 1, input1=before, input2=strip)
        wipe.transition_type, wipe.angle = "SINGLE", 0.5
    assert_no_work(update(bpy, shot.scene))
    assert_matches_reference(bpy, shot, (3, 10), tmp_path, "transitions")


def test_strip_inside_a_selected_meta_strip(bpy, addon, make_shot, tmp_path):
    def in_meta(strip, scene):
        # Strip > Make Meta Strip, as an editor makes one: 4.2's data API (`new_meta`, `move_to_meta`) leaves
        # the meta one frame long, holding the strip's first frame
        project = bpy.context.window.scene
        edit_with_operators(bpy, scene)
        select_only(scene, strip)
        assert bpy.ops.sequencer.meta_make() == {"FINISHED"}
        edit_with_operators(bpy, project)
        meta = strip.parent_meta()
        meta.name = "act one"
        meta.blend_alpha = 0.8
        meta.transform.offset_x, meta.transform.rotation = -30, -0.1
        return meta

    shot = make_shot(before_swap=in_meta)
    act = top_strips(shot.scene)["act one"]
    assert shot.group.parent_meta() == act and shot.group.faceswap.role == "GROUP"
    assert_no_work(update(bpy, shot.scene))
    assert_matches_reference(bpy, shot, (3, 8), tmp_path, "meta")


def test_reversed_and_strobed(bpy, make_shot, tmp_path):
    shot = make_shot()
    for strip in (shot.original, shot.full):
        strip.use_reverse_frames = True
    assert_no_work(update(bpy, shot.scene))
    assert [e.filename for e in swapped_of(shot).elements][:3] == ["000011.png", "000010.png", "000009.png"]
    assert_matches_reference(bpy, shot, (2, 9), tmp_path, "reversed")
    for strip in (shot.original, shot.full):
        strip.use_reverse_frames, strip.strobe = False, 3.0
    assert_no_work(update(bpy, shot.scene))
    assert_matches_reference(bpy, shot, (5, 9), tmp_path, "strobed")


def swapped_of(shot):
    return next(s for s in compat().meta_contents(shot.group) if s.faceswap.role == "SWAPPED")


def retime(bpy, scene, strip, key_frame: int, speed: float) -> None:
    """Strip > Retiming in Blender's own operators: a key at `key_frame`, then a segment speed in percent
    (the data API's `retiming_keys.add()` crashes the bpy module; the operators do not)."""
    project = bpy.context.window.scene
    edit_with_operators(bpy, scene)
    editor = scene.sequence_editor
    group = strip.parent_meta()
    if group is not None:  # the editor opens the face swap group (Tab) to retime the movie strip in it
        editor.active_strip, group.select = group, True
        assert bpy.ops.sequencer.meta_toggle() == {"FINISHED"} and len(editor.meta_stack) == 1
    for other in compat().all_strips(editor):
        other.select = False
    strip.select = True
    editor.active_strip = strip
    assert bpy.ops.sequencer.retiming_key_add(timeline_frame=key_frame) == {"FINISHED"}
    set_segment_speed(bpy, scene, strip, key_frame, speed)
    if group is not None:
        editor.active_strip = None
        assert bpy.ops.sequencer.meta_toggle() == {"FINISHED"} and len(editor.meta_stack) == 0
    edit_with_operators(bpy, project)  # back to the project's scene


def test_speed_change_computes_only_new_media_frames(bpy, addon, make_shot, shot_clip, tmp_path):
    shot = make_shot()
    # A copy of the clip at another path has no swapped frames yet (its analysis is in the cache).
    copy = tmp_path / "shot_copy.mp4"
    shutil.copy(shot_clip, copy)
    top_strips(shot.scene).remove(shot.group)
    original = top_strips(shot.scene).new_movie("copy", str(copy), 2, 1)
    original.frame_offset_end = shot.full.frame_offset_end = 6  # media frames 0..5
    select_only(shot.scene, original)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    assert report(shot.scene)["written"] == 6
    made = set(range(6))
    shot.original, shot.group = original, original.parent_meta()
    compat().set_sequencer_scene(bpy.context, shot.scene)

    retime(bpy, shot.scene, original, 5, 300)  # faster: reaches media frames never made
    retime(bpy, shot.reference, shot.full, 5, 300)
    # the whole retimed clip shown: with its end trimmed as before, 4.2 shortens the strip to frames already made
    original.frame_offset_end = shot.full.frame_offset_end = 0
    faster = update(bpy, shot.scene)
    new = addon.frame_mapping.used_media_frames(original) - made
    assert new and faster["written"] == len(new) and faster["not_followed"] == {}
    made |= new
    assert_matches_reference(bpy, shot, (2, 5, 6), tmp_path, "retimed")

    retime(bpy, shot.scene, original, 3, 50)  # slower: shows frames already made
    assert addon.frame_mapping.used_media_frames(original) <= made
    assert_no_work(update(bpy, shot.scene))


def test_edits_that_cannot_be_followed_are_reported_with_what_to_do(bpy, addon, make_shot):
    shot = make_shot()
    driver = shot.original.transform.driver_add("offset_x").driver
    driver.type, driver.expression = "SCRIPTED", "frame * 2"
    shot.group.blend_alpha = 0.5
    shot.original.blend_alpha = 1.0
    shot.original.keyframe_insert("blend_alpha", frame=1)  # animated opacity on both the strip and its group
    shot.group.keyframe_insert("blend_alpha", frame=1)
    result = update(bpy, shot.scene)
    problems = result["not_followed"]["shot"]
    assert any("offset_x" in p and "driver" in p and "bake it to keyframes" in p for p in problems), problems
    assert any("opacity" in p and "set opacity on the group only" in p for p in problems), problems
    assert shot.original.faceswap.not_followed.split("\n") == problems  # what the strip's panel shows
    assert not addon.timeline.is_up_to_date(shot.scene, shot.original)
    assert result["written"] == 0 and result["inferences"] == NO_WORK

    # A smooth speed transition (which Blender's operators make only from a key selected with the mouse):
    # marked on a key's record as Blender marks it. The face is not shown on frames it cannot map.
    retime(bpy, shot.scene, shot.original, 6, 200)
    key = shot.original.retiming_keys[1]
    ctypes.c_int.from_address(key.as_pointer() + 8).value |= 1  # the key's flags: SEQ_SPEED_TRANSITION_IN
    result = update(bpy, shot.scene)
    assert any("smooth speed transition" in p for p in result["not_followed"]["shot"])
    assert swapped_of(shot).mute


def test_swap_inside_an_opened_meta_strip_and_legacy_swapped_strips(bpy, addon, make_shot, shot_clip):
    shot = make_shot()
    editor = shot.scene.sequence_editor
    # A movie strip inside a meta strip the editor opened (Tab): selected there, it is swapped there.
    act = top_strips(shot.scene).new_meta("act", 5, 30)
    inner = top_strips(shot.scene).new_movie("inner", str(shot_clip), 6, 30)
    inner.move_to_meta(act)
    act.frame_offset_start = act.frame_offset_end = 0
    editor.active_strip, act.select = act, True
    assert bpy.ops.sequencer.meta_toggle() == {"FINISHED"} and len(editor.meta_stack) == 1
    for strip in compat().all_strips(editor):
        strip.select = strip == inner
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    assert report(shot.scene)["written"] == 0
    assert inner.parent_meta().faceswap.role == "GROUP" and inner.parent_meta().parent_meta() == act
    editor.active_strip = None
    assert bpy.ops.sequencer.meta_toggle() == {"FINISHED"} and len(editor.meta_stack) == 0

    # A swapped strip laid over its original at the top level (files from before face swap groups)
    # is replaced by a group on the next update.
    old = top_strips(shot.scene).new_movie("old", str(shot_clip), 8, 60)
    old.faceswap.role, old.faceswap.uid = "ORIGINAL", "legacy0000000000"
    legacy = top_strips(shot.scene).new_image("old.swap", str(shot_clip.parent / "x.png"), 9, 60)
    legacy.faceswap.role, legacy.faceswap.link = "SWAPPED", old.faceswap.uid
    assert_no_work(update(bpy, shot.scene))
    assert "old.swap" not in [s.name for s in top_strips(shot.scene)]
    assert old.parent_meta().faceswap.role == "GROUP" and addon.timeline.overlay_of(old) is not None


def test_the_editors_opacity_on_the_swapped_strip_is_kept_and_said(bpy, addon, make_shot):
    """The swapped strip's opacity keys out its frames without a face; an opacity the editor sets on it
    (a value, or a fade of their own) is theirs: Update keeps it, says what that costs, and the strip stays up
    to date; made anew by Update, the strip keeps it and the editor's other settings. Cleared, the frames
    without a face are keyed out again."""
    shot = make_shot()
    scene, swapped = shot.scene, swapped_of(shot)
    path = swapped.path_from_id("blend_alpha")

    def curve():
        return next((c for c in compat().animation_curves(scene) if c.data_path == path), None)

    def opacities() -> list[float]:
        values = []
        for frame in range(1, FRAMES + 1):
            scene.frame_set(frame)
            values.append(round(swapped_of(shot).blend_alpha, 3))
        return values

    keyed_out = [1.0] * (FRAMES - 1) + [0.0]
    assert opacities() == keyed_out
    compat().remove_animation_curve(scene, curve())
    swapped.blend_alpha = 0.5  # half the swap shows: the editor's own blend
    result = update(bpy, scene)
    assert result["written"] == 0 and result["not_followed"] == {}
    (note,) = result["kept"]["shot"]
    assert note.startswith("opacity of 'shot.swap', set by hand: its frames without a face are not skipped")
    assert opacities() == [0.5] * FRAMES and shot.original.faceswap.kept == note
    assert addon.timeline.is_up_to_date(scene, shot.original)

    swapped.blend_alpha = 1.0  # a fade of their own, from 1 to 0 over frames 1-8 (Blender's default easing)
    swapped.keyframe_insert("blend_alpha", frame=1)
    swapped.blend_alpha = 0.0
    swapped.keyframe_insert("blend_alpha", frame=8)
    fade = opacities()
    assert update(bpy, scene)["kept"]["shot"] == [note]
    assert opacities() == fade and fade[0] == 1.0 and fade[7] == 0.0 and 0.0 < fade[3] < 1.0

    uid = swapped_of(shot).faceswap.uid
    swapped.blend_type, swapped.color_saturation = "ADD", 0.8  # more of the editor's own, on the swapped strip
    swapped.modifiers.new("Grade", "COLOR_BALANCE").color_balance.gain = (1.1, 1.0, 0.9)
    shot.original.frame_offset_start = 2  # trimmed: Update makes the swapped strip anew, all of it goes along
    assert update(bpy, scene)["kept"]["shot"] == [note]
    anew = swapped_of(shot)
    assert anew.faceswap.uid != uid and opacities()[2:] == fade[2:]
    assert (anew.name, anew.blend_type, round(anew.color_saturation, 3)) == ("shot.swap", "ADD", 0.8)
    assert [m.name for m in anew.modifiers] == ["Grade"] and tuple(anew.modifiers[0].color_balance.gain) == \
        pytest.approx((1.1, 1.0, 0.9))
    shot.original.frame_offset_start = 0
    assert update(bpy, scene)["kept"]["shot"] == [note] and opacities() == fade

    compat().remove_animation_curve(scene, curve())  # cleared: frames without a face are keyed out again
    swapped_of(shot).blend_alpha = 1.0
    result = update(bpy, scene)
    assert result["kept"] == {} and shot.original.faceswap.kept == ""
    assert opacities() == keyed_out


def element_paths(bpy, swapped) -> list[Path]:
    folder = Path(bpy.path.abspath(swapped.directory))
    return [folder / element.filename for element in swapped.elements]


def test_renders_never_read_the_previews_composited_pictures(bpy, addon, make_shot, full_frames, tmp_path):
    """The swapped strip's proxy is on at the preview's 100 % and 50 % alone, and the engine's composited picture
    of each frame with a face is where Blender reads those proxies: close to the engine's full swapped frame (a
    JPEG; at 50 % half its size). A render never reads them: replaced by magenta, or removed, every render is
    the same, pixel for pixel."""
    from facecache import output_layout

    shot = make_shot()
    swapped = swapped_of(shot)
    proxy = swapped.proxy
    assert swapped.use_proxy and proxy.build_100 and proxy.build_50 and not (proxy.build_25 or proxy.build_75)
    assert not (proxy.use_proxy_custom_directory or proxy.use_proxy_custom_file)
    previews = [Path(output_layout.preview_path(path)) for path in element_paths(bpy, swapped)]
    assert [p.exists() for p in previews] == [path.name != FACELESS for path in element_paths(bpy, swapped)]
    for frame in (3, 8):
        preview = cv2.imread(str(previews[frame - 1]), cv2.IMREAD_UNCHANGED)
        full = cv2.imread(str(full_frames / f"{frame - 1:06d}.png"), cv2.IMREAD_COLOR)
        assert preview.shape == full.shape  # opaque, the clip's size
        assert np.abs(preview.astype(int) - full).mean() < 3  # the swapped frame, through a JPEG
        half = cv2.imread(output_layout.preview_path(element_paths(bpy, swapped)[frame - 1], 50))
        assert half.shape == (full.shape[0] // 2, full.shape[1] // 2, 3)  # the picture at 50 %
    frames = (3, 8, FRAMES)  # the last shows media frame 11, without a face
    before = [render(bpy, shot.scene, frame, tmp_path / f"before_{frame}.png") for frame in frames]
    pictures = previews[0].parents[2]  # BL_proxy, in the cache the module's tests share: put back at the end
    shutil.copytree(pictures, tmp_path / "kept")
    magenta = np.full((SIZE[1], SIZE[0], 3), (255, 0, 255), np.uint8)
    for preview in pictures.rglob("*.jpg"):  # both sizes
        cv2.imwrite(str(preview), magenta)
    swapped.directory = swapped.directory  # no image of the strip left in Blender's caches
    for frame, want in zip(frames, before):
        assert np.array_equal(render(bpy, shot.scene, frame, tmp_path / f"magenta_{frame}.png"), want), frame
    shutil.rmtree(pictures)
    swapped.directory = swapped.directory
    for frame, want in zip(frames, before):
        assert np.array_equal(render(bpy, shot.scene, frame, tmp_path / f"none_{frame}.png"), want), frame
    shutil.copytree(tmp_path / "kept", pictures)


def test_blenders_own_proxy_builder_writes_where_the_engine_writes(bpy, addon, make_shot, tmp_path):
    """Blender's `sequencer.rebuild_proxy`, on a strip set up as the extension sets up the swapped strip, writes
    each element's proxies at the paths the engine writes its composited pictures to, at the same sizes."""
    from facecache import output_layout

    shot = make_shot()
    swapped = swapped_of(shot)
    folder = tmp_path / "overlays"
    shutil.copytree(bpy.path.abspath(swapped.directory), folder, ignore=shutil.ignore_patterns("BL_proxy"))
    scene = bpy.data.scenes.new("proxy names")
    scene.sequence_editor_create()
    strip = top_strips(scene).new_image("copy", str(folder / swapped.elements[0].filename), 1, 1)
    for element in list(swapped.elements)[1:]:
        strip.elements.append(element.filename)
    addon.preview_form.follow(scene, shot.original, strip)
    assert strip.use_proxy
    edit_with_operators(bpy, scene)
    select_only(scene, strip)
    assert bpy.ops.sequencer.rebuild_proxy() == {"FINISHED"}
    edit_with_operators(bpy, shot.scene)
    built = {str(p) for p in (folder / "BL_proxy").rglob("*") if p.is_file() and p.stat().st_size}
    # a frame without a face (a 1-pixel overlay) has no picture; Blender's own 50 % of it is empty (0 pixels)
    assert built == {output_layout.preview_path(path, size) for path in element_paths(bpy, strip)
                     for size in output_layout.PREVIEW_SIZES if size == 100 or path.name != FACELESS}
    for size in output_layout.PREVIEW_SIZES:  # and as large as Blender makes them
        ours = cv2.imread(output_layout.preview_path(element_paths(bpy, swapped)[2], size))
        blenders = cv2.imread(output_layout.preview_path(element_paths(bpy, strip)[2], size))
        assert ours.shape == blenders.shape, size


def test_the_preview_keeps_the_overlay_where_its_picture_would_differ_and_follows_update(bpy, addon, make_shot):
    """Where the composited picture would not show what a render shows (a modifier or blend mode on the
    swapped strip, an edit on the original that Update has not moved to the group yet, proxies stored per
    project), the swapped strip's proxy is off and the preview shows the overlay over the movie. A blend change's
    Update rewrites the pictures with the overlays."""
    from facecache import output_layout

    shot = make_shot()
    scene, swapped = shot.scene, swapped_of(shot)
    grade = swapped.modifiers.new("Grade", "COLOR_BALANCE")
    update(bpy, scene)
    assert not swapped_of(shot).use_proxy
    swapped_of(shot).modifiers.remove(grade)
    swapped_of(shot).blend_type = "ADD"
    update(bpy, scene)
    assert not swapped_of(shot).use_proxy
    swapped_of(shot).blend_type = "ALPHA_OVER"
    update(bpy, scene)
    assert swapped_of(shot).use_proxy
    shot.original.modifiers.new("Grade", "COLOR_BALANCE")  # until Update moves it to the group
    addon.timeline.point_elements(scene)
    assert not swapped_of(shot).use_proxy
    update(bpy, scene)
    assert swapped_of(shot).use_proxy and len(shot.group.modifiers) == 1
    scene.sequence_editor.proxy_storage = "PROJECT"
    update(bpy, scene)
    assert not swapped_of(shot).use_proxy
    scene.sequence_editor.proxy_storage = "PER_STRIP"
    update(bpy, scene)
    assert swapped_of(shot).use_proxy
    preview = Path(output_layout.preview_path(element_paths(bpy, swapped_of(shot))[2]))
    old = preview.read_bytes()
    scene.faceswap.opacity = 0.5
    result = update(bpy, scene)
    assert result["written"] == FRAMES and preview.read_bytes() != old
