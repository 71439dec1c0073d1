"""`python -m facecache.worker`: the engine behind a JSON-lines pipe (the Blender add-on's process boundary).

The caller writes ONE job as a JSON object on a line of stdin; the worker answers with JSON lines on
stdout and exits:

    {"type": "progress", "done": 3, "total": 24, "label": "clip.mp4"}
    {"type": "result", "summary": {...}}                  the job's summary (last line on success)
    {"type": "error", "message": "...", "kind": "ModelMissing"}   (last line on failure; exit code 1)

A job: {"kind": "analyze" | "swap" | "update" | "coverage" | "install_models" | "import_models",
        "settings": {"cache_dir", "max_bytes", "models_dir", "providers", "detector", "swapper",
                     "selector", "sources": [paths], "composite": {...}},
        "items": [{"media": path, "start": A, "stop": B, "out": dir}]}   (media frames A..B-1)

`update` is `swap` over the items the caller gathered from its timeline. Summaries carry the CLI's
`--json` keys: frames, written, skipped, inferences by stage (detect, landmark, embed, swap), seconds.
Everything else the worker would print (warnings, logs) goes to stderr, so stdout stays parseable.
`run_job(job, emit)` is the same thing in-process, for tests and synchronous callers.
"""

from __future__ import annotations

import inspect
import json
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from facecache.errors import FaceCacheError
from facecache.jobs.run_summary import describe_run, no_face_warning

Emit = Callable[[dict], None]
KINDS = ("analyze", "swap", "update", "coverage", "install_models", "import_models", "cache_stats", "cache_prune",
         "cache_clear")


def run_job(job: dict, emit: Emit, cancel: "Cancel | None" = None) -> dict:
    """Run one job, emitting progress messages; returns the summary (raises on failure)."""
    cancel = cancel or Cancel()
    kind = job.get("kind")
    if kind not in KINDS:
        raise FaceCacheError(f"unknown job kind {kind!r}: one of {', '.join(KINDS)}")
    settings = job.get("settings", {})
    items = job.get("items", [])
    start = time.perf_counter()
    if kind == "install_models":
        summary = _install_models(settings, emit)
    elif kind == "import_models":
        summary = _import_models(settings)
    elif kind.startswith("cache_"):
        summary = _cache_job(kind, settings)
    elif kind == "coverage":
        summary = _coverage(settings, items)
    elif kind == "analyze":
        summary = _analyze(settings, items, emit)
    else:
        summary = _swap(settings, items, emit, cancel)
    summary["kind"] = kind
    summary["seconds"] = round(time.perf_counter() - start, 3)
    summary["message"] = describe_run(summary)  # the sentence the add-on shows, in the CLI's words
    return summary


def _cache(settings: dict):
    from facecache.store.cache import DEFAULT_MAX_BYTES, FaceCache

    return FaceCache(Path(settings["cache_dir"]), max_bytes=int(settings.get("max_bytes") or DEFAULT_MAX_BYTES))


def _models(settings: dict):
    from facecache.models.store import ModelStore

    return ModelStore(settings.get("models_dir") or None)


def _analyzer(settings: dict):
    from facecache.analysis.analyzer import FaceAnalyzer
    from facecache.analysis.factory import AnalysisSettings, build_model_set
    from facecache.models.runtime import SessionFactory

    sessions = SessionFactory(settings.get("providers", "auto"))
    analysis = AnalysisSettings(detector=settings.get("detector", "mtcnn"),
                                landmarker=settings.get("landmarker", "auto"),
                                recognizer=settings.get("recognizer", "auto"))
    return FaceAnalyzer(_cache(settings), build_model_set(_models(settings), sessions, analysis)), sessions


def _range(item: dict) -> range:
    return range(int(item["start"]), int(item["stop"]))


def _progress(emit: Emit, label: str, offset: int, total: int):
    """A progress callback for the engine: `(done, total)` or one object with `.done` (a JobProgress)."""
    def report(done, _total=None) -> None:
        done = getattr(done, "done", done)
        emit({"type": "progress", "done": offset + int(done), "total": total, "label": label})
    return report


