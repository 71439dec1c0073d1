"""Swap packs: a segment's results are made into SwapResults only for the frames used, and bad
arrays are refused when the pack is read."""

import numpy as np
import pytest

from facecache.errors import CorruptPack
from facecache.store.cache import FaceCache
from facecache.store.frame_store import FrameStore
from facecache.store.namespace import Namespace
from facecache.swap import swap_records
from facecache.swap.result import SwapResult
from facecache.swap.swap_records import SWAP_CODEC, SwapRecord

FRAMES, FACES, S = 64, 3, 32


def filled_store(tmp_path):
    store = FrameStore(FaceCache(tmp_path / "cache"), Namespace(stage="swap", models={}, settings={}, format_version=1),
                       codec=SWAP_CODEC)
    group = store.open_group("ab" * 16)
    rng = np.random.default_rng(1)
    for index in range(FRAMES):
        results = [SwapResult(rng.integers(0, 256, (S, S, 3), np.uint8), [[1, 0, index], [0, 1, face]],
                              np.round(rng.random((S, S), np.float32) * 255) / 255 if face else None)
                   for face in range(FACES)]
        group.put(SwapRecord(f"{index:032x}", results), index)
    group.flush()
    return store, group


def test_only_the_frames_used_are_made_into_results(tmp_path, monkeypatch):
    store, written = filled_store(tmp_path)
    made = []
    original = SwapResult.__post_init__
    monkeypatch.setattr(SwapResult, "__post_init__", lambda self: (made.append(1), original(self))[1])
    group = store.open_group("ab" * 16)
    assert made == []  # opening the segment builds no result
    record = group.lookup(group.fingerprint_at(10))
    assert len(record.results) == FACES and made == []
    for got, expected in zip(record.results, written.content.records[f"{10:032x}"].results):
        assert np.array_equal(got.crop, expected.crop) and np.array_equal(got.matrix, expected.matrix)
        assert (got.mask is None) == (expected.mask is None)
        if got.mask is not None:
            assert np.array_equal(got.mask, expected.mask)
    assert len(made) == FACES


def test_a_singular_matrix_in_a_pack_is_refused_on_reading(tmp_path):
    _, group = filled_store(tmp_path)
    meta, arrays, _ = SWAP_CODEC.encode(group.content)
    arrays["matrix"][5] = 0.0
    with pytest.raises(CorruptPack):
        swap_records.SWAP_CODEC.decode(meta, arrays)


def test_a_segment_without_a_face_to_swap_is_read_back(tmp_path):
    """Frames with no face to swap are records too: their pack reads back, and is not set aside as corrupt."""
    store = FrameStore(FaceCache(tmp_path / "cache"), Namespace(stage="swap", models={}, settings={}, format_version=1),
                       codec=SWAP_CODEC)
    group = store.open_group("cd" * 16)
    for index in range(4):
        group.put(SwapRecord(f"{index:032x}", [], 0), index)
    group.flush()
    reread = store.open_group("cd" * 16)
    assert [list(reread.lookup(reread.fingerprint_at(i)).results) for i in range(4)] == [[], [], [], []]
    assert not list((tmp_path / "cache" / "quarantine").glob("*"))
