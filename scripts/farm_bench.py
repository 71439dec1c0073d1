#!/usr/bin/env python3
"""Render-farm benchmark: what chunking one demo timeline costs and gains, on the path a farm takes.

Builds the extension and installs it into the Blender Python module (as ./dev demo does), makes a
demo timeline (one strip of a clip made from a real photograph), then measures, each cold run on an
empty cache:
  - one background run of the whole timeline (`blender -b … faceswap.update()`);
  - the OpenJD job bundle farm/openjd/faceswap run by `openjd run`: one runner doing every chunk, and
    two runners at once taking every other chunk, first with the engine's default threads (each
    runner sees every core), then with each runner pinned to its own core (one ONNX Runtime thread);
  - the per-chunk overhead, part by part: Blender start, extension load (the user preferences),
    opening the .blend, engine start (its process, imports, models and the source face), against the
    chunk's work, and the chunk size that keeps the overhead under 10 %.
There is no Blender executable here: scripts/bpy_blender.py stands in for it (the bpy module with
Blender's command-line contract), so "Blender start" is the module's import.

    python scripts/farm_bench.py [--workdir DIR] [--frames 128] [--size 640x360] [--chunk 64] [--rounds 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import blender_demo  # noqa: E402 - host_platform, load_build_addon

BUNDLE = ROOT / "farm" / "openjd" / "faceswap" / "template.yaml"
SEGMENT = 64  # frames per cache segment (claims are per segment): chunks are best a multiple of it
OVERHEAD_SHARE = 0.10


def parse_size(text: str) -> tuple[int, int]:
    width, _, height = text.partition("x")
    return int(width), int(height)


class Timed:
    """Wall time, and the CPU time of this process's descendants (Blender, the engine, openjd), sampled
    with psutil every SAMPLE_S: a child's last moments before it exits may be missed, never counted twice.
    (The kernel's RUSAGE_CHILDREN would miss the engine processes Blender does not wait for.)"""

    SAMPLE_S = 0.2

    def __enter__(self):
        self.start = time.perf_counter()
        self._seen: dict[tuple, float] = {}
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.start
        self._stop.set()
        self._sampler.join()
        self.cpu = sum(self._seen.values())

    def _sample(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(self.SAMPLE_S):
            for child in me.children(recursive=True):
                try:
                    times = child.cpu_times()
                    self._seen[(child.pid, child.create_time())] = times.user + times.system
                except psutil.Error:
                    continue


def run(command: list[str], env: dict | None = None, cores: set[int] | None = None) -> subprocess.Popen:
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **(env or {})},
                            preexec_fn=(lambda: os.sched_setaffinity(0, cores)) if cores else None)


def finish(process: subprocess.Popen, what: str) -> str:
    out = process.communicate()[0]
    if process.returncode != 0:
        raise SystemExit(f"{what} failed (exit {process.returncode}):\n{out[-3000:]}")
    return out


def median_wall(command: list[str], repeat: int = 3, env: dict | None = None) -> float:
    walls = []
    for _ in range(repeat):
        with Timed() as timed:
            finish(run(command, env), " ".join(command[:3]))
        walls.append(timed.wall)
    return statistics.median(walls)


def install(work: Path):
    """The built extension, installed and enabled in the bpy module's user folder (saved preferences,
    so each Blender the farm starts has it), with the default models."""
    from facecache.models.store import ModelStore

    build = blender_demo.load_build_addon()
    (archive,) = build.build([blender_demo.host_platform()], ROOT / "dist", ROOT / "build" / "addon", wheels=True,
                             check=True)
    import bpy

    assert bpy.ops.extensions.package_install_files(repo="user_default", filepath=str(archive),
                                                    enable_on_install=True) == {"FINISHED"}
    ModelStore(work / "models").install(["default"])
    bpy.context.preferences.addons["bl_ext.user_default.vse_faceswap"].preferences.models_dir = str(work / "models")
    bpy.ops.wm.save_userpref()
    return bpy


