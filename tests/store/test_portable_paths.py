"""The store's read path where the OS has no O_NOFOLLOW and no descriptor-relative opens
(Windows): symlinks are still refused, packs still read. Simulated here by switching those
features off in the cache module."""

import os

import numpy as np
import pytest

import facecache.store.layout as cache_module
from facecache.store.cache import FaceCache
from facecache.store.frame_store import FrameStore, group_key
from facecache.store.namespace import Namespace
from facecache.store.records import Face, FrameRecord, Stage

NS = Namespace("analysis", {"d": "1" * 32})
GROUP = group_key("media", 0)


@pytest.fixture
def windows_like(monkeypatch):
    monkeypatch.setattr(cache_module, "DIR_FD", False)
    monkeypatch.setattr(cache_module, "NOFOLLOW", 0)
    monkeypatch.setattr(cache_module, "OPEN_READ", os.O_RDONLY)


def fill(root):
    group = FrameStore(FaceCache(root), NS).open_group(GROUP)
    for i in range(5):
        group.put(FrameRecord(f"{i:032x}", Stage.DETECT, 4, 4,
                              [Face(np.zeros(4, np.float32), 1.0, np.zeros((5, 2), np.float32))]), i)
    group.flush()


def test_round_trip_without_descriptor_opens(tmp_path, windows_like):
    fill(tmp_path / "c")
    store = FrameStore(FaceCache(tmp_path / "c"), NS)
    assert sorted(store.open_group(GROUP).content.index) == list(range(5))
    assert store.cache.io.files_opened == 1


def test_symlinked_pack_and_group_are_refused_without_o_nofollow(tmp_path, windows_like):
    fill(tmp_path / "c")
    pack = next(FaceCache(tmp_path / "c").iter_packs()).path
    outside = tmp_path / "outside.fcp"
    outside.write_bytes(pack.read_bytes())
    os.unlink(pack)
    os.symlink(outside, pack)
    assert not FrameStore(FaceCache(tmp_path / "c"), NS).open_group(GROUP).content.records
    assert outside.exists()

    group_dir = pack.parent
    for entry in group_dir.iterdir():
        entry.unlink()
    group_dir.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / outside.name).write_bytes(outside.read_bytes())
    os.symlink(elsewhere, group_dir)
    assert not FrameStore(FaceCache(tmp_path / "c"), NS).open_group(GROUP).content.records
    assert not group_dir.is_symlink()  # set aside
