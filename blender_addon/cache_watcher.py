"""The coverage watcher of this Blender session: the engine's `CacheWatcher` on the scene's cache folder
(inotify on local disks, polling on network mounts, debounced), its mode for the panel, and the coverage
query in flight. The watcher calls back on its own thread and never touches bpy: it only sets `changed`,
which `coverage_watch`'s timer reads on the main thread. No bpy here; the one instance is
`runtime.COVERAGE`.
"""

from __future__ import annotations

import logging
import os
import threading

from . import engine_client

log = logging.getLogger("vse_faceswap.coverage_watch")


def _watch_module():
    """The engine's watch module (stdlib and the extension's wheels only: safe in Blender's process)."""
    return engine_client.engine_module("watch")


def make_observer(network: bool, poll_seconds: float):
    """The engine's watchdog observer (late-bound, so a test can make it fail)."""
    return _watch_module().default_observer(network, poll_seconds)


class CoverageWatcher:
    """The watcher, its change flag, and a coverage query in flight."""

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
