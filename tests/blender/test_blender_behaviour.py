"""Bad input, cache location across saves, preview, cancel, engine crash, async path."""

import contextlib
import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from blender_helpers import add_movie, compat, report, select_only, top_strips

pytestmark = [pytest.mark.blender, pytest.mark.index]


def test_no_source_face_is_a_clear_message(bpy, project, clip):
    strip = add_movie(project, clip)
    select_only(project, strip)
    project.faceswap.sources.clear()
    with pytest.raises(RuntimeError, match="no source face set"):
        bpy.ops.faceswap.swap()
    assert len(top_strips(project)) == 1  # nothing created


def test_missing_media_file_is_a_clear_message(bpy, project, clip, tmp_path):
    moved = tmp_path / "gone.mp4"
    moved.write_bytes(clip.read_bytes())
    add_movie(project, moved)
    bpy.ops.wm.save_mainfile()
    # Blender holds a loaded strip's movie open, and Windows refuses to delete an open file (a sharing
    # violation, Explorer's "file in use"); so the file goes while the project is closed, as it can anywhere.
    blend = bpy.data.filepath
    bpy.ops.wm.read_homefile(use_empty=True)
    moved.unlink()
    bpy.ops.wm.open_mainfile(filepath=blend)
    scene = bpy.context.scene
    compat().set_sequencer_scene(bpy.context, scene)
    select_only(scene, *top_strips(scene))
    with pytest.raises(RuntimeError, match="is missing.*relink"):
        bpy.ops.faceswap.analyze()


def test_models_not_installed_is_a_clear_message(bpy, addon, project, clip, tmp_path):
    strip = add_movie(project, clip)
    strip.frame_offset_end = 22
    select_only(project, strip)
    saved = addon.prefs.models_dir
    addon.prefs.models_dir = str(tmp_path / "no_models")
    try:
        with pytest.raises(RuntimeError, match="Install Default Models"):
            bpy.ops.faceswap.analyze()
    finally:
        addon.prefs.models_dir = saved
    assert addon.runtime.STATE.job.running is False


def test_unwritable_cache_folder_is_a_clear_message(bpy, addon, project, clip, tmp_path):
    strip = add_movie(project, clip)
    select_only(project, strip)
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    addon.prefs.cache_dir_override = str(blocker / "cache")
    try:
        with pytest.raises(RuntimeError, match=rf"cannot write the cache folder {re.escape(str(blocker / 'cache'))}: it "
                                               r"\(or a folder above it\) is a file, not a folder; choose another Cache Location"):
            bpy.ops.faceswap.swap()
        # POSIX permission bits (Windows' read-only attribute does not apply to folders); root ignores them
        # (tests/faults tries it as another user)
        if hasattr(os, "geteuid") and os.geteuid() != 0:
            readonly = tmp_path / "readonly"
            readonly.mkdir()
            readonly.chmod(stat.S_IRUSR | stat.S_IXUSR)
            addon.prefs.cache_dir_override = str(readonly)
            with pytest.raises(RuntimeError, match="permission denied; choose another Cache Location"):
                bpy.ops.faceswap.swap()
    finally:
        addon.prefs.cache_dir_override = ""
    assert addon.timeline.swapped_strips(project) == []


@contextlib.contextmanager
def read_only_project(bpy, scene, tmp_path):
    """The saved project of `scene` (in tmp_path/project), as an editor opens it from a folder nobody can write
    (a share mounted read-only); yields its scene. On Linux the folder is bind-mounted read-only over itself
    (root cannot write it either; needs root). On Windows the project is saved to the share that
    scripts/windows_blender.py maps twice, VSE_FACESWAP_WINDOWS_READ_ONLY "W:\\;R:\\": W: as it is, R: through a
    read-only bind mount of it (Windows' writes there fail with "access denied"); it is opened from R:."""
    if os.name == "nt":
        places = os.environ.get("VSE_FACESWAP_WINDOWS_READ_ONLY")
        if not places:
            pytest.skip("no read-only share mapped: run it through scripts/windows_blender.py (as root)")
        writable, view = (Path(place) for place in places.split(";"))
        (writable / tmp_path.name).mkdir()
        assert bpy.ops.wm.save_as_mainfile(filepath=str(writable / tmp_path.name / "edit.blend")) == {"FINISHED"}
        assert bpy.ops.wm.open_mainfile(filepath=str(view / tmp_path.name / "edit.blend")) == {"FINISHED"}
        scene = bpy.context.scene
        compat().set_sequencer_scene(bpy.context, scene)
        select_only(scene, *top_strips(scene))
        yield scene
        return
    if not shutil.which("mount") or os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root on Linux")
    folder = tmp_path / "project"
    subprocess.run(["mount", "--bind", str(folder), str(folder)], check=True, capture_output=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], check=True, capture_output=True)
        yield scene
    finally:
        subprocess.run(["umount", str(folder)], check=True, capture_output=True)


