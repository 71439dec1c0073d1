#!/usr/bin/env python3
"""`./dev bench-blender`: the editor's loop measured where the editor feels it, in Blender (the `bpy`
5.0.1 module) through the built extension, against its one engine session.

Set-up (not timed): the extension built for this platform and installed as Blender installs it, the
default models, a 1080p clip made from a real portrait (`--frames`, default 48), one swap of the whole
strip. Then, with previews on as in the interactive UI:

  slider   a blend setting (mask blur) moved `--repeat` times with the playhead resting on a frame:
           from the property change to the overlay written (the frame is recomposited from the cache)
  step     the playhead stepped frame by frame after a blend change: each step remakes one frame
  jump     the playhead jumping to random frames (seeded) not visited yet
  second_click   a second Swap click (after a blend change) to its first progress message, in the
           warm session; `first_click_ms` is the same for the first click of a fresh session

Every preview is checked: exactly one overlay written and no model run. The last line printed is one
JSON object with the figures (milliseconds), the counts, `engine_ms_median` (the engine's own time for
those previews, from their answers: the rest is Blender, the add-on and the pipe) and the machine's load.

    python scripts/bench_blender.py [--frames 48] [--repeat 30] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from blender_demo import host_platform, load_build_addon  # noqa: E402

MODULE = "bl_ext.user_default.vse_faceswap"
GOALS = {"slider_ms_median": 30.0, "second_click_ms": 200.0}


def percentile(values: list[float], percent: float) -> float:
    ordered = sorted(values)
    rank = (len(ordered) - 1) * percent / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def figures(name: str, values: list[float]) -> dict:
    return {f"{name}_ms_median": round(statistics.median(values), 2), f"{name}_ms_p95": round(percentile(values, 95), 2),
            f"{name}_count": len(values)}


def main(argv=None) -> int:
    from facecache.bench.timing import load_average

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=48, help="frames in the 1080p benchmark clip")
    parser.add_argument("--repeat", type=int, default=30, help="slider moves and playhead steps measured")
    parser.add_argument("--jumps", type=int, default=10, help="random playhead jumps measured")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the project here (default: a temp folder)")
    args = parser.parse_args(argv)
    if args.frames < args.repeat + args.jumps + 2:
        raise SystemExit(f"--frames must be at least --repeat + --jumps + 2 ({args.repeat + args.jumps + 2})")
    work = (args.workdir or Path(tempfile.mkdtemp(prefix="vse_faceswap_bench_"))).absolute()
    work.mkdir(parents=True, exist_ok=True)
    os.environ["BLENDER_USER_RESOURCES"] = str(work / "blender_user")  # before bpy is imported
    load_start = load_average()

    say = lambda message: print(f"bench-blender: {message}", file=sys.stderr, flush=True)  # noqa: E731
    say(f"building the extension for {host_platform()} (vendored engine and wheels)")
    (archive,) = load_build_addon().build([host_platform()], work / "dist", work / "build", wheels=True, check=True)
    import bpy

    from facecache.media.sample_clip import write_sample_clip
    from facecache.models.store import ModelStore
    from facecache.samples import sample_image

    say("installing the extension and the default models")
    assert bpy.ops.extensions.package_install_files(repo="user_default", filepath=str(archive),
                                                    enable_on_install=True) == {"FINISHED"}
    addon = {name: importlib.import_module(f"{MODULE}.{name}")
             for name in ("compat", "engine_client", "jobs", "preview", "runtime", "timeline")}
    prefs = bpy.context.preferences.addons[MODULE].preferences
    prefs.models_dir = str(work / "models")
    ModelStore(work / "models").install(["default"])

    say(f"a {args.frames}-frame 1080p clip from a real portrait, swapped once")
    clip = write_sample_clip(sample_image("grace_hopper"), work / "clip.mp4", frames=args.frames, size=(1920, 1080))
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    addon["compat"].set_sequencer_scene(bpy.context, scene)
    scene.render.fps = 25
    scene.sequence_editor_create()
    bpy.ops.wm.save_as_mainfile(filepath=str(work / "bench.blend"))
    scene = bpy.context.scene
    scene.faceswap.sources.add().filepath = str(sample_image("astronaut"))
    strip = addon["compat"].top_strips(scene.sequence_editor).new_movie("clip", str(clip), 1, 1)
    strip.select = True
    session, jobs, runtime = addon["runtime"].ENGINE, addon["jobs"], addon["runtime"]

    addon["runtime"].ENGINE.stop()
    first_click_ms = click_to_first_progress(bpy, jobs)  # a fresh session: the engine starts, models load
    wait_for_job(jobs)
    addon["runtime"].PREVIEW.ui = True  # previews follow the playhead and the sliders, as in the UI
    checked, engine_ms = [], []

    def measured(action) -> float:
        runtime.STATE.last_preview = {}
        started = time.perf_counter()
        action()
        elapsed = (time.perf_counter() - started) * 1000
        preview = runtime.STATE.last_preview
        checked.append((preview.get("written"), sum(preview.get("inferences", {}).values())))
        engine_ms.append(1000 * preview.get("seconds", 0.0))  # the engine's own part of it
        return elapsed

    say(f"slider: {args.repeat} blend changes on one frame")
    scene.frame_set(2)
    slider = [measured(lambda i=i: setattr(scene.faceswap, "mask_blur", 0.2 + 0.01 * (i % 20)))
              for i in range(args.repeat)]

    say(f"step: {args.repeat} frames one by one, after a blend change")
    scene.faceswap.color_match = 0.2
    steps = [measured(lambda f=f: scene.frame_set(f)) for f in range(3, 3 + args.repeat)]

    say(f"jump: {args.jumps} random frames")
    unvisited = [f for f in range(int(strip.frame_final_start), int(strip.frame_final_end)) if not 2 <= f < 3 + args.repeat]
    jumps = [measured(lambda f=f: scene.frame_set(f)) for f in random.Random(5).sample(unvisited, args.jumps)]
    bad = [c for c in checked if c != (1, 0)]
    if bad:
        raise SystemExit(f"a preview did not write exactly one overlay without a model run: {bad[:5]}")

    say("second Swap click in the warm session")
    addon["runtime"].PREVIEW.ui = None
    starts = session.starts
    scene.faceswap.opacity = 0.9
    second_click_ms = click_to_first_progress(bpy, jobs)
    summary = wait_for_job(jobs)
    assert session.starts == starts, "the second click started another engine process"

    result = {**figures("slider", slider), **figures("step", steps), **figures("jump", jumps),
              "engine_ms_median": round(statistics.median(engine_ms), 2),
              "second_click_ms": round(second_click_ms, 2), "first_click_ms": round(first_click_ms, 2),
              "second_swap_written": summary.get("written"), "frames": args.frames, "size": "1920x1080",
              "engine_processes": session.starts, "cpus": os.cpu_count(),
              "loadavg_1min_start": load_start and load_start[0], "loadavg_1min_end": (load_average() or [None])[0]}
    result["goals"] = GOALS
    result["goals_met"] = {key: result[key] <= goal for key, goal in GOALS.items()}
    addon["runtime"].ENGINE.stop()
    print(json.dumps(result, sort_keys=True), flush=True)
    return 0


def click_to_first_progress(bpy, jobs) -> float:
    """Click Swap as the UI does (the job runs on while Blender goes on: timers never fire in the bpy
    module, so `wait_for_job` runs the job timer by hand) and time its first progress message."""
    synchronous = jobs.synchronous
    jobs.synchronous = lambda: False
    try:
        started = time.perf_counter()
        assert bpy.ops.faceswap.swap() == {"FINISHED"}
    finally:
        jobs.synchronous = synchronous
    job = jobs.runtime.JOB.job
    while True:
        message = job.messages.get(timeout=600)
        job._apply(message)
        if message.get("type") in ("progress", "result", "error"):
            return (time.perf_counter() - started) * 1000


def wait_for_job(jobs) -> dict:
    import bpy

    while jobs._tick() is not None:
        time.sleep(0.02)
    if jobs.runtime.STATE.job.text.startswith("error"):
        raise SystemExit(f"the swap failed: {jobs.runtime.STATE.job.text}")
    return json.loads(bpy.context.scene.faceswap.last_report or "{}")


if __name__ == "__main__":
    sys.exit(main())
