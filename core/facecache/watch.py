"""Watch a cache folder for packs that appear or disappear (a teammate's run, a pruner).

Local disks get inotify (watchdog's native observer; FSEvents on macOS). Network mounts (sshfs, NFS,
SMB/CIFS, 9p, AFP, WebDAV, Windows network drives, ...) get polling: inotify never sees other clients'
writes there. Windows polls too (`default_observer` says why). The mount type comes from `psutil.disk_partitions`.
Polling stats what it watches on every pass, so it watches folders only (`ns/`, namespaces, fan-outs,
groups): a folder's mtime changes when a pack is added to it or
removed from it, and pack files themselves are never statted.

The callback is debounced: a burst of writes (temp file, rename, removal of the packs a
compaction replaced) gives one call. If the observer cannot start, or its thread dies later,
the watcher says so (`mode == "manual"`, `problem`) and the caller falls back to manual refresh;
nothing here raises into the caller after construction, and a failing callback is logged.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path
from typing import Callable, Iterator

import psutil

from .output_layout import real_path  # relative: in Blender this is the add-on's vendored copy

log = logging.getLogger("facecache.watch")

# Filesystems where another machine may write: inotify would never see those writes.
NETWORK_FS_TYPES = frozenset({
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "fuse.sshfs", "sshfs", "afs", "ceph", "fuse.ceph",
    "glusterfs", "fuse.glusterfs", "lustre", "gpfs", "beegfs", "fuse.rclone", "fuse.s3fs", "davfs", "fuse.davfs2",
    "virtiofs", "fuse.juicefs", "ocfs2", "gfs2", "afpfs", "webdav", "remote",
})
DEFAULT_POLL_SECONDS = 1.0
DEFAULT_DEBOUNCE_SECONDS = 0.3


# Reads and access-time touches: reading the cache (a coverage query opens packs, a hit touches
# its LRU time) must not look like a teammate's write, or every refresh would trigger the next.
READ_EVENTS = frozenset({"opened", "closed_no_write", "attrib"})


def mount_type(path: str | os.PathLike, partitions=None) -> str | None:
    """The filesystem type of the mount holding `path` (the longest matching mount point), from
    `psutil.disk_partitions` on every platform; None when unknown. A Windows drive that psutil marks
    "remote" (a mapped network share) reads as "remote"."""
    target = os.path.normcase(real_path(path))
    best, best_type = "", None
    try:
        partitions = psutil.disk_partitions(all=True) if partitions is None else partitions
    except (OSError, RuntimeError):
        return None
    for partition in partitions:
        point = os.path.normcase(partition.mountpoint)
        inside = target == point or target.startswith(point.rstrip("/\\") + os.sep)
        if inside and len(point) >= len(best):
            remote = "remote" in (partition.opts or "").split(",")
            best, best_type = point, "remote" if remote else partition.fstype
    return best_type


def is_network_fs(fs_type: str | None) -> bool:
    return fs_type is not None and (fs_type in NETWORK_FS_TYPES or fs_type.split(".")[-1] in NETWORK_FS_TYPES)


def folders_only(path: str | None) -> Iterator[os.DirEntry]:
    """A listdir for the polling observer that yields sub-folders only, so packs are never statted."""
    with os.scandir(path) as entries:
        folders = [entry for entry in entries
                   if not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False)]
    return iter(folders)


ObserverFactory = Callable[[bool, float], object]


def default_observer(network: bool, poll_seconds: float):
    """inotify (or FSEvents) locally; polling of folders on network mounts, and on Windows: there the native
    observer (ReadDirectoryChangesW) holds the watched folder open, so Windows refuses to delete or move the
    cache or the project folder around it ("Directory is not empty"), and it reports reads as changes (it
    asks for last-access times too). A folder's modification time changes only when entries come or go."""
    if network or sys.platform == "win32":
        from watchdog.observers.polling import PollingObserverVFS

        return PollingObserverVFS(stat=os.stat, listdir=folders_only, polling_interval=poll_seconds)
    from watchdog.observers import Observer

    return Observer()