def demo_project(bpy, work: Path, frames: int, size: tuple[int, int]) -> Path:
    """One movie strip of a clip panning over a real portrait, marked for swapping (Swap on frame 1,
    in the project's own cache, which the farm runs never use)."""
    import importlib

    from facecache.media.sample_clip import write_sample_clip
    from facecache.samples import sample_image

    compat = importlib.import_module("bl_ext.user_default.vse_faceswap.compat")
    project = work / "project"
    project.mkdir(parents=True, exist_ok=True)
    clip = write_sample_clip(sample_image("grace_hopper"), project / "plate.mp4", frames=frames, size=size)
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    compat.set_sequencer_scene(bpy.context, scene)
    scene.sequence_editor_create()
    scene.faceswap.sources.add().filepath = str(sample_image("astronaut"))
    blend = project / "timeline.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    scene = bpy.context.scene
    strip = compat.top_strips(scene.sequence_editor).new_movie("plate", str(clip), 1, 1)
    strip.select = True
    scene.frame_start, scene.frame_end = 1, frames
    assert bpy.ops.faceswap.swap(frame_start=1, frame_end=1) == {"FINISHED"}
    bpy.ops.wm.save_mainfile()
    return blend


def recommended_chunk(overhead_s: float, per_frame_s: float) -> int:
    """The smallest multiple of a cache segment (64 frames) whose per-chunk overhead is at most
    OVERHEAD_SHARE of the chunk's time. A multiple of the segment also keeps two runners' chunks off
    each other's segments when the timeline's frames line up with the clip's (a claim is per segment)."""
    needed = overhead_s * (1 - OVERHEAD_SHARE) / OVERHEAD_SHARE / per_frame_s
    return max(SEGMENT, SEGMENT * math.ceil(needed / SEGMENT))


def frames_made(cache: Path) -> int:
    return len(list((cache / "swaps").glob("*/*/*.png")))


