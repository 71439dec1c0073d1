"""`python -m facecache.worker`: the engine behind a JSON-lines pipe (the Blender add-on's process boundary).

The caller writes ONE job as a JSON object on a line of stdin; the worker answers with JSON lines on
stdout and exits:

    {"type": "progress", "done": 3, "total": 24, "label": "clip.mp4"}
    {"type": "result", "summary": {...}}                  the job's summary (last line on success)
    {"type": "error", "message": "...", "kind": "ModelMissing"}   (last line on failure; exit code 1)

A job: {"kind": "analyze" | "swap" | "update" | "coverage" | "install_models" | "import_models" | "cache_…",
        "settings": {...},   facecache.pipeline.Settings as a JSON object (unknown names are an error)
        "items": [{"media": path, "start": A, "stop": B, "out": dir}],   (media frames A..B-1)
        "models": [names] (install_models), "folder": path (import_models)}

`update` is `swap` over the items the caller gathered from its timeline. Summaries carry the CLI's
`--json` keys: frames, written, skipped, inferences by stage (detect, landmark, embed, swap), seconds.
Everything else the worker would print (warnings, logs) goes to stderr, so stdout stays parseable.
`run_job(job, emit)` is the same thing in-process, for tests and synchronous callers.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from facecache.errors import FaceCacheError
from facecache.jobs.run_summary import describe_run
from facecache.models.store import ModelStore
from facecache.pipeline import STAGES, Settings, build_analyzer, build_pipeline, open_cache

Emit = Callable[[dict], None]
KINDS = ("analyze", "swap", "update", "coverage", "install_models", "import_models", "cache_stats", "cache_prune",
         "cache_clear")


def run_job(job: dict, emit: Emit, cancel: "Cancel | None" = None) -> dict:
    """Run one job, emitting progress messages; returns the summary (raises on failure)."""
    cancel = cancel or Cancel()
    kind = job.get("kind")
    if kind not in KINDS:
        raise FaceCacheError(f"unknown job kind {kind!r}: one of {', '.join(KINDS)}")
    settings = Settings.from_dict(job.get("settings", {}))
    items = job.get("items", [])
    start = time.perf_counter()
    if kind == "install_models":
        summary = _install_models(settings, job.get("models", ["default"]), emit)
    elif kind == "import_models":
        summary = _import_models(settings, job.get("folder"))
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


def _analyze(settings: Settings, items: list[dict], emit: Emit) -> dict:
    analyzer = build_analyzer(settings)
    total = sum(len(_range(item)) for item in items)
    done = faces = frames = 0
    for item in items:
        media = Path(item["media"])
        analysed = analyzer.analyze_media(media, _range(item), progress=_progress(emit, media.name, done, total))
        frames += len(analysed)
        faces += sum(len(f.record.faces) for f in analysed)
        done += len(_range(item))
    return {"frames": frames, "faces": faces, "written": 0, "skipped": 0,
            "inferences": analyzer.inferences.as_dict(STAGES),
            "analysis_cache": analyzer.stats.as_dict(), "analysed": _analysed(analyzer, items)}


def _swap(settings: Settings, items: list[dict], emit: Emit, cancel: "Cancel") -> dict:
    pipeline = build_pipeline(settings)
    job = pipeline.swap_job()
    total = sum(len(_range(item)) for item in items)
    done = 0
    cancel.graceful = True
    for item in items:
        media = Path(item["media"])
        if cancel.event.is_set():
            break
        job.run(media, Path(item["out"]), _range(item), progress=_progress(emit, media.name, done, total),
                cancel=cancel.event)
        done += len(_range(item))
    targets = ", ".join(sorted({Path(item["media"]).name for item in items}))
    return {**pipeline.summary(job.report, targets), "analysed": _analysed(pipeline.analyzer, items)}


def _analysed(analyzer, items: list[dict]) -> dict:
    """{media path: sorted analysed media frames} over the items' ranges, from the cache alone."""
    from facecache.coverage import analysed_frames

    media: dict[str, set] = {}
    for item in items:
        media.setdefault(str(item["media"]), set()).update(analysed_frames(analyzer, item["media"], _range(item)))
    return {path: sorted(frames) for path, frames in media.items()}


def _coverage(settings: Settings, items: list[dict]) -> dict:
    analyzer = build_analyzer(settings)
    analysed = _analysed(analyzer, items)
    return {"frames": sum(len(v) for v in analysed.values()), "written": 0, "skipped": 0,
            "inferences": analyzer.inferences.as_dict(STAGES),
            "analysed": analysed, "cache_bytes": analyzer.cache.total_bytes()}


def _cache_job(kind: str, settings: Settings) -> dict:
    cache = open_cache(settings)
    summary = {"frames": 0, "written": 0, "skipped": 0, "inferences": {}}
    if kind == "cache_prune":
        summary["prune"] = cache.prune().as_dict()
    elif kind == "cache_clear":
        cache.clear()
    summary["stats"] = cache.stats().as_dict()
    return summary


def _install_models(settings: Settings, models: list[str], emit: Emit) -> dict:
    store = ModelStore(settings.models_dir)
    results = store.install(models, progress=lambda *args: emit({"type": "progress", "done": 0, "total": 0,
                                                                  "label": " ".join(str(a) for a in args)}))
    return {"frames": 0, "written": 0, "skipped": 0, "inferences": {},
            "models_dir": str(store.root), "installed": [str(getattr(r, "name", r)) for r in results]}


def _import_models(settings: Settings, folder: str | None) -> dict:
    if not folder:
        raise FaceCacheError("no folder given: choose FaceFusion's models folder (or its install folder)")
    report = ModelStore(settings.models_dir).import_folder(folder)
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