class CacheWatcher:
    """Calls `on_change()` (from a background thread, debounced) when packs appear or disappear.

    `start()` returns False and leaves `mode == "manual"` when no observer could be started;
    `check()` notices an observer that died and switches to manual as well.
    """

    def __init__(self, cache_root: str | os.PathLike, on_change: Callable[[], None],
                 poll_seconds: float = DEFAULT_POLL_SECONDS, debounce_seconds: float = DEFAULT_DEBOUNCE_SECONDS,
                 observer_factory: ObserverFactory = default_observer,
                 on_state: Callable[[str, str | None], None] | None = None):
        self.root = Path(cache_root)
        self.watched = self.root / "ns"
        self.fs_type = mount_type(self.root)
        self.network = is_network_fs(self.fs_type)
        self.mode = "stopped"
        self.problem: str | None = None
        self._on_change = on_change
        self._on_state = on_state
        self._poll = poll_seconds
        self._debounce = debounce_seconds
        self._factory = observer_factory
        self._observer = None
        self._changed = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- life cycle -------------------------------------------------------------------------------

    def start(self) -> bool:
        """Start watching; False (mode "manual", `problem` set) when the observer cannot start."""
        if self.mode in ("inotify", "polling"):
            return True
        try:
            from watchdog.events import FileSystemEventHandler

            watcher = self

            class Handler(FileSystemEventHandler):
                def on_any_event(self, event) -> None:
                    if event.event_type not in READ_EVENTS:
                        watcher._changed.set()

            self.watched.mkdir(parents=True, exist_ok=True)
            observer = self._factory(self.network, self._poll)
            observer.schedule(Handler(), str(self.watched), recursive=True)
            observer.daemon = True
            observer.start()
        except Exception as exc:  # an inotify limit, a vanished mount, a broken watchdog: degrade
            self._degrade(f"could not start watching {self.watched} ({type(exc).__name__}: {exc})")
            return False
        self._observer = observer
        self._stop.clear()
        self._set_mode("polling" if "Polling" in type(observer).__name__ else "inotify", None)
        self._thread = threading.Thread(target=self._debounce_loop, name="facecache-watch", daemon=True)
        self._thread.start()
        return True

    def stop(self) -> None:
        self._stop.set()
        self._changed.set()
        observer, self._observer = self._observer, None
        if observer is not None:
            try:
                observer.stop()
                observer.join(timeout=5)
            except Exception as exc:
                log.debug("stopping the observer: %s", exc)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._thread = None
        if self.mode != "manual":
            self._set_mode("stopped", None)

    def __enter__(self) -> "CacheWatcher":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- health -----------------------------------------------------------------------------------

    def check(self) -> bool:
        """True while the observer runs; switches to manual refresh when it (or an emitter) died."""
        observer = self._observer
        if observer is None:
            return False
        alive = observer.is_alive() and all(e.is_alive() for e in getattr(observer, "emitters", ()))
        if not alive:
            self._observer = None
            self._degrade(f"the watcher of {self.watched} stopped")
        return alive

    def _degrade(self, problem: str) -> None:
        log.warning("%s: falling back to manual refresh (use Refresh to update coverage and stats)", problem)
        self._set_mode("manual", problem)

    def _set_mode(self, mode: str, problem: str | None) -> None:
        self.mode, self.problem = mode, problem
        if self._on_state is not None:
            try:
                self._on_state(mode, problem)
            except Exception:
                log.exception("the watcher's state callback failed")

    # -- debounced calls --------------------------------------------------------------------------

    def _debounce_loop(self) -> None:
        while not self._stop.is_set():
            if not self._changed.wait(timeout=max(self._poll, 0.5)):
                if not self.check():
                    return
                continue
            if self._stop.wait(self._debounce):  # let a burst of events settle into one call
                return
            self._changed.clear()
            try:
                self._on_change()
            except Exception:
                log.exception("the cache watcher's callback failed (the watcher goes on)")
            if not self.check():
                return