def main(argv=None) -> int:
    from facecache.bench.timing import load_average

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=ROOT / "build" / "farm_bench")
    parser.add_argument("--frames", type=int, default=128, help="timeline frames (default 128)")
    parser.add_argument("--size", type=parse_size, default=(640, 360), help="clip size WxH (default 640x360)")
    parser.add_argument("--chunk", type=int, default=SEGMENT, help=f"frames per chunk (default {SEGMENT})")
    parser.add_argument("--rounds", type=int, default=2, help="cold runs of each kind, in alternating order (default 2)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    work = args.workdir.absolute()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    os.environ["BLENDER_USER_RESOURCES"] = str(work / "blender_user")  # before bpy is imported
    openjd = shutil.which("openjd", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    if openjd is None:
        raise SystemExit("openjd is missing: pip install -e '.[farm]' (./dev test installs it)")

    bpy = install(work)
    blend = demo_project(bpy, work, args.frames, args.size)
    exe = work / "bin" / "blender"
    exe.parent.mkdir()
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{ROOT / "scripts" / "bpy_blender.py"}" "$@"\n')
    exe.chmod(0o755)
    cores = sorted(os.sched_getaffinity(0))
    conditions = {"cores": len(cores), "load_average_before": load_average()}

    def blender(*extra: str) -> list[str]:
        return [str(exe), "-b", str(blend), "--python-exit-code", "1", *extra]

    def update(first: int | None = None, last: int | None = None) -> list[str]:
        frames = f"frame_start={first}, frame_end={last}" if first is not None else ""
        return blender("--python-expr", f"import bpy; bpy.ops.faceswap.update({frames})")

    def cache_env(name: str) -> dict:
        return {"FACESWAP_CACHE_DIR": str(work / "caches" / name)}

    chunks = [f"{start}-{min(start + args.chunk - 1, args.frames)}" for start in range(1, args.frames + 1, args.chunk)]
    halves = [chunks[0::2], chunks[1::2]]  # as a farm hands out chunks: each runner takes the next one

    def single(name: str) -> Timed:
        with Timed() as timed:
            finish(run(update(), cache_env(name)), "the single background run")
        return timed

    def runners(shares: list[list[str]], pinned: bool):
        def measure(name: str) -> Timed:
            cache = work / "caches" / name
            with Timed() as timed:
                started = [run([openjd, "run", str(BUNDLE), "--step", "FaceSwap", "-p", f"BlendFile={blend}",
                                "-p", f"Frames=1-{args.frames}", "-p", f"ChunkSize={args.chunk}",
                                "-p", f"CacheDir={cache}", "-p", f"BlenderExecutable={exe}",
                                "--tasks", json.dumps([{"Frames": c} for c in share])],
                               cores={cores[i % len(cores)]} if pinned else None)
                           for i, share in enumerate(shares)]
                for process in started:
                    finish(process, f"openjd run ({name})")
            return timed
        return measure

    configs = {"single_run": single, "openjd_one_runner": runners([chunks], False),
               "openjd_two_runners": runners(halves, False),
               "openjd_one_runner_one_core": runners([chunks], True),
               "openjd_two_runners_one_core_each": runners(halves, True)}
    # Cold runs, each on an empty cache, in rounds of alternating order (the machine's load drifts).
    measured: dict[str, list[Timed]] = {name: [] for name in configs}
    for round_ in range(args.rounds):
        for name in (list(configs) if round_ % 2 == 0 else reversed(list(configs))):
            measured[name].append(configs[name](f"{name}-{round_}"))
            made = frames_made(work / "caches" / f"{name}-{round_}")
            assert made == args.frames, f"{name}: {made} of {args.frames} frames made"
    wall = {name: statistics.mean(t.wall for t in runs) for name, runs in measured.items()}
    cpu = {name: statistics.mean(t.cpu for t in runs) for name, runs in measured.items()}

    # Per-chunk overhead, part by part (medians of three), on a warm cache where the work is nothing.
    blender_start = median_wall([sys.executable, "-c", "import bpy"])
    with_prefs = median_wall([str(exe), "-b", "--python-expr", "pass"])
    with_file = median_wall(blender("--python-expr", "pass"))
    warm_frame = median_wall(update(1, 1), env=cache_env("single_run-0"))  # frame 1 is up to date there
    overhead = {"blender_start_s": blender_start, "extension_load_s": with_prefs - blender_start,
                "file_open_s": with_file - with_prefs, "engine_start_s": warm_frame - with_file}
    per_frame = (wall["single_run"] - warm_frame) / args.frames

    def speed(name: str, baseline: str) -> float:
        return round(wall[baseline] / wall[name], 2)  # frames per second, relative

    figures = {
        "frames": args.frames, "size": f"{args.size[0]}x{args.size[1]}", "chunk": args.chunk, "chunks": len(chunks),
        "rounds": args.rounds,
        **{f"{name}_s": round(wall[name], 2) for name in configs},
        **{f"{name}_cpu_utilisation": round(cpu[name] / (wall[name] * len(cores)), 2) for name in configs},
        **{f"{name}_cpu_s_per_frame": round(cpu[name] / args.frames, 3) for name in configs},
        "two_vs_one_runner": speed("openjd_two_runners", "openjd_one_runner"),
        "two_one_core_each_vs_one_runner": speed("openjd_two_runners_one_core_each", "openjd_one_runner"),
        "two_vs_one_runner_per_core": speed("openjd_two_runners_one_core_each", "openjd_one_runner_one_core"),
        "per_chunk_overhead_s": round(warm_frame, 2),
        **{k: round(v, 2) for k, v in overhead.items()},
        "work_per_frame_s": round(per_frame, 3),
        "chunk_overhead_share": round(warm_frame / (warm_frame + args.chunk * per_frame), 3),
        "recommended_chunk": recommended_chunk(warm_frame, per_frame),
        "conditions": {**conditions, "load_average_after": load_average()},
    }
    if args.json:
        print(json.dumps(figures, sort_keys=True))
    else:
        for key, value in figures.items():
            print(f"{key:<36} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
