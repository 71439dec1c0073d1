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

The watcher's state lives in one holder, `SESSION`; what it learns, in `runtime.STATE`.
"""

from __future__ import annotations

import logging
import os
import threading

import bpy
from bpy.app.handlers import persistent

from . import compat, engine_client, frame_mapping, jobs, paths, runtime, timeline

log = logging.getLogger("vse_faceswap.coverage_watch")
TICK_SECONDS = 1.0


def _watch_module():
    """The engine's watch module (stdlib and the extension's wheels only: safe in Blender's process)."""
    return engine_client.engine_module("watch")


def make_observer(network: bool, poll_seconds: float):
    """The engine's watchdog observer (late-bound, so a test can make it fail)."""
    return _watch_module().default_observer(network, poll_seconds)


class Session:
    """Per-session state: the watcher, its change flag, and a coverage query in flight."""

    def __init__(self) -> None:
        self.changed = threading.Event()  # set by the watcher's thread; read by the timer on the main thread
        self.watcher = None
        self.root: str | None = None
        self.mode = "stopped"  # "inotify" | "polling" | "manual" | "waiting" | "starting" | "stopped"
        self._lock = threading.Lock()  # the hand-over of a watcher started on its own thread
        self.network = False
        self.problem: str | None = None
        self.query = None  # (engine_client.Request, scene name, items) of a coverage query in flight
        self.last_error: str | None = None
        self.refreshes = 0

    # -- the watcher ---------------------------------------------------------------------------------

    def watch(self, root: str | None, wait: bool = True) -> None:
        """Watch `root` (restarting when it changed); None stops watching. `wait=False` starts the watcher
        on a thread of its own ("starting" until it runs): importing and starting it (watchdog, the mount
        table, a watch per folder) held Blender's window 75-110 ms, a redraw gap while the first job ran."""
        if root == self.root and self.mode not in ("waiting", "stopped"):
            return
        self.stop()
        self.root = root
        if root is None:
            return
        if not os.path.isdir(root):  # created by the first job; never created just to watch it
            self.mode, self.problem = "waiting", None
            return
        self.mode, self.problem = "starting", None
        if wait:
            self._start(root)
        else:
            threading.Thread(target=self._start, args=(root,), name="vse_faceswap coverage watcher",
                             daemon=True).start()

    def _start(self, root: str) -> None:
        watcher, problem = None, None
        try:
            watch = _watch_module()
            watcher = watch.CacheWatcher(root, self.changed.set, observer_factory=lambda n, p: make_observer(n, p))
            watcher.start()
        except Exception as exc:  # noqa: BLE001 - degrade to manual refresh, never crash Blender
            watcher, problem = None, f"{type(exc).__name__}: {exc}"
            log.warning("coverage watcher unavailable: %s", problem)
        with self._lock:
            superseded = self.root != root or self.mode != "starting"  # stopped or moved meanwhile
            if not superseded:
                self.watcher = watcher
                if watcher is None:
                    self.mode, self.problem = "manual", problem
                else:
                    self.network = watcher.network
                    self._sync_mode()
        if superseded and watcher is not None:
            watcher.stop()
        elif not superseded and watcher is not None:
            self.changed.set()  # a refresh picks up whatever changed while nobody watched

    def _sync_mode(self) -> None:
        watcher = self.watcher
        if watcher is not None:
            self.mode, self.problem = watcher.mode, watcher.problem

    def stop(self) -> None:
        with self._lock:  # a watcher still starting sees this and stops itself
            watcher, self.watcher = self.watcher, None
            self.root, self.mode, self.problem = None, "stopped", None
        if watcher is not None:
            try:
                watcher.stop()
            except Exception as exc:  # noqa: BLE001
                log.debug("stopping the coverage watcher: %s", exc)

    def describe(self) -> str:
        self._sync_mode()
        if self.mode == "inotify":
            return "watching (inotify)"
        if self.mode == "polling":
            return "watching (polling, network mount)" if self.network else "watching (polling)"
        if self.mode == "manual":
            return f"manual refresh: {self.problem or 'the watcher stopped'}"
        if self.mode == "waiting":
            return "watching once the cache folder exists"
        if self.mode == "starting":
            return "starting to watch"
        return "not watching"


SESSION = Session()


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
    return {"kind": "coverage", "settings": jobs.engine_settings(scene), "items": items}


def refresh(scene, wait: bool | None = None) -> dict:
    """Refresh the coverage of `scene`'s movie strips from the cache. Synchronous in background mode
    (or with wait=True): returns {"media": n, "analysed": n} or {"error": message}; otherwise starts
    the query and returns {"started": True} (the timer applies it)."""
    SESSION.changed.clear()
    items = coverage_items(scene)
    if not items:
        _redraw()
        return {"media": 0, "analysed": 0}
    if wait is None:
        wait = jobs.synchronous()
    if wait:
        job = engine_client.run_sync(_job(scene, items))
        return _apply(job, items, scene)
    if SESSION.query is None:
        SESSION.query = (engine_client.SESSION.request(_job(scene, items)), scene.name, items)
    return {"started": True}


def _apply(job, items, scene) -> dict:
    if job.result is None:
        SESSION.last_error = jobs.friendly(job.error or "the coverage query failed", job.error_kind)
        log.warning("coverage refresh failed: %s", SESSION.last_error)
        return {"error": SESSION.last_error}
    analysed = job.result.get("analysed", {}) or {}
    runtime.STATE.cache_bytes = job.result.get("cache_bytes")
    asked = runtime.asked_frames(items)
    runtime.STATE.replace("analysed", analysed, asked)
    for kind in ("swapped", "faceless"):
        runtime.STATE.replace(kind, job.result.get(kind, {}) or {}, asked)
    if scene is not None:
        timeline.point_elements(scene)  # frames a teammate or a farm made, or that went missing
    SESSION.last_error = None
    SESSION.refreshes += 1
    _redraw()
    return {"media": len(asked), "analysed": sum(len(v) for v in analysed.values())}


def _redraw() -> None:
    try:
        jobs._redraw()
    except Exception:  # noqa: BLE001 - no window manager (bpy module) or no screen
        pass


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
    SESSION.watch(root, wait=jobs.synchronous())


def tick():
    """The timer: follow the cache folder, apply a finished query, start one when the cache changed."""
    try:
        scene = current_scene()
        follow_scene(scene)
        query = SESSION.query
        if query is not None:
            job, name, items = query
            if job.poll():
                SESSION.query = None
                _apply(job, items, bpy.data.scenes.get(name))
        elif SESSION.changed.is_set() and scene is not None and not jobs.running():
            refresh(scene)  # a running job's own result brings its coverage; refresh after it
    except Exception:  # noqa: BLE001 - a timer that raises is unregistered: keep going
        log.exception("coverage refresh failed")
    return TICK_SECONDS


@persistent
def on_load_post(*_args):
    SESSION.stop()
    SESSION.query = None
    follow_scene()
    scene = current_scene()
    if scene is not None and hasattr(scene, "faceswap") and timeline.originals(scene):
        SESSION.changed.set()  # the next tick asks the engine which swapped frames exist (the panel says "Checking")


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
    query, SESSION.query = SESSION.query, None
    if query is not None:
        query[0].cancel()
    SESSION.stop()