# What the operating system says of a write there: EROFS on Linux; Windows refuses it as "access denied".
READ_ONLY_FAULT = "access denied" if os.name == "nt" else "read-only file system"


def test_a_read_only_project_folder_is_a_clear_message_and_a_cache_location_elsewhere_swaps(bpy, addon, project, clip,
                                                                                            tmp_path):
    """A project opened from a folder nobody can write (issue 36): Swap says in one line why and what to do and
    changes nothing; with a Cache Location elsewhere in the preferences it swaps there."""
    strip = add_movie(project, clip)
    select_only(project, strip)
    elsewhere = tmp_path / "elsewhere"
    with read_only_project(bpy, project, tmp_path) as scene:
        cache = Path(addon.paths.cache_dir(scene))
        assert cache.parent == Path(bpy.data.filepath).parent  # beside the project, in the read-only folder
        with pytest.raises(RuntimeError, match=rf"cannot write the cache folder .*faceswap_cache: {READ_ONLY_FAULT}"
                                               r"[^;\n]*; choose another Cache Location"):
            bpy.ops.faceswap.swap()
        assert addon.timeline.swapped_strips(scene) == [] and not cache.exists()
        addon.prefs.cache_dir_override = str(elsewhere)
        try:
            assert bpy.ops.faceswap.swap() == {"FINISHED"}
        finally:
            addon.prefs.cache_dir_override = ""
        assert len(addon.timeline.swapped_strips(scene)) == 1
        assert len(list((elsewhere / "swaps").rglob("*.png"))) == json.loads(scene.faceswap.last_report)["written"] > 0


def test_cache_stays_put_after_save_as(bpy, addon, project, clip, tmp_path):
    strip = add_movie(project, clip)
    strip.frame_offset_end = 20
    select_only(project, strip)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    before = addon.paths.cache_dir(project)
    assert before == str(tmp_path / "project" / "faceswap_cache")
    (tmp_path / "elsewhere").mkdir()
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "elsewhere" / "copy.blend"))
    scene = bpy.context.scene
    assert scene.faceswap.cache_dir == "//../project/faceswap_cache"
    assert addon.paths.cache_dir(scene) == before
    again = bpy.ops.faceswap.update() == {"FINISHED"} and report(scene)
    assert (again["written"], again["skipped"]) == (0, 4)
    # the panel's status line uses the engine's words, the same as the CLI's
    status = addon.runtime.STATE.job.text
    assert status.startswith("update: 4 frames: 0 frames written, 4 frames up to date; analyses from cache ")
    assert "model runs: detect 0, landmark 0, embed 0, swap 0" in status


@pytest.mark.every_blender
def test_unsaved_file_uses_a_temporary_cache_moved_on_first_save(bpy, addon, clip, portrait_paths, tmp_path, capfd):
    bpy.ops.wm.read_homefile(use_empty=True)
    addon.jobs.reset()
    scene = bpy.context.scene
    compat().set_sequencer_scene(bpy.context, scene)
    scene.sequence_editor_create()
    scene.faceswap.sources.add().filepath = str(portrait_paths["astronaut"])
    assert bpy.data.filepath == "" and addon.paths.is_temporary(scene)
    temporary = addon.paths.cache_dir(scene)
    strip = add_movie(scene, clip)
    strip.frame_offset_end = 20
    select_only(scene, strip)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    assert os.path.isdir(temporary)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "first.blend"))
    scene = bpy.context.scene
    assert not os.path.exists(temporary)
    assert addon.paths.cache_dir(scene) == str(tmp_path / "faceswap_cache")
    (swapped,) = addon.timeline.swapped_strips(scene)
    directory = bpy.path.abspath(swapped.directory)
    assert directory.startswith(str(tmp_path / "faceswap_cache"))
    assert os.path.isfile(os.path.join(directory, swapped.elements[0].filename))
    assert bpy.ops.faceswap.update() == {"FINISHED"}
    assert (report(scene)["written"], report(scene)["skipped"]) == (0, 4)
    bpy.ops.wm.save_mainfile()

    bpy.ops.wm.read_homefile(use_empty=True)  # reopen: the saved file finds its swapped frames beside it
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "first.blend"))
    scene = bpy.context.scene
    (swapped,) = addon.timeline.swapped_strips(scene)
    assert bpy.path.abspath(swapped.directory).startswith(str(tmp_path / "faceswap_cache"))
    original = addon.timeline.original_for(scene, swapped)
    assert addon.timeline.is_up_to_date(scene, original) is None  # not known until the engine answers
    addon.coverage_watch.tick()  # what the coverage timer does once the file is open (timers never run here)
    assert addon.timeline.is_up_to_date(scene, original)
    assert bpy.ops.faceswap.update() == {"FINISHED"}
    assert (report(scene)["written"], report(scene)["skipped"]) == (0, 4)
    output = capfd.readouterr()
    assert "Error in bpy.app.handlers" not in output.out + output.err  # Blender prints handler errors, never raises


