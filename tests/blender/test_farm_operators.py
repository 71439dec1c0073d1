"""The operators as render farms run them: a timeline frame range (inclusive, like the scene's), an
absolute cache folder from $FACESWAP_CACHE_DIR, progress lines on stdout, and failures that make
`blender -b ... --python-exit-code 1` exit non-zero (through the stand-in for the Blender executable,
see farm_helpers.py)."""

import importlib
import os
import queue
import threading
import time

import pytest

from blender_helpers import MODULE, add_movie, report, select_only, top_strips
from farm_helpers import blender_exe, progress_lines, run_blender  # noqa: F401 - fixture

pytestmark = [pytest.mark.blender, pytest.mark.index, pytest.mark.blender_binary]


def on_disk(addon, scene, strip) -> set[int]:
    return addon.timeline.swapped_on_disk(scene, addon.paths.media_path(strip))


def test_a_frame_range_works_on_exactly_the_strips_frames_in_it(bpy, addon, project, clip):
    addon.runtime.ENGINE.stop()  # a fresh engine session: it analyses the source photo once
    strip = add_movie(project, clip, frame_start=10)
    strip.frame_offset_start, strip.frame_offset_end = 2, 3  # timeline 12..30 shows media 2..20
    select_only(project, strip)
    assert bpy.ops.faceswap.swap(frame_start=5, frame_end=15) == {"FINISHED"}  # timeline 12..15
    first = report(project)
    assert (first["frames"], first["written"]) == (4, 4)
    # the frames, the frames before them in their segment (tracking follows faces from media frame 0), the source
    assert first["inferences"]["detect"] == 4 + 2 + 1
    assert on_disk(addon, project, strip) == {2, 3, 4, 5}
    swapped = addon.timeline.swapped_for_uid(project, strip.faceswap.uid)
    assert (swapped.frame_final_start, swapped.frame_final_end) == (12, 31)  # placed over the whole strip

    assert bpy.ops.faceswap.update(frame_start=16, frame_end=16) == {"FINISHED"}  # one frame
    assert (report(project)["frames"], report(project)["written"]) == (1, 1)
    assert bpy.ops.faceswap.update(frame_start=17) == {"FINISHED"}  # open end: to the strip's end
    assert (report(project)["frames"], report(project)["written"]) == (14, 14)
    assert bpy.ops.faceswap.update(frame_end=13) == {"FINISHED"}  # open start
    assert (report(project)["frames"], report(project)["written"], report(project)["skipped"]) == (2, 0, 2)
    assert on_disk(addon, project, strip) == set(range(2, 21))
    assert bpy.ops.faceswap.update() == {"FINISHED"}  # no range: every frame of the strips
    assert (report(project)["frames"], report(project)["written"]) == (19, 0)

    assert bpy.ops.faceswap.analyze(frame_start=100, frame_end=200) == {"FINISHED"}  # a chunk over a gap
    assert report(project)["frames"] == 0
    with pytest.raises(RuntimeError, match=r"frame_end \(3\) is before frame_start \(9\)"):
        bpy.ops.faceswap.swap(frame_start=9, frame_end=3)


def test_strips_sharing_media_in_a_range_make_each_media_frame_once(bpy, addon, project, clip):
    addon.runtime.ENGINE.stop()  # a fresh engine session: it analyses the source photo once
    one = add_movie(project, clip, frame_start=1, name="one")
    two = add_movie(project, clip, frame_start=5, channel=3, name="two")  # media 0..3 at 5..8
    select_only(project, one, two)
    assert bpy.ops.faceswap.swap(frame_start=5, frame_end=8) == {"FINISHED"}
    swap = report(project)
    # frames 5..8 show media 4..7 of `one` and media 0..3 of `two`: eight frames, each once
    assert (swap["frames"], swap["written"], swap["inferences"]["detect"]) == (8, 8, 8 + 1)
    assert on_disk(addon, project, one) == set(range(8))


def test_the_cache_folder_from_the_environment(bpy, addon, project, clip, tmp_path, monkeypatch):
    shared = tmp_path / "nas" / "faceswap_cache"
    monkeypatch.setenv("FACESWAP_CACHE_DIR", str(shared))
    addon.prefs.cache_dir_override = str(tmp_path / "ignored")  # the variable wins over the preferences
    strip = add_movie(project, clip)
    select_only(project, strip)
    assert addon.paths.cache_dir(project) == str(shared) and not addon.paths.is_temporary(project)
    assert bpy.ops.faceswap.swap(frame_start=1, frame_end=2) == {"FINISHED"}
    swapped = addon.timeline.swapped_for_uid(project, strip.faceswap.uid)
    assert bpy.path.abspath(swapped.directory).startswith(str(shared / "swaps"))
    assert len(list((shared / "swaps").rglob("*.png"))) == 2
    assert not (tmp_path / "project" / "faceswap_cache").exists() and not (tmp_path / "ignored").exists()

    monkeypatch.setenv("FACESWAP_CACHE_DIR", "relative/cache")
    with pytest.raises(RuntimeError, match="FACESWAP_CACHE_DIR must be an absolute folder.*'relative/cache'"):
        bpy.ops.faceswap.update()


