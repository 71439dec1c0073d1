"""Running engine jobs from Blender: one at a time, as requests to the session's engine process;
asynchronous in the UI (a `bpy.app.timers` callback drains the engine's messages), synchronous in
background mode and in the bpy module. The job in flight is `runtime.JOB`; its progress and status are
runtime state (`runtime.STATE.job`), never saved in the .blend.

A job's answer flows one way: the coverage it brings goes into `runtime.STATE`, and the rest, its report, is
handed on as an `Ended` to the job's `on_done` and, when it ran synchronously, returned by `start`. A copy
of the report is kept in `scene.faceswap.last_report` (`show_report`) for those outside the add-on that
read it (farm scripts, the demo, the tests); the add-on's code never parses it back."""

from __future__ import annotations

import json
from dataclasses import dataclass

import bpy
from bpy.app.handlers import persistent

from . import engine_client, paths, progress_lines, redraw, runtime

protocol = engine_client.engine_module("protocol")  # the engine's request and answer keys
# How often a running job's progress is taken from the engine and the sidebar redrawn: the UI shows it moving
# at least every 100 ms (the GUI suite measures the gaps between redraws while a job runs).
PROGRESS_SECONDS = 0.05
# Jobs the preferences start and draw while they run (the GPU runtime's, the remote cache support's), with their
# progress and Cancel.
GPU_JOBS = ("gpu_install", "gpu_uninstall")
REMOTE_SUPPORT_JOBS = ("remote_support_install", "remote_support_uninstall")
RUNTIME_JOBS = GPU_JOBS + REMOTE_SUPPORT_JOBS
# Jobs that follow up the one before them (the shot's movie for the preview after a Swap or an Update): when one
# ends, the status line and the scene's last report stay those of the job it follows; only a failure is said.
FOLLOW_UPS = ("preview_movie",)

MODELS_HINT = ("face models are not installed: open Edit > Preferences > Add-ons > VSE Face Swap and click "
               "Install Default Models (or import a FaceFusion models folder)")


@dataclass
class Ended:
    """How a job ended: its request to the engine (`request.error` says why, when it failed) and its report,
    the engine's summary less the coverage it brought (that went into `runtime.STATE`), with what an `on_done`
    added (e.g. the re-sync of the swapped strips); None when the job failed."""
    request: engine_client.Request
    report: dict | None


def synchronous() -> bool:
    """Background mode (blender -b) and the bpy module: timers never run there."""
    return bool(bpy.app.background)


def running() -> bool:
    job = runtime.JOB.job
    return job is not None and not job.finished


def engine_settings(scene) -> dict:
    """The engine's settings for a job of `scene`: the scene's part, and the part the preferences and the
    cache's location give (props.FROM_PREFERENCES)."""
    chosen = paths.prefs()
    remote, read_only = paths.remote_cache()
    return {**scene.faceswap.engine_settings(), protocol.CACHE_DIR: paths.cache_dir(scene),
            protocol.MAX_BYTES: paths.max_bytes(), protocol.MODELS_DIR: paths.models_dir(),
            protocol.PROVIDERS: chosen.execution_provider if chosen else "auto",
            protocol.REMOTE_CACHE: remote or None, protocol.REMOTE_READ_ONLY: read_only}


def friendly(message: str, kind: str = "") -> str:
    if kind == "ModelMissing" or "not installed" in message:
        return f"{MODELS_HINT} ({message})"
    return message


def start(scene, kind: str, items: list[dict], on_done=None, extra: dict | None = None) -> Ended | None:
    """Start a job (`extra`: more fields of the request, e.g. the folder to import); `on_done(scene, ended)`
    is called when it ends. Returns how it ended when it ran synchronously, else None (it runs on; a timer
    applies its answers). Raises RuntimeError when busy."""
    if running():
        raise RuntimeError("a face swap job is already running: wait for it or press Cancel")
    status = runtime.STATE.job
    runtime.JOB.line_before = status.text if kind in FOLLOW_UPS else None
    status.running, status.kind, status.progress, status.text = True, kind, 0.0, f"{kind}: starting"
    status.done, status.total = 0, 0
    status.media = frozenset(item[protocol.MEDIA] for item in items if protocol.MEDIA in item)
    runtime.JOB.scene, runtime.JOB.on_done, runtime.JOB.items = scene.name, on_done, items
    runtime.ENGINE.configure(paths.engine_environment())
    job = runtime.ENGINE.request({protocol.KIND: kind, protocol.SETTINGS: engine_settings(scene),
                                  protocol.ITEMS: items, **(extra or {})})
    runtime.JOB.job = job
    if not synchronous():
        bpy.app.timers.register(_tick, first_interval=PROGRESS_SECONDS)
        return None
    lines = progress_lines.ProgressLines(kind)
    job.wait(lines, heartbeat=progress_lines.HEARTBEAT_SECONDS)
    ended = _finish(job)
    if ended.report is not None:
        lines.finished(describe(ended.report))
    return ended


