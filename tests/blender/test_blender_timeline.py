"""faceswap.swap and faceswap.update through timeline edits: split, trim, move, duplicate, new strips of
the same media, delete. After each update, `last_report` says how many frames were computed (written,
model runs) and how many came from the cache (skipped)."""

import os

import cv2
import pytest

from blender_helpers import add_movie, report, select_only, top_strips

pytestmark = [pytest.mark.blender, pytest.mark.index]


def swapped_of(addon, scene, original):
    strip = addon.timeline.swapped_for_uid(scene, original.faceswap.uid)
    assert strip is not None, f"no swapped strip for {original.name}"
    return strip


def group_of(addon, original):
    group = original.parent_meta()
    assert group is not None and group.faceswap.role == "GROUP", f"{original.name} is not in a face swap group"
    return group


def assert_mirrors(addon, scene, original):
    """The swapped strip sits one channel above the original in its group, on exactly the frames the
    group shows of it, one element per frame."""
    swapped = swapped_of(addon, scene, original)
    group = group_of(addon, original)
    assert swapped.type == "IMAGE" and swapped.blend_type == "ALPHA_OVER" and swapped.parent_meta() == group
    assert swapped.channel == original.channel + 1
    shown = (max(original.frame_final_start, group.frame_final_start),
             min(original.frame_final_end, group.frame_final_end))
    assert (swapped.frame_final_start, swapped.frame_final_end) == shown
    used = [int(original.animation_offset_start + t - original.frame_start) for t in range(*shown)]
    assert [e.filename for e in swapped.elements] == [f"{i:06d}.png" for i in used]
    for element in (swapped.elements[0], swapped.elements[-1]):
        assert os.path.isfile(os.path.join(bpy_abspath(swapped.directory), element.filename))
    return swapped


def bpy_abspath(path):
    import bpy

    return bpy.path.abspath(path)


def edit_scene(bpy, addon, scene) -> None:
    """Make the sequencer edit `scene`: the workspace's sequencer scene in 5.0+, the window's before."""
    addon.compat.set_sequencer_scene(bpy.context, scene)
    if not addon.compat.has_sequencer_scene():
        bpy.context.window.scene = scene


def update(bpy, scene) -> dict:
    assert bpy.ops.faceswap.update() == {"FINISHED"}
    return report(scene)


