"""Live coverage: a teammate fills the shared cache outside Blender; the add-on's watcher notices, a
refresh (by hand here: timers never run in the bpy module) shows the teammate's frames as analysed.
A watcher that cannot start leaves manual refresh, and the refresh operator still works."""

import importlib
import os
import sys
import threading
import time

import pytest

from blender_helpers import MODULE, add_movie, report, select_only

pytestmark = [pytest.mark.blender]


@pytest.fixture
def watch(addon):
    module = importlib.import_module(f"{MODULE}.coverage_watch")
    yield module
    addon.runtime.COVERAGE.stop()


def teammate_analyses(cache_dir, models_dir, clip, frames: range) -> None:
    """Another workstation on this Blender: the engine called directly (no Blender) on the same cache and models,
    decoding the clip as this Blender shows it."""
    import bpy

    from facecache import choices
    from facecache.analysis.analyzer import FaceAnalyzer
    from facecache.analysis.factory import AnalysisSettings, build_model_set
    from facecache.models.runtime import SessionFactory
    from facecache.media.picture_rules import picture_rules
    from facecache.models.store import ModelStore
    from facecache.store.cache import FaceCache

    analyzer = FaceAnalyzer(FaceCache(cache_dir), build_model_set(ModelStore(models_dir), SessionFactory("auto"),
                                                                  AnalysisSettings()),
                            picture_rules=picture_rules(choices.picture_rules_for(tuple(bpy.app.version), sys.platform)))
    assert len(analyzer.analyze_media(clip, frames)) == len(frames)


def wait_for(event, seconds: float = 10.0) -> bool:
    return event.wait(seconds)


def test_teammate_analyses_show_after_the_watcher_fires(bpy, addon, project, clip, models_dir, watch):
    strip = add_movie(project, clip)
    cache = addon.paths.cache_dir(project)
    os.makedirs(cache, exist_ok=True)  # the shared cache folder exists (a teammate's, or an earlier job's)
    watch.follow_scene(project)  # what the timer does every second
    assert addon.runtime.COVERAGE.mode in ("inotify", "polling"), addon.runtime.COVERAGE.describe()
    assert addon.runtime.COVERAGE.describe().startswith("watching (")
    assert watch.refresh(project) == {"media": 1, "analysed": 0}
    assert addon.coverage_overlay.strip_coverage(project, strip)["analysed"] == 0
    size_before = addon.runtime.STATE.cache_bytes

    addon.runtime.COVERAGE.changed.clear()
    teammate_analyses(cache, models_dir, clip, range(0, 8))
    assert wait_for(addon.runtime.COVERAGE.changed), "the watcher never reported the teammate's write"

    assert watch.refresh(project) == {"media": 1, "analysed": 8}
    assert addon.runtime.STATE.cache_bytes > size_before  # the panel's cache size follows the teammate too
    data = addon.coverage_overlay.strip_coverage(project, strip)
    assert (data["frames"], data["analysed"]) == (24, 8)
    assert len(data["analysed_runs"]) == 1
    # a refresh only reads the cache: it must not wake the watcher (else every refresh triggers the next)
    time.sleep(1.0)  # let the teammate's last writes settle
    watch.refresh(project)
    assert not wait_for(addon.runtime.COVERAGE.changed, 1.5), "a coverage refresh woke the watcher"
    assert watch.tick() == watch.TICK_SECONDS  # the timer body runs (and never raises) outside timers too


def test_in_the_window_the_watcher_starts_on_its_own_thread(bpy, addon, project, watch, monkeypatch, tmp_path):
    """In Blender's window the watcher starts off the main thread (its start held the window 75-110 ms):
    "starting" until it runs, then watching; one that was stopped or moved while it started stops itself."""
    started, observers = threading.Event(), []
    real = addon.cache_watcher.make_observer

    def slow(network, poll_seconds):
        started.wait(10)  # the main thread goes on meanwhile
        observers.append(real(network, poll_seconds))
        return observers[-1]

    monkeypatch.setattr(addon.cache_watcher, "make_observer", slow)
    roots = [tmp_path / "first", tmp_path / "second"]
    for root in roots:
        root.mkdir()
    addon.runtime.COVERAGE.stop()
    def starting_threads() -> list:
        return [t for t in threading.enumerate() if t.name == "vse_faceswap coverage watcher"]

    addon.runtime.COVERAGE.watch(str(roots[0]), wait=False)
    assert (addon.runtime.COVERAGE.mode, addon.runtime.COVERAGE.describe()) == ("starting", "starting to watch")
    first = starting_threads()
    started.set()
    for thread in first:
        thread.join(10)
    assert addon.runtime.COVERAGE.mode in ("inotify", "polling") and addon.runtime.COVERAGE.watcher is not None
    started.clear()
    addon.runtime.COVERAGE.watch(str(roots[1]), wait=False)  # the project moved: a new watcher starts...
    second = starting_threads()
    addon.runtime.COVERAGE.stop()  # ...and the file is closed before it runs
    started.set()
    for thread in second:
        thread.join(10)
    assert (addon.runtime.COVERAGE.mode, addon.runtime.COVERAGE.watcher) == ("stopped", None)
    assert len(observers) == 2 and not observers[1].is_alive()  # the superseded watcher stopped itself