def _scene():
    return bpy.data.scenes.get(runtime.JOB.scene or "")


def _tick():
    job = runtime.JOB.job
    if job is None:
        return None
    finished = job.poll()
    if not finished:
        status = runtime.STATE.job
        status.progress, status.done, status.total = job.fraction, job.done, job.total
        status.text = f"{job.job[protocol.KIND]}: {job.label} {job.done}/{job.total}"
        redraw.redraw(("UI",))  # the progress bar only: the strips change when the job is done
        if job.job[protocol.KIND] in RUNTIME_JOBS:
            redraw.redraw(("WINDOW",), "PREFERENCES")
        return PROGRESS_SECONDS
    _finish(job)
    return None


def _finish(job) -> Ended:
    """Apply the answer of the job that ended and hand its report on (to `on_done`, then the scene's display)."""
    scene = _scene()
    on_done, items, line_before = runtime.JOB.on_done, runtime.JOB.items, runtime.JOB.line_before
    runtime.JOB.ended()
    status = runtime.STATE.job
    status.running, status.progress = False, 1.0 if job.result is not None else 0.0
    ended = Ended(job, None if job.result is None else _take_coverage(job.result, items))
    if ended.report is not None and line_before is not None:
        status.text = line_before
    elif ended.report is not None:
        cancelled = "cancelled; finished frames kept: " if ended.report.get(protocol.CANCELLED) else ""
        status.text = cancelled + describe(ended.report)
    elif job.error_kind == protocol.CANCELLED_KIND:
        status.text = job.error
    else:
        status.text = f"error: {friendly(job.error or '', job.error_kind)}"
    if scene is not None and on_done is not None:
        on_done(scene, ended)
    if scene is not None and ended.report is not None and line_before is None:
        show_report(scene, ended.report)
    redraw.redraw()
    return ended


def _take_coverage(summary: dict, items: list[dict]) -> dict:
    """Put the coverage a job's summary brings (and a GPU fallback) into runtime.STATE; returns the rest of
    it, the job's report."""
    report = dict(summary)
    asked = runtime.asked_frames(items)
    for kind in protocol.COVERAGE_KINDS:
        if kind in report:
            runtime.STATE.replace(kind, report.pop(kind) or {}, asked)
    runtime.STATE.add(protocol.TURNED_AWAY, report.pop(protocol.TURNED_AWAY, {}) or {})
    if report.get(protocol.GPU_WARNING):
        runtime.STATE.gpu_notice = report[protocol.GPU_WARNING]
    return report


def show_report(scene, report: dict) -> None:
    """Keep a copy of a job's report on the scene, for farm scripts, the demo and the tests; the add-on's code
    never reads it back."""
    scene.faceswap.last_report = json.dumps(report, sort_keys=True)


def describe(summary: dict) -> str:
    """The engine's own sentence for the job (the CLI's words), and its warnings if it has any."""
    said = summary.get(protocol.MESSAGE) or f"{summary.get(protocol.FRAMES, 0)} frames"
    text = f"{summary.get(protocol.KIND, 'job')}: {said}"
    return "".join([text] + [f". Warning: {warning}" for warning in warnings(summary)])


def warnings(summary: dict) -> list[str]:
    """What went wrong without stopping the job: no face swapped, the remote cache dropped."""
    return [summary[key] for key in (protocol.WARNING, protocol.CACHE_WARNING) if summary.get(key)]


def cancel() -> bool:
    job = runtime.JOB.job
    if job is None or job.finished:
        return False
    job.cancel()
    return True


def reset() -> None:
    """Forget the job of this session (a new file was opened, or the add-on is turned off)."""
    job = runtime.JOB.job
    if job is not None:
        job.cancel()
    runtime.JOB.ended()
    runtime.JOB.scene = ""
    runtime.STATE.job = runtime.JobStatus()


@persistent
def on_load_post(*_args):
    """Another file: a job of the previous one is cancelled (its frames are kept), and nothing known
    about the previous file's media is shown."""
    reset()
    runtime.STATE.forget()


def register():
    bpy.app.handlers.load_post.append(on_load_post)


def unregister():
    reset()
    if on_load_post in bpy.app.handlers.load_post:
        bpy.app.handlers.load_post.remove(on_load_post)