def test_preview_computes_the_missing_frame_under_the_playhead(bpy, addon, project, clip):
    strip = add_movie(project, clip, frame_start=1)
    strip.frame_offset_end = 18  # media 0..5
    select_only(project, strip)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    swapped = addon.timeline.swapped_strips(project)[0]
    os.unlink(os.path.join(bpy.path.abspath(swapped.directory), "000003.png"))
    project.frame_current = 4  # media frame 3
    items, strips = addon.preview.items_under_playhead(project)
    assert [(i["start"], i["stop"]) for i in items] == [(3, 4)] and strips == [swapped]
    assert bpy.ops.faceswap.preview_frame() == {"FINISHED"}
    preview = addon.runtime.STATE.last_preview
    assert (preview["frames"], preview["written"]) == (1, 1) and sum(preview["inferences"].values()) == 0
    assert os.path.isfile(os.path.join(bpy.path.abspath(swapped.directory), "000003.png"))
    assert bpy.ops.faceswap.preview_frame() == {"FINISHED"}  # now current: nothing to write
    assert addon.runtime.STATE.last_preview["written"] == 0


def test_cancel_without_a_job_and_cache_operators(bpy, addon, project, clip):
    assert bpy.ops.faceswap.cancel() == {"CANCELLED"}
    strip = add_movie(project, clip)
    strip.frame_offset_end = 20
    select_only(project, strip)
    assert bpy.ops.faceswap.analyze() == {"FINISHED"}
    assert bpy.ops.faceswap.cache_prune() == {"FINISHED"}
    assert report(project)["stats"]["entries"] > 0
    assert bpy.ops.faceswap.cache_clear() == {"FINISHED"}
    assert report(project)["stats"]["entries"] == 0
    assert addon.coverage_overlay.strip_coverage(project, strip)["analysed"] == 0




def test_asynchronous_path_drains_progress_through_the_timer_callback(bpy, addon, project, clip, monkeypatch):
    strip = add_movie(project, clip)
    strip.frame_offset_end = 18
    select_only(project, strip)
    monkeypatch.setattr(addon.jobs, "synchronous", lambda: False)  # as in the UI; timers never fire here
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    assert addon.runtime.STATE.job.running and addon.jobs.running()
    assert bpy.ops.faceswap.swap.poll() is False  # one job at a time
    seen = []
    while addon.jobs._tick() is not None:  # what bpy.app.timers would call
        seen.append(addon.runtime.STATE.job.progress)
        import time

        time.sleep(0.05)
    assert not addon.runtime.STATE.job.running
    summary = json.loads(project.faceswap.last_report)
    assert (summary["frames"], summary["written"]) == (6, 6)
    assert seen and all(0.0 <= f <= 1.0 for f in seen)
    assert addon.timeline.is_up_to_date(project, strip)


def test_cancel_stops_a_running_swap_and_keeps_finished_frames(bpy, addon, project, clip, monkeypatch):
    import time

    strip = add_movie(project, clip)
    select_only(project, strip)
    monkeypatch.setattr(addon.jobs, "synchronous", lambda: False)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    job = addon.runtime.JOB.job
    while job.done < 2 and addon.jobs._tick() is not None:  # let a couple of frames finish
        time.sleep(0.02)
    cancelled = bpy.ops.faceswap.cancel() == {"FINISHED"}  # (a very fast machine may have finished already)
    while addon.jobs._tick() is not None:
        time.sleep(0.02)
    assert not addon.jobs.running() and not addon.runtime.STATE.job.running
    assert ("cancelled" in addon.runtime.STATE.job.text) == cancelled
    monkeypatch.setattr(addon.jobs, "synchronous", lambda: True)
    assert bpy.ops.faceswap.update() == {"FINISHED"}  # finished frames were kept; the rest is computed now
    resumed = report(project)
    assert resumed["frames"] == 24 and resumed["written"] + resumed["skipped"] == 24
    assert addon.timeline.is_up_to_date(project, strip)