def test_the_models_folder_from_the_environment(bpy, addon, project, clip, models_dir, tmp_path, monkeypatch):
    strip = add_movie(project, clip)
    select_only(project, strip)
    saved = addon.prefs.models_dir
    monkeypatch.setenv("FACECACHE_MODELS", str(models_dir))
    try:
        addon.prefs.models_dir = ""  # a farm node: no preference, the variable names the NAS's models folder
        assert addon.paths.models_dir() == str(models_dir)
        assert bpy.ops.faceswap.swap(frame_start=1, frame_end=1) == {"FINISHED"}
        addon.prefs.models_dir = str(tmp_path / "no_models")  # a preference set by hand wins
        with pytest.raises(RuntimeError, match="Install Default Models"):
            bpy.ops.faceswap.update(frame_start=2, frame_end=2)
    finally:
        addon.prefs.models_dir = saved


def test_progress_lines_are_printed_and_parseable(bpy, project, clip, capsys):
    strip = add_movie(project, clip)
    select_only(project, strip)
    assert bpy.ops.faceswap.swap(frame_start=1, frame_end=12) == {"FINISHED"}
    out = capsys.readouterr().out
    values = progress_lines(out)
    assert values and values == sorted(values) and values[-1] == 100.0
    statuses = [line for line in out.splitlines() if line.startswith("openjd_status: faceswap swap")]
    assert any("/12 frames (clip.mp4)" in line for line in statuses)
    assert "12 frames: 12 frames written" in statuses[-1]


def test_progress_lines_come_at_least_every_heartbeat_while_the_engine_is_silent(addon):
    progress = importlib.import_module(f"{MODULE}.progress_lines")

    class Job:
        done, total, label = 3, 12, "clip.mp4"

    printed = []

    class Out:
        def write(self, text):
            printed.extend(text.splitlines())

        def flush(self):
            pass

    now = [0.0]
    lines = progress.ProgressLines("update", out=Out(), clock=lambda: now[0])
    lines(Job)
    lines(Job)  # nothing new and no time passed: quiet
    assert printed == ["openjd_progress: 25.0", "openjd_status: faceswap update: 3/12 frames (clip.mp4)"]
    now[0] = progress.HEARTBEAT_SECONDS  # still nothing new, but a heartbeat is due
    lines(Job)
    assert len(printed) == 4 and progress.HEARTBEAT_SECONDS <= 60

    # Request.wait calls back on every heartbeat while no message arrives (a claim held elsewhere)
    job = addon.engine_client.Request({"kind": "swap"})
    calls = []

    def engine():
        time.sleep(0.3)
        job.messages.put({"type": "result", "summary": {}})

    threading.Thread(target=engine, daemon=True).start()
    job.wait(lambda j: calls.append(time.monotonic()), heartbeat=0.05)
    assert job.result == {} and len(calls) >= 3


@pytest.mark.every_blender
def test_a_background_blender_starts_with_the_extension_and_its_preferences(bpy, addon, blender_exe, models_dir):
    """What a farm node's `blender -b` starts with (on bpy 4.2 the stand-in once crashed here, reading them)."""
    check = (f"import bpy; prefs = bpy.context.preferences.addons[{MODULE!r}].preferences; "
             "print('models_dir:', prefs.models_dir); print('update:', bpy.ops.faceswap.update.idname())")
    run = run_blender(blender_exe, "-b", "--python-exit-code", "1", "--python-expr", check)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"models_dir: {models_dir}\n" in run.stdout and "update: FACESWAP_OT_update\n" in run.stdout


def test_background_failures_exit_non_zero_with_the_message(bpy, addon, project, clip, blender_exe, tmp_path):
    strip = add_movie(project, clip)
    select_only(project, strip)
    assert bpy.ops.faceswap.swap(frame_start=1, frame_end=1) == {"FINISHED"}
    bpy.ops.wm.save_mainfile()
    blend = bpy.data.filepath
    update = "import bpy; bpy.ops.faceswap.update(frame_start=2, frame_end=3)"

    ok = run_blender(blender_exe, "-b", "-y", blend, "--python-exit-code", "1", "--python-expr", update)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert progress_lines(ok.stdout)[-1] == 100.0 and "update: 2 frames: 2 frames written" in ok.stdout

    no_source = "import bpy; bpy.context.scene.faceswap.sources.clear(); " + update.split("; ", 1)[1]
    failed = run_blender(blender_exe, "-b", blend, "--python-exit-code", "1", "--python-expr", no_source,
                         "--python-expr", "print('not reached')")
    assert failed.returncode == 1 and "no source face set" in failed.stderr and "not reached" not in failed.stdout
    # Blender's own default without --python-exit-code: the error is printed and the exit status is 0
    silent = run_blender(blender_exe, "-b", blend, "--python-expr", no_source)
    assert silent.returncode == 0 and "no source face set" in silent.stderr

    relative = run_blender(blender_exe, "-b", blend, "--python-exit-code", "1", "--python-expr", update,
                           env={"FACESWAP_CACHE_DIR": "cache"})
    assert relative.returncode == 1 and "must be an absolute folder" in relative.stderr
    models = run_blender(blender_exe, "-b", blend, "--python-exit-code", "1", "--python-expr",
                         f"import bpy; bpy.context.preferences.addons[{MODULE!r}].preferences.models_dir = "
                         f"{str(tmp_path / 'empty')!r}; bpy.ops.faceswap.update(frame_start=4, frame_end=4)")
    assert models.returncode == 1 and "Install Default Models" in models.stderr  # an engine failure too

    for strip in list(top_strips(bpy.context.scene)):
        top_strips(bpy.context.scene).remove(strip)
    bpy.ops.wm.save_mainfile()
    empty = run_blender(blender_exe, "-b", blend, "--python-exit-code", "1", "--python-expr", update)
    assert empty.returncode == 1 and "no swapped strips" in empty.stderr
    assert os.path.isfile(blend)