def test_swap_then_split_trim_move_duplicate_delete(bpy, addon, project, clip):
    addon.runtime.ENGINE.stop()  # a fresh engine session: it analyses the source photo once
    scene = project
    strip = add_movie(scene, clip, frame_start=1)
    select_only(scene, strip)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    first = report(scene)
    assert (first["frames"], first["written"], first["skipped"]) == (24, 24, 0)
    assert first["inferences"]["detect"] == 24 + 1  # every frame, plus the source photo
    assert first["inferences"]["swap"] >= 20  # frames 11 and 23 have no face
    swapped = assert_mirrors(addon, scene, strip)
    assert scene.faceswap.cache_dir == "//faceswap_cache"
    assert swapped.directory.startswith("//faceswap_cache/swaps/")  # relative: moves with the project
    overlay = cv2.imread(os.path.join(bpy.path.abspath(swapped.directory), "000005.png"), cv2.IMREAD_UNCHANGED)
    assert overlay.shape == (240, 320, 4) and overlay[..., 3].min() == 0 and overlay[..., 3].max() == 255
    assert addon.timeline.is_up_to_date(scene, strip)

    same = update(bpy, scene)
    assert (same["frames"], same["written"], same["skipped"]) == (24, 0, 24)
    assert same["inferences"] == {"detect": 0, "embed": 0, "landmark": 0, "swap": 0}

    # The editor sees the face swap group (a meta strip) where the movie strip was: split, trim, move
    # and delete act on it. Split: two groups, two originals with their own identities, nothing recomputed.
    right_group = group_of(addon, strip).split(13, "SOFT")
    left = strip
    right = next(s for s in addon.compat.meta_contents(right_group) if s.type == "MOVIE")
    split = update(bpy, scene)
    assert (split["frames"], split["written"], split["skipped"]) == (24, 0, 24)
    assert split["inferences"]["detect"] == 0
    assert left.faceswap.uid != right.faceswap.uid
    assert len(addon.timeline.swapped_strips(scene)) == 2
    assert len(assert_mirrors(addon, scene, left).elements) == 12
    assert len(assert_mirrors(addon, scene, right).elements) == 12

    # trim the right part's end by 4 frames
    right_group.frame_final_end -= 4
    trimmed = update(bpy, scene)
    assert (trimmed["frames"], trimmed["written"], trimmed["skipped"]) == (20, 0, 20)
    assert len(assert_mirrors(addon, scene, right).elements) == 8

    # move it later and up two channels
    right_group.channel = 4
    right_group.frame_start += 40
    moved = update(bpy, scene)
    assert (moved["written"], moved["skipped"]) == (0, 20)
    assert_mirrors(addon, scene, right)
    assert right_group.channel == 4 and right_group.frame_final_start == 53
    assert len(addon.timeline.swapped_strips(scene)) == 2

    # duplicate (Blender copies the strip's properties, identity included) at another place
    copy = add_movie(scene, clip, frame_start=200, channel=7, name="copy")
    copy.faceswap.role, copy.faceswap.uid = left.faceswap.role, left.faceswap.uid
    dup = update(bpy, scene)
    assert len({left.faceswap.uid, right.faceswap.uid, copy.faceswap.uid}) == 3
    assert (dup["frames"], dup["written"], dup["skipped"]) == (24, 0, 24)
    assert dup["inferences"]["detect"] == 0 and dup["inferences"]["swap"] == 0
    assert_mirrors(addon, scene, copy)
    assert len(addon.timeline.swapped_strips(scene)) == 3

    # delete the right group (the shot): its swapped strip goes with it
    right_swapped_name = swapped_of(addon, scene, right).name
    top_strips(scene).remove(right_group)
    deleted = update(bpy, scene)
    assert right_swapped_name not in [s.name for s in addon.compat.all_strips(scene.sequence_editor)]
    assert len(addon.timeline.swapped_strips(scene)) == 2
    assert deleted["written"] == 0

    # split the movie strip inside its group (the editor opened it with Tab): one group, two parts,
    # each with its own swapped strip
    inner_right = left.split(7, "SOFT")
    inside = update(bpy, scene)
    assert (inside["written"], inside["not_followed"]) == (0, {})
    assert inner_right.parent_meta() == left.parent_meta()
    assert len(assert_mirrors(addon, scene, left).elements) == 6
    assert len(assert_mirrors(addon, scene, inner_right).elements) == 6


def test_only_new_frames_are_computed(bpy, addon, project, clip):
    addon.runtime.ENGINE.stop()  # a fresh engine session: it analyses the source photo once
    scene = project
    strip = add_movie(scene, clip, frame_start=1)
    strip.frame_offset_start, strip.frame_offset_end = 8, 8  # media frames 8..15
    select_only(scene, strip)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    first = report(scene)
    assert (first["frames"], first["written"], first["skipped"]) == (8, 8, 0)
    # tracking follows faces from the segment's first frame: media frames 0..7 are detected first
    assert first["inferences"]["detect"] == 8 + 8 + 1
    assert_mirrors(addon, scene, strip)

    strip.frame_offset_end = 0  # extend to media frames 8..23
    extended = update(bpy, scene)
    assert (extended["frames"], extended["written"], extended["skipped"]) == (16, 8, 8)
    assert extended["inferences"]["detect"] == 8

    # a new strip of the same media (not swapped by hand) is adopted; only media frames 0..7 are new to
    # the swap, and the first swap's tracking detected them already
    other = add_movie(scene, clip, frame_start=100, channel=3, name="again")
    adopted = update(bpy, scene)
    assert other.faceswap.role == "ORIGINAL"
    assert (adopted["frames"], adopted["written"], adopted["skipped"]) == (24, 8, 16)
    assert adopted["inferences"]["detect"] == 0
    assert_mirrors(addon, scene, other)


