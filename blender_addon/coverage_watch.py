"""Live coverage: watch the scene's cache folder so that a teammate's analyses (or a render node's, or
a pruner's removals) show in the coverage bars without pressing anything.

The engine's `CacheWatcher` (inotify on local disks, polling on network mounts, debounced) calls back
on its own thread; that callback never touches bpy, it only sets a `threading.Event`. A
`bpy.app.timers` function (every second) checks the event and refreshes coverage: the engine's
`coverage` request (answered by the session's engine process, like every other request) says which
frames of each movie strip's media are analysed (from the cache alone), which have an output file, and
the cache's size; the answer goes into `runtime.STATE`, which the panel and the bars read. If the watcher cannot start or dies, `mode` says "manual" with the reason, the panel
shows it, and `faceswap.refresh_coverage` (or `refresh(scene)`) refreshes by hand. Nothing here raises
into Blender.

In background mode and the bpy module timers never run: call `refresh(scene)` (synchronous there)
and `tick()` by hand.

The watcher and the query in flight are `runtime.COVERAGE` (cache_watcher); what it learns goes into
`runtime.STATE`.
"""

from __future__ import annotations

import logging
import os

import bpy
from bpy.app.handlers import persistent

from . import compat, frame_mapping, jobs, paths, redraw, runtime, timeline
from .engine_client import engine_module

protocol = engine_module("protocol")  # the engine's request and answer keys
log = logging.getLogger("vse_faceswap.coverage_watch")
TICK_SECONDS = 1.0


# -- coverage queries ---------------------------------------------------------------------------------


def coverage_items(scene) -> list[dict]:
    strips = []
    for strip in timeline.movie_strips(scene):
        try:
            frame_mapping.check_supported(strip)
        except frame_mapping.UnsupportedStrip:
            continue
        if os.path.isfile(paths.media_path(strip)):
            strips.append(strip)
    return timeline.work_items(scene, strips)


def _job(scene, items) -> dict:
    return {protocol.KIND: "coverage", protocol.SETTINGS: jobs.engine_settings(scene), protocol.ITEMS: items}


def refresh(scene, wait: bool | None = None) -> dict:
    """Refresh the coverage of `scene`'s movie strips from the cache. Synchronous in background mode
    (or with wait=True): returns {"media": n, "analysed": n} or {"error": message}; otherwise starts
    the query and returns {"started": True} (the timer applies it)."""
    runtime.COVERAGE.changed.clear()
    items = coverage_items(scene)
    if not items:
        redraw.redraw()
        return {protocol.MEDIA: 0, protocol.ANALYSED: 0}
    if wait is None:
        wait = jobs.synchronous()
    if wait:
        return _apply(runtime.ENGINE.request(_job(scene, items)).wait(), items, scene)
    if runtime.COVERAGE.query is None:
        runtime.COVERAGE.query = (runtime.ENGINE.request(_job(scene, items)), scene.name, items)
    return {"started": True}


def _apply(job, items, scene) -> dict:
    if job.result is None:
        runtime.COVERAGE.last_error = jobs.friendly(job.error or "the coverage query failed", job.error_kind)
        log.warning("coverage refresh failed: %s", runtime.COVERAGE.last_error)
        return {"error": runtime.COVERAGE.last_error}
    runtime.STATE.cache_bytes = job.result.get(protocol.CACHE_BYTES)
    asked = runtime.asked_frames(items)
    for kind in protocol.COVERAGE_KINDS:
        runtime.STATE.replace(kind, job.result.get(kind, {}) or {}, asked)
    if scene is not None:
        timeline.point_elements(scene)  # frames a teammate or a farm made, or that went missing
    runtime.COVERAGE.last_error = None
    runtime.COVERAGE.refreshes += 1
    redraw.redraw()
    analysed = job.result.get(protocol.ANALYSED, {}) or {}
    return {protocol.MEDIA: len(asked), protocol.ANALYSED: sum(len(v) for v in analysed.values())}


# -- the timer and handlers -----------------------------------------------------------------------------


def current_scene():
    return compat.sequencer_scene(bpy.context)


def follow_scene(scene=None) -> None:
    """Watch the cache folder of the (sequencer) scene, restarting when it moved."""
    scene = scene or current_scene()
    try:
        root = paths.cache_dir(scene) if scene is not None and hasattr(scene, "faceswap") else None
    except Exception:  # noqa: BLE001
        root = None
    runtime.COVERAGE.watch(root, wait=jobs.synchronous())


def tick():
    """The timer: follow the cache folder, apply a finished query, start one when the cache changed."""
    try:
        scene = current_scene()
        follow_scene(scene)
        query = runtime.COVERAGE.query
        if query is not None:
            job, name, items = query
            if job.poll():
                runtime.COVERAGE.query = None
                _apply(job, items, bpy.data.scenes.get(name))
        elif runtime.COVERAGE.changed.is_set() and scene is not None and not jobs.running():
            refresh(scene)  # a running job's own result brings its coverage; refresh after it
    except Exception:  # noqa: BLE001 - a timer that raises is unregistered: keep going
        log.exception("coverage refresh failed")
    return TICK_SECONDS


@persistent
def on_load_post(*_args):
    runtime.COVERAGE.stop()
    runtime.COVERAGE.query = None
    follow_scene()
    scene = current_scene()
    if scene is not None and hasattr(scene, "faceswap") and timeline.originals(scene):
        # the next tick asks the engine which swapped frames exist (the panel says "Checking")
        runtime.COVERAGE.changed.set()


@persistent
def on_save_post(*_args):
    follow_scene()  # first save moves the cache; Save As may re-point it


def register():
    bpy.app.handlers.load_post.append(on_load_post)
    bpy.app.handlers.save_post.append(on_save_post)
    if bpy.app.background:
        try:
            follow_scene()
        except Exception:  # noqa: BLE001 - restricted context while registering
            pass
    elif not bpy.app.timers.is_registered(tick):
        bpy.app.timers.register(tick, first_interval=0.5, persistent=True)


def unregister():
    if bpy.app.timers.is_registered(tick):
        bpy.app.timers.unregister(tick)
    for handlers, handler in ((bpy.app.handlers.load_post, on_load_post), (bpy.app.handlers.save_post, on_save_post)):
        if handler in handlers:
            handlers.remove(handler)
    query, runtime.COVERAGE.query = runtime.COVERAGE.query, None
    if query is not None:
        query[0].cancel()
    runtime.COVERAGE.stop()
