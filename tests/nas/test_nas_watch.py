"""Watching a shared cache: a write through one workstation's mount is seen by a watcher on the
other's, and a watcher that cannot start or dies degrades to manual refresh without raising."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

from facecache.store.cache import FaceCache
from facecache.store.frame_store import FrameStore, group_key
from facecache.store.namespace import Namespace
from facecache.store.records import Face, FrameRecord, Stage
from facecache.watch import CacheWatcher, folders_only, is_network_fs, mount_type

pytestmark = pytest.mark.filterwarnings("ignore:Callback with id:RuntimeWarning")  # watchdog inotify noise

NS = Namespace("watch-test", {"detector": "e" * 32}, {"size": 640})
DEADLINE_SECONDS = 3.0  # what a teammate waits for, at most (a deadline, not a speed measurement)


def _write_group(root, segment: int) -> None:
    store = FrameStore(FaceCache(root), NS)
    group = store.open_group(group_key("watched-media", "decoder", segment))
    face = Face(box=np.array([1, 2, 3, 4], np.float32), score=0.9, kps5=np.zeros((5, 2), np.float32))
    for index in range(4):
        group.put(FrameRecord(f"{segment:016x}{index:016x}", Stage.DETECT, 10, 10, [face]), index)
    group.flush()


class Seen:
    """Collects the stats each callback computed, so the test can wait for a condition."""

    def __init__(self, cache: FaceCache):
        self.cache = cache
        self.entries: list[int] = []
        self.changed = threading.Condition()

    def __call__(self) -> None:
        entries = self.cache.stats().entries  # what the add-on's panel would show
        with self.changed:
            self.entries.append(entries)
            self.changed.notify_all()

    def wait_for(self, entries: int, seconds: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: entries in self.entries, timeout=seconds)


def test_mount_types_choose_the_observer(nas, tmp_path):
    assert is_network_fs(mount_type(nas.b)) and mount_type(nas.b) == "fuse.sshfs"
    assert not is_network_fs(mount_type(tmp_path))
    assert CacheWatcher(nas.b, lambda: None).network
    for fs_type in ("nfs", "nfs4", "cifs", "smb3", "9p", "fuse.sshfs"):
        assert is_network_fs(fs_type)
    assert not any(is_network_fs(t) for t in ("ext4", "xfs", "btrfs", "tmpfs", "overlay", None))


def test_mount_type_takes_the_longest_mount_point_and_knows_windows_network_drives():
    from types import SimpleNamespace as Part  # what psutil.disk_partitions lists, on any platform

    partitions = [Part(mountpoint="/", fstype="ext4", opts="rw"),
                  Part(mountpoint="/mnt/team share", fstype="nfs4", opts="rw"),
                  Part(mountpoint="/mnt/z", fstype="NTFS", opts="rw,remote")]  # psutil's mark of a network drive
    assert mount_type("/mnt/team share/cache", partitions) == "nfs4"
    assert mount_type("/mnt/teamshare", partitions) == "ext4"
    assert is_network_fs(mount_type("/mnt/z/cache", partitions))
    assert mount_type("/x", []) is None


def test_a_write_through_mount_a_is_seen_by_a_watcher_on_mount_b(share):
    a, b, _server = share
    FaceCache(a / "cache")
    seen = Seen(FaceCache(b / "cache"))
    with CacheWatcher(b / "cache", seen, poll_seconds=0.5) as watcher:
        assert watcher.mode == "polling"  # inotify never sees another client's writes on a network mount
        time.sleep(1.0)  # the observer's first snapshot, before the teammate writes
        _write_group(a / "cache", 0)
        assert seen.wait_for(4, DEADLINE_SECONDS), f"not seen within {DEADLINE_SECONDS} s: {seen.entries}"
        _write_group(a / "cache", 1)  # a new group of an existing namespace
        assert seen.wait_for(8, DEADLINE_SECONDS), seen.entries
        FaceCache(a / "cache").clear()  # packs disappearing are changes too
        assert seen.wait_for(0, DEADLINE_SECONDS), seen.entries
        assert watcher.check() and watcher.mode == "polling"
    assert watcher.mode == "stopped"


def test_local_disk_uses_inotify(tmp_path):
    seen = Seen(FaceCache(tmp_path / "cache"))
    with CacheWatcher(tmp_path / "cache", seen) as watcher:
        assert watcher.mode == "inotify"
        _write_group(tmp_path / "cache", 0)
        assert seen.wait_for(4, DEADLINE_SECONDS), seen.entries


def test_polling_lists_folders_only(tmp_path):
    (tmp_path / "group").mkdir()
    (tmp_path / "pack.fcp").write_bytes(b"x")
    (tmp_path / ".tmp-x").mkdir()
    assert [entry.name for entry in folders_only(str(tmp_path))] == ["group"]


def test_an_observer_that_cannot_start_degrades_to_manual_refresh(tmp_path):
    states = []

    def broken(network, poll):
        raise OSError(28, "inotify watch limit reached")

    watcher = CacheWatcher(tmp_path / "cache", lambda: None, observer_factory=broken,
                           on_state=lambda mode, problem: states.append((mode, problem)))
    assert watcher.start() is False
    assert watcher.mode == "manual" and "inotify watch limit" in watcher.problem
    assert states == [("manual", watcher.problem)]
    assert watcher.check() is False
    watcher.stop()  # harmless
    assert watcher.mode == "manual"


def test_an_observer_that_dies_degrades_to_manual_refresh(tmp_path):
    from watchdog.observers.polling import PollingObserverVFS

    calls = {"n": 0}

    def listdir_that_breaks(path):
        calls["n"] += 1
        if calls["n"] > 3:
            raise RuntimeError("the mount went away")
        return folders_only(path)

    states = []
    degraded = threading.Event()

    def on_state(mode, problem):
        states.append(mode)
        if mode == "manual":
            degraded.set()

    watcher = CacheWatcher(tmp_path / "cache", lambda: None, poll_seconds=0.1,
                           observer_factory=lambda network, poll: PollingObserverVFS(
                               stat=__import__("os").stat, listdir=listdir_that_breaks, polling_interval=poll),
                           on_state=on_state)
    FaceCache(tmp_path / "cache")
    previous_hook = threading.excepthook
    threading.excepthook = lambda args: None  # the emitter thread's death is the point here
    try:
        assert watcher.start()
        degraded.wait(60)  # returns when the watcher degrades; the 60 s only bound a hang, however busy the machine
    finally:
        threading.excepthook = previous_hook
        watcher.stop()
    assert watcher.mode == "manual" and "stopped" in watcher.problem
    assert states[0] == "polling" and states[-1] == "manual"


def test_a_failing_callback_does_not_stop_the_watcher(tmp_path):
    calls = []

    def callback():
        calls.append(1)
        raise ValueError("a bug in the panel")

    FaceCache(tmp_path / "cache")
    with CacheWatcher(tmp_path / "cache", callback, debounce_seconds=0.05) as watcher:
        _write_group(tmp_path / "cache", 0)
        deadline = time.monotonic() + DEADLINE_SECONDS
        while not calls and time.monotonic() < deadline:
            time.sleep(0.05)
        _write_group(tmp_path / "cache", 1)
        deadline = time.monotonic() + DEADLINE_SECONDS
        while len(calls) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(calls) >= 2 and watcher.check()


def test_reading_the_cache_does_not_look_like_a_write(tmp_path):
    """Coverage queries open packs and touch LRU times; only writes may wake the watcher."""
    cache = FaceCache(tmp_path / "cache")
    woke = threading.Event()
    watcher = CacheWatcher(tmp_path / "cache", woke.set, debounce_seconds=0.1)
    assert watcher.start()
    try:
        namespace = Namespace("analysis", {"d": "1" * 32})
        group = FrameStore(cache, namespace).open_group("a" * 32)
        group.put(FrameRecord("b" * 32, Stage.DETECT, 1, 1, []), 0)
        group.flush()
        assert woke.wait(5)  # a write wakes it
        woke.clear()
        while woke.wait(1.0):  # the write's last events (a busy machine delays them): until a quiet second
            woke.clear()
        for _ in range(3):  # reads, including an LRU touch of an old pack
            for info in cache.iter_packs():
                os.utime(info.path, (0, 0))
            FrameStore(FaceCache(tmp_path / "cache"), namespace).open_group("a" * 32)
        assert not woke.wait(1.5)
    finally:
        watcher.stop()