def test_new_source_reuses_the_analysis(bpy, addon, project, clip, portrait_paths, tmp_path):
    scene = project
    strip = add_movie(scene, clip, frame_start=1)
    strip.frame_offset_end = 16  # media frames 0..7
    select_only(scene, strip)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    assert addon.timeline.is_up_to_date(scene, strip)
    mirrored = tmp_path / "mirrored.png"
    cv2.imwrite(str(mirrored), cv2.imread(str(portrait_paths["astronaut"]))[:, ::-1])
    scene.faceswap.sources[0].filepath = str(mirrored)
    assert not addon.timeline.is_up_to_date(scene, strip)
    second = update(bpy, scene)
    assert (second["frames"], second["written"], second["skipped"]) == (8, 8, 0)
    assert second["inferences"]["detect"] == 1  # the new source photo only
    assert second["inferences"]["swap"] >= 7
    assert addon.timeline.is_up_to_date(scene, strip)

    scene.faceswap.opacity = 0.5  # a blend tweak: composite only
    tweak = update(bpy, scene)
    assert tweak["written"] == 8 and tweak["inferences"] == {"detect": 0, "embed": 0, "landmark": 0, "swap": 0}


def test_analyze_fills_coverage(bpy, addon, project, clip):
    addon.runtime.ENGINE.stop()  # a fresh engine session: it analyses the source photo once
    scene = project
    strip = add_movie(scene, clip, frame_start=5)
    strip.frame_offset_start = 16  # media frames 16..23
    select_only(scene, strip)
    assert bpy.ops.faceswap.analyze() == {"FINISHED"}
    analysed = report(scene)
    # tracking follows faces from the segment's first frame: media frames 0..15 are detected first
    assert analysed["frames"] == 8 and analysed["inferences"]["detect"] == 16 + 8
    data = addon.coverage_overlay.strip_coverage(scene, strip)
    assert (data["frames"], data["analysed"], data["swapped"]) == (8, 8, 0)
    assert data["analysed_runs"] == [(strip.frame_final_start, strip.frame_final_end)]
    assert bpy.ops.faceswap.analyze() == {"FINISHED"}
    assert report(scene)["inferences"]["detect"] == 0
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    swap = report(scene)
    assert swap["inferences"]["detect"] == 1  # the source photo; the strip's frames were analysed
    assert addon.coverage_overlay.strip_coverage(scene, strip)["swapped"] == 8


def test_update_after_the_face_swap_group_was_deleted_says_what_to_do(bpy, addon, project, clip):
    scene = project
    strip = add_movie(scene, clip, frame_start=1)
    strip.frame_offset_end = 20  # media frames 0..3
    select_only(scene, strip)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    group = addon.shot_group.group_of(addon.timeline.originals(scene)[0])
    top_strips(scene).remove(group)  # the editor deletes the face swap group
    # in background mode (the bpy module, blender -b on a farm) a job that can do nothing fails, in farm words
    with pytest.raises(RuntimeError, match=r"no swapped strips \(select movie strips, press Swap, save the \.blend"):
        bpy.ops.faceswap.update()
    # at the window, Update tells the editor the next step, not how to submit a farm job
    level, message = addon.ops.nothing_to_update(background=False)
    assert level == "INFO" and message.endswith("select movie strips and press Swap") and "submit" not in message


def test_two_scenes_of_one_project_share_a_clips_frames(bpy, addon, project, clip):
    """A second scene with a strip of the same clip: its own face swap group, the frames the first scene made
    reused (same cache, same outputs), only the new ones computed; each scene's Update leaves the other be."""
    first = project
    strip = add_movie(first, clip, frame_start=1)
    strip.frame_offset_end = 16  # media frames 0..7
    select_only(first, strip)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    second = bpy.data.scenes.new("second")
    second.sequence_editor_create()
    second.faceswap.sources.add().filepath = first.faceswap.sources[0].filepath
    edit_scene(bpy, addon, second)
    try:
        other = add_movie(second, clip, frame_start=10)
        other.frame_offset_start, other.frame_offset_end = 4, 12  # media frames 4..11
        select_only(second, other)
        assert bpy.ops.faceswap.swap() == {"FINISHED"}
        shared = report(second)
        assert (shared["frames"], shared["written"], shared["skipped"]) == (8, 4, 4)  # 4..7 made by the first
        assert [s.faceswap.role for s in top_strips(second)] == ["GROUP"]
    finally:
        edit_scene(bpy, addon, first)
    again = update(bpy, first)
    assert (again["written"], again["not_followed"]) == (0, {})
    assert [s.faceswap.role for s in top_strips(first)] == ["GROUP"]