def test_watcher_failure_degrades_to_manual_refresh(bpy, addon, project, clip, models_dir, watch, monkeypatch):
    def broken(network, poll_seconds):
        raise OSError(28, "inotify watch limit reached")

    monkeypatch.setattr(addon.cache_watcher, "make_observer", broken)
    strip = add_movie(project, clip)
    cache = addon.paths.cache_dir(project)
    os.makedirs(cache, exist_ok=True)
    addon.runtime.COVERAGE.stop()
    watch.follow_scene(project)
    assert addon.runtime.COVERAGE.mode == "manual"
    text = addon.runtime.COVERAGE.describe()
    assert text.startswith("manual refresh: ") and "inotify watch limit" in text
    watch.tick()  # still manual, no crash, no retry storm
    assert addon.runtime.COVERAGE.mode == "manual"

    teammate_analyses(cache, models_dir, clip, range(4, 10))
    assert bpy.ops.faceswap.refresh_coverage() == {"FINISHED"}
    assert addon.coverage_overlay.strip_coverage(project, strip)["analysed"] == 6


def test_faces_turned_past_the_yaw_limit_are_left_and_shown_in_the_coverage(bpy, addon, project, portrait_paths,
                                                                            tmp_path):
    """The group photo as a 3-frame clip: one of its six people is turned three-quarters (yaw about 50-57
    degrees), past the classic swapper's 45-degree limit."""
    import cv2

    from facecache.samples import sample_image

    group = cv2.imread(str(sample_image("group", portrait_paths["grace_hopper"].parent)))
    clip = tmp_path / "group.mp4"
    writer = cv2.VideoWriter(str(clip), cv2.VideoWriter_fourcc(*"mp4v"), 25, (group.shape[1], group.shape[0]))
    for _ in range(3):
        writer.write(group)
    writer.release()
    strip = add_movie(project, clip)
    select_only(project, strip)
    project.faceswap.selector = "many"
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    summary = report(project)
    turned = summary["faces_turned_away"]
    assert turned in (3, 6) and summary["faces_swapped"] + turned == 18  # one or two faces a frame
    assert f"{turned} faces turned past the yaw limit left as they were" in addon.runtime.STATE.job.text
    data = addon.coverage_overlay.strip_coverage(project, strip)
    assert data["swapped"] == 3 and data["turned_away"] == 3 and data["turned_away_runs"]
    # with the option off, every face is swapped
    project.faceswap.limit_yaw = False
    assert bpy.ops.faceswap.update() == {"FINISHED"}
    assert report(project)["faces_swapped"] == 18 and report(project)["faces_turned_away"] == 0


def test_one_file_on_two_strips_one_deinterlaced_has_two_coverages(bpy, addon, project, clip, watch):
    """The Deinterlace option's picture of a file is another picture: swapping the strip that shows the file as
    stored leaves the deinterlaced strip's bars empty and its swap still to do, and the other way round."""
    woven = add_movie(project, clip, frame_start=1, channel=1, name="woven")
    fields = add_movie(project, clip, frame_start=1, channel=3, name="fields")
    fields.use_deinterlace = True
    for strip in (woven, fields):
        strip.frame_offset_end = strip.frame_final_duration - 6  # media frames 0..5
    select_only(project, woven)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    assert watch.refresh(project)["media"] == 2
    coverage = addon.coverage_overlay.strip_coverage
    assert (coverage(project, woven)["analysed"], coverage(project, woven)["swapped"]) == (6, 6)
    assert (coverage(project, fields)["analysed"], coverage(project, fields)["swapped"]) == (0, 0)
    assert addon.timeline.overlay_of(fields) is None
    select_only(project, fields)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    assert report(project)["written"] == 6  # its own picture, not the woven one's frames
    assert watch.refresh(project)["media"] == 2
    assert (coverage(project, fields)["analysed"], coverage(project, fields)["swapped"]) == (6, 6)
    assert addon.timeline.is_up_to_date(project, woven) and addon.timeline.is_up_to_date(project, fields)
