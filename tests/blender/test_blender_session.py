"""One engine session per Blender session: warm, cancellable by message, restarted after a crash; the
live preview remakes the frame under the playhead from the cache; job state is never saved."""

import os
import time

import pytest

from blender_helpers import add_movie, select_only

pytestmark = [pytest.mark.blender, pytest.mark.index]


def drain(addon, until=lambda job: False):
    """Run the job timer by hand (timers never fire in the bpy module) until `until(job)` or the end. No
    deadline: every job ends, finished, failed or cancelled (an engine that dies ends it too), however loaded
    the machine."""
    job = addon.runtime.JOB.job
    while addon.jobs._tick() is not None and not until(job):
        time.sleep(0.02)
    return job


@pytest.fixture
def swapped(bpy, addon, project, clip):
    """Media frames 0..5 swapped; returns (original strip, swapped strip, its folder)."""
    strip = add_movie(project, clip, frame_start=1)
    strip.frame_offset_end = 18
    select_only(project, strip)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    (result,) = addon.timeline.swapped_strips(project)
    return strip, result, bpy.path.abspath(result.directory)


def mtimes(folder):
    return {name: os.stat(os.path.join(folder, name)).st_mtime_ns for name in os.listdir(folder)
            if name.endswith(".png")}


def test_a_blend_change_writes_exactly_the_current_frames_overlay_and_runs_no_model(bpy, addon, project,
                                                                                      swapped, monkeypatch):
    strip, _swapped_strip, folder = swapped
    monkeypatch.setattr(addon.runtime.PREVIEW, "ui", True)  # previews as in the interactive UI
    project.frame_set(3)  # media frame 2: the playhead rests on a frame already made
    assert addon.runtime.STATE.last_preview["written"] == 0
    before = mtimes(folder)
    project.faceswap.mask_blur = 0.55  # the slider moves
    after = mtimes(folder)
    assert [name for name in after if after[name] != before[name]] == ["000002.png"]
    preview = addon.runtime.STATE.last_preview
    assert (preview["frames"], preview["written"]) == (1, 1)
    assert preview["inferences"] == {"detect": 0, "landmark": 0, "embed": 0, "swap": 0}  # from the cache
    assert not addon.timeline.is_up_to_date(project, strip)  # the other frames still have the old blend
    project.frame_set(4)  # stepping on: that frame gets the new blend too, still without a model run
    stepped = mtimes(folder)
    assert stepped["000003.png"] != after["000003.png"]
    assert sum(addon.runtime.STATE.last_preview["inferences"].values()) == 0
    project.faceswap.live_preview = False  # switched off: a blend change writes nothing
    project.faceswap.opacity = 0.5
    assert mtimes(folder) == stepped


def test_two_swap_clicks_start_the_engine_once(bpy, addon, project, swapped):
    session = addon.runtime.ENGINE
    addon.runtime.ENGINE.stop()
    starts = session.starts
    project.faceswap.opacity = 0.8  # some work for each click
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    pid = session.process.pid
    project.faceswap.opacity = 0.7
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    assert session.starts == starts + 1 and session.process.pid == pid


def test_a_killed_engine_is_reported_once_and_the_next_request_starts_a_new_one(bpy, addon, project, clip,
                                                                                monkeypatch):
    strip = add_movie(project, clip)
    select_only(project, strip)
    monkeypatch.setattr(addon.jobs, "synchronous", lambda: False)  # as in the UI
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    session = addon.runtime.ENGINE
    starts = session.starts
    if hasattr(os, "getpriority"):  # the engine yields the processor to Blender's window
        ours = os.getpriority(os.PRIO_PROCESS, 0)
        lowered = min(19, ours + addon.engine_client.ENGINE_NICENESS)
        assert os.getpriority(os.PRIO_PROCESS, session.process.pid) == lowered
    drain(addon, until=lambda job: job.done >= 1)
    session.process.kill()
    drain(addon)
    status = addon.runtime.STATE.job
    assert not status.running and not addon.jobs.running()
    assert status.text.count("stopped unexpectedly") == 1 and "the next request starts it again" in status.text
    if os.name == "posix":  # the cause, and no stray warning the engine printed before
        assert "(killed by SIGKILL)" in status.text, status.text
    monkeypatch.setattr(addon.jobs, "synchronous", lambda: True)
    assert bpy.ops.faceswap.update() == {"FINISHED"}  # a fresh engine; frames made before the kill are kept
    assert session.starts == starts + 1


def test_cancel_is_a_message_the_engine_lives_on(bpy, addon, project, clip, monkeypatch):
    strip = add_movie(project, clip)
    select_only(project, strip)
    monkeypatch.setattr(addon.jobs, "synchronous", lambda: False)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    session = addon.runtime.ENGINE
    pid, starts = session.process.pid, session.starts
    drain(addon, until=lambda job: job.done >= 1)
    assert bpy.ops.faceswap.cancel() == {"FINISHED"}
    drain(addon)
    assert "cancelled" in addon.runtime.STATE.job.text
    assert session.alive and session.process.pid == pid and session.starts == starts  # not killed


def test_a_file_saved_during_a_job_reopens_with_no_job(bpy, addon, project, clip, monkeypatch):
    strip = add_movie(project, clip)
    select_only(project, strip)
    monkeypatch.setattr(addon.jobs, "synchronous", lambda: False)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    drain(addon, until=lambda job: job.done >= 1)
    assert addon.runtime.STATE.job.running
    bpy.ops.wm.save_mainfile()
    path = bpy.data.filepath
    bpy.ops.wm.open_mainfile(filepath=path)
    assert not addon.jobs.running() and not addon.runtime.STATE.job.running
    props = bpy.context.scene.faceswap
    assert not {"running", "progress", "status"} & set(props.bl_rna.properties.keys())  # never in the .blend
    assert addon.runtime.ENGINE.alive  # the job of the closed file was cancelled, not the engine