class Cancel:
    """A cancel request (SIGTERM from the add-on's Cancel button). A swap job stops cleanly at the next
    frame, keeping finished work; other stages (or a second request) stop the process at once."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.graceful = False  # True while a job that honours `event` runs

    def request(self, _signum=None, _frame=None) -> None:
        if self.event.is_set() or not self.graceful:
            raise SystemExit(143)
        self.event.set()


def _run_kwargs(run, cancel: Cancel) -> dict:
    if "cancel" in inspect.signature(run).parameters:
        cancel.graceful = True
        return {"cancel": cancel.event}
    return {}


def _analyze(settings: dict, items: list[dict], emit: Emit) -> dict:
    analyzer, _ = _analyzer(settings)
    total = sum(len(_range(item)) for item in items)
    done = faces = frames = 0
    for item in items:
        media = Path(item["media"])
        analysed = analyzer.analyze_media(media, _range(item), progress=_progress(emit, media.name, done, total))
        frames += len(analysed)
        faces += sum(len(f.record.faces) for f in analysed)
        done += len(_range(item))
    return {"frames": frames, "faces": faces, "written": 0, "skipped": 0,
            "inferences": analyzer.inferences.as_dict(("detect", "landmark", "embed", "swap")),
            "analysis_cache": analyzer.stats.as_dict(), "analysed": _analysed(analyzer, items)}


def _swap(settings: dict, items: list[dict], emit: Emit, cancel: "Cancel") -> dict:
    from facecache.analysis.selection import Selector
    from facecache.jobs.swap_job import SwapJob
    from facecache.swap.composite import CompositeParams
    from facecache.swap.factory import build_swapper
    from facecache.swap.sources import SourceSet

    sources_paths = [Path(p) for p in settings.get("sources", []) if p]
    if not sources_paths:
        raise FaceCacheError("no source face set: choose a source face image in the Face Swap panel")
    analyzer, sessions = _analyzer(settings)
    sources = SourceSet.load(sources_paths, analyzer)
    position = settings.get("position")
    selector = Selector(settings.get("selector", "one"), tuple(position) if position else None)
    composite = CompositeParams(**settings.get("composite", {}))
    swapper = build_swapper(settings.get("swapper", "classic"), sources, _models(settings), sessions)
    job = SwapJob(analyzer, swapper, sources, selector, composite, "overlay")
    total = sum(len(_range(item)) for item in items)
    done = 0
    for item in items:
        media = Path(item["media"])
        if cancel.event.is_set():
            break
        job.run(media, Path(item["out"]), _range(item), progress=_progress(emit, media.name, done, total),
                **_run_kwargs(job.run, cancel))
        done += len(_range(item))
    summary = {"cancelled": cancel.event.is_set(), **job.report.as_dict(),
               "inferences": analyzer.inferences.as_dict(("detect", "landmark", "embed", "swap")),
               "analysis_cache": analyzer.stats.as_dict(), "analysed": _analysed(analyzer, items)}
    warning = no_face_warning(summary, ", ".join(sorted({Path(item["media"]).name for item in items})))
    if warning:
        summary["warning"] = warning
    return summary


def _analysed(analyzer, items: list[dict]) -> dict:
    """{media path: sorted analysed media frames} over the items' ranges, from the cache alone."""
    from facecache.coverage import analysed_frames

    media: dict[str, set] = {}
    for item in items:
        media.setdefault(str(item["media"]), set()).update(analysed_frames(analyzer, item["media"], _range(item)))
    return {path: sorted(frames) for path, frames in media.items()}


def _coverage(settings: dict, items: list[dict]) -> dict:
    analyzer, _ = _analyzer(settings)
    analysed = _analysed(analyzer, items)
    return {"frames": sum(len(v) for v in analysed.values()), "written": 0, "skipped": 0,
            "inferences": analyzer.inferences.as_dict(("detect", "landmark", "embed", "swap")),
            "analysed": analysed, "cache_bytes": analyzer.cache.total_bytes()}


def _cache_job(kind: str, settings: dict) -> dict:
    cache = _cache(settings)
    summary = {"frames": 0, "written": 0, "skipped": 0, "inferences": {}}
    if kind == "cache_prune":
        summary["prune"] = cache.prune().as_dict()
    elif kind == "cache_clear":
        cache.clear()
    summary["stats"] = cache.stats().as_dict()
    return summary


def _install_models(settings: dict, emit: Emit) -> dict:
    store = _models(settings)
    results = store.install(settings.get("models", ["default"]),
                            progress=lambda *args: emit({"type": "progress", "done": 0, "total": 0,
                                                         "label": " ".join(str(a) for a in args)}))
    return {"frames": 0, "written": 0, "skipped": 0, "inferences": {},
            "models_dir": str(store.root), "installed": [str(getattr(r, "name", r)) for r in results]}


def _import_models(settings: dict) -> dict:
    report = _models(settings).import_folder(settings["folder"])
    return {"frames": 0, "written": 0, "skipped": 0, "inferences": {}, "import": report.as_dict()}


def main(stdin=None, stdout=None) -> int:
    stdin = stdin or sys.stdin
    real_stdout = stdout or sys.stdout
    saved = sys.stdout
    sys.stdout = sys.stderr  # stray prints must not corrupt the protocol

    def emit(message: dict) -> None:
        real_stdout.write(json.dumps(message, default=str) + "\n")
        real_stdout.flush()

    cancel = Cancel()
    signal_set = False
    try:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, cancel.request)
            signal_set = True
        job = json.loads(stdin.readline() or "{}")
        emit({"type": "result", "summary": run_job(job, emit, cancel)})
        return 0
    except FaceCacheError as exc:
        emit({"type": "error", "message": str(exc), "kind": type(exc).__name__})
    except Exception as exc:  # noqa: BLE001 - the caller shows the message; the traceback goes to stderr
        import traceback

        traceback.print_exc()
        emit({"type": "error", "message": f"{type(exc).__name__}: {exc}", "kind": type(exc).__name__})
    finally:
        sys.stdout = saved
        if signal_set:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    return 1


if __name__ == "__main__":
    sys.exit(main())
