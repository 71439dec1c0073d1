"""Running engine jobs from Blender: one at a time, as requests to the session's engine process;
asynchronous in the UI (a `bpy.app.timers` callback drains the engine's messages), synchronous in
background mode and in the bpy module. The job's progress and status are runtime state
(`runtime.STATE.job`), never saved in the .blend."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Callable

import bpy
from bpy.app.handlers import persistent

from . import engine_client, paths, progress_lines, runtime



@dataclass
class JobInFlight:
    """The one job this Blender session runs: its request to the engine session, the scene that asked,
    what to call when it ends, and the items it covers (the frames its answer speaks for)."""
    job: "engine_client.Request | None" = None
    scene: str = ""
    on_done: Callable | None = None
    items: list[dict] = field(default_factory=list)

    def ended(self) -> None:
        """The job ended (its scene stays: the answer is applied to it)."""
        self.job, self.on_done, self.items = None, None, []


_state = JobInFlight()
# How often a running job's progress is taken from the engine and the sidebar redrawn: the UI shows it moving
# at least every 100 ms (the GUI suite measures the gaps between redraws while a job runs).
PROGRESS_SECONDS = 0.05
# Jobs the preferences start and draw while they run (the GPU runtime's), with their progress and Cancel.
RUNTIME_JOBS = ("gpu_install", "gpu_uninstall")

MODELS_DIR_ENV = "FACECACHE_MODELS"  # the engine's own names for them (facecache.locations)
GPU_RUNTIME_DIR_ENV = "FACECACHE_GPU_RUNTIME"
MODELS_HINT = ("face models are not installed: open Edit > Preferences > Add-ons > VSE Face Swap and click "
               "Install Default Models (or import a FaceFusion models folder)")


def prefs():
    addon = bpy.context.preferences.addons.get(__package__)
    return addon.preferences if addon else None


def synchronous() -> bool:
    """Background mode (blender -b) and the bpy module: timers never run there."""
    return bool(bpy.app.background)


def running() -> bool:
    job = _state.job
    return job is not None and not job.finished


def engine_settings(scene) -> dict:
    p = prefs()
    settings = scene.faceswap.engine_settings()
    settings.update({"cache_dir": paths.cache_dir(scene), "max_bytes": paths.max_bytes(), "models_dir": models_dir(),
                     "providers": p.execution_provider if p else "auto"})
    return settings


def models_dir(create: bool = True) -> str:
    """The preferences' Models Folder, else $FACECACHE_MODELS (the engine CLI's variable: a farm node's
    models folder on the NAS), else the extension's user folder (created unless `create` is False:
    drawing only reads)."""
    p = prefs()
    if p and p.models_dir:
        return bpy.path.abspath(p.models_dir)
    return os.path.abspath(os.environ[MODELS_DIR_ENV]) if os.environ.get(MODELS_DIR_ENV) else default_models_dir(create)


def engine_environment() -> dict:
    """What the preferences add to the engine's environment: the GPU runtime folder, when one is chosen
    (else the engine's own: $FACECACHE_GPU_RUNTIME, else the per-user folder every Blender shares)."""
    p = prefs()
    folder = getattr(p, "gpu_runtime_dir", "") if p else ""
    return {GPU_RUNTIME_DIR_ENV: bpy.path.abspath(folder)} if folder else {}


def default_models_dir(create: bool = True) -> str:
    try:
        return bpy.utils.extension_path_user(__package__, path="models", create=create)
    except (ValueError, AttributeError):  # not installed as an extension (development checkout)
        return os.path.join(bpy.utils.user_resource("DATAFILES", path="vse_faceswap", create=create), "models")


def friendly(message: str, kind: str = "") -> str:
    if kind == "ModelMissing" or "not installed" in message:
        return f"{MODELS_HINT} ({message})"
    return message


def start(scene, kind: str, items: list[dict], on_done=None, extra: dict | None = None):
    """Start a job (`extra`: more fields of the request, e.g. the folder to import); returns its
    engine_client.Request (already finished when synchronous). Raises RuntimeError when busy."""
    if running():
        raise RuntimeError("a face swap job is already running: wait for it or press Cancel")
    status = runtime.STATE.job
    status.running, status.kind, status.progress, status.text = True, kind, 0.0, f"{kind}: starting"
    status.done, status.total, status.media = 0, 0, frozenset(item["media"] for item in items if "media" in item)
    _state.scene, _state.on_done, _state.items = scene.name, on_done, items
    engine_client.SESSION.configure(engine_environment())
    job = engine_client.SESSION.request({"kind": kind, "settings": engine_settings(scene), "items": items,
                                         **(extra or {})})
    _state.job = job
    if synchronous():
        lines = progress_lines.ProgressLines(kind)
        job.wait(lines, heartbeat=progress_lines.HEARTBEAT_SECONDS)
        _finish(job)
        if job.result is not None:
            lines.finished(describe(job.result))
    else:
        bpy.app.timers.register(_tick, first_interval=PROGRESS_SECONDS)
    return job


def _scene():
    return bpy.data.scenes.get(_state.scene or "")


def _tick():
    job = _state.job
    if job is None:
        return None
    finished = job.poll()
    if not finished:
        status = runtime.STATE.job
        status.progress, status.done, status.total = job.fraction, job.done, job.total
        status.text = f"{job.job['kind']}: {job.label} {job.done}/{job.total}"
        _redraw(("UI",))  # the progress bar only: the strips change when the job is done
        if job.job["kind"] in RUNTIME_JOBS:
            _redraw(("WINDOW",), "PREFERENCES")
        return PROGRESS_SECONDS
    _finish(job)
    return None


def _finish(job) -> None:
    scene = _scene()
    on_done, items = _state.on_done, _state.items
    _state.ended()
    status = runtime.STATE.job
    status.running, status.progress = False, 1.0 if job.result is not None else 0.0
    if job.result is not None:
        summary = dict(job.result)
        asked = runtime.asked_frames(items)
        for kind in ("analysed", "swapped", "faceless"):
            if kind in summary:
                runtime.STATE.replace(kind, summary.pop(kind) or {}, asked)
        runtime.STATE.add("turned_away", summary.pop("turned_away", {}) or {})
        if summary.get("gpu_warning"):
            runtime.STATE.gpu_notice = summary["gpu_warning"]
        status.text = ("cancelled; finished frames kept: " if summary.get("cancelled") else "") + describe(summary)
        if scene is not None:
            scene.faceswap.last_report = json.dumps(summary, sort_keys=True)
    else:
        status.text = job.error if job.error_kind == "Cancelled" else f"error: {friendly(job.error or '', job.error_kind)}"
    if scene is not None and on_done is not None:
        on_done(scene, job)
    _redraw()


def describe(summary: dict) -> str:
    """The engine's own sentence for the job (the CLI's words), and its warning if it has one."""
    text = f"{summary.get('kind', 'job')}: {summary.get('message') or str(summary.get('frames', 0)) + ' frames'}"
    return f"{text}. Warning: {summary['warning']}" if summary.get("warning") else text


def cancel() -> bool:
    job = _state.job
    if job is None or job.finished:
        return False
    job.cancel()
    return True


def _redraw(regions: tuple[str, ...] | None = None, area_type: str = "SEQUENCE_EDITOR") -> None:
    """Redraw the sequencer areas, or those of `area_type` (only their regions of these types, when given)."""
    wm = bpy.context.window_manager
    for window in getattr(wm, "windows", ()):
        for area in window.screen.areas:
            if area.type != area_type:
                continue
            if regions is None:
                area.tag_redraw()
            for region in area.regions if regions is not None else ():
                if region.type in regions:
                    region.tag_redraw()


def reset() -> None:
    """Forget the job of this session (a new file was opened, or the add-on is turned off)."""
    job = _state.job
    if job is not None:
        job.cancel()
    _state.ended()
    _state.scene = ""
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
