"""Property-based round trips: records -> pack bytes -> records."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from facecache.store import packfile, records
from facecache.store.records import Face, FrameRecord, GroupRecords, Stage

floats = st.floats(-1e6, 1e6, allow_nan=False, width=32)


def arrays(shape):
    return hnp.arrays(np.float32, shape, elements=floats)


faces = st.builds(
    Face,
    box=arrays((4,)),
    score=st.floats(0, 1, width=32),
    kps5=arrays((5, 2)),
    landmarks68=st.none() | arrays((68, 2)),
    embedding=st.none() | arrays((16,)),
    pose=st.none() | arrays((3,)),
)
fingerprints = st.text("0123456789abcdef", min_size=32, max_size=32)
frame_records = st.builds(
    FrameRecord,
    fingerprint=fingerprints,
    stages=st.integers(0, 15).map(Stage),
    height=st.integers(0, 10_000),
    width=st.integers(0, 10_000),
    faces=st.lists(faces, max_size=4),
)


@st.composite
def groups(draw):
    recs = draw(st.lists(frame_records, max_size=8, unique_by=lambda r: r.fingerprint))
    group = GroupRecords(records={r.fingerprint: r for r in recs})
    if recs:
        indices = draw(st.lists(st.integers(0, 10**9), max_size=12, unique=True))
        for i in indices:
            group.index[i] = draw(st.sampled_from(recs)).fingerprint
    return group


def assert_same_record(a: FrameRecord, b: FrameRecord):
    assert (a.fingerprint, a.stages, a.height, a.width, len(a.faces)) == (b.fingerprint, b.stages, b.height, b.width, len(b.faces))
    for fa, fb in zip(a.faces, b.faces):
        np.testing.assert_array_equal(fa.box, fb.box)
        assert np.float32(fa.score) == np.float32(fb.score)
        np.testing.assert_array_equal(fa.kps5, fb.kps5)
        for name in ("landmarks68", "embedding", "pose"):
            va, vb = getattr(fa, name), getattr(fb, name)
            assert (va is None) == (vb is None)
            if va is not None:
                np.testing.assert_array_equal(va, vb)
                assert vb.dtype == np.float32


@settings(max_examples=150, deadline=None)
@given(groups())
def test_group_round_trip_through_pack_bytes(group):
    meta, arrs, entries = records.encode(group)
    digest, data = packfile.encode(meta, arrs, entries)
    pack = packfile.decode(data, digest)
    assert pack.entries == len(group.records)
    back = records.decode(pack.meta, pack.arrays)
    assert back.index == group.index
    assert list(back.records) == list(group.records)
    for fp, record in group.records.items():
        assert_same_record(record, back.records[fp])


@settings(max_examples=50, deadline=None)
@given(groups())
def test_identical_content_gives_identical_pack_name(group):
    first = packfile.encode(*records.encode(group))
    second = packfile.encode(*records.encode(group))
    assert first == second


def test_frame_without_faces_is_a_record():
    group = GroupRecords(records={"a" * 32: FrameRecord("a" * 32, Stage.DETECT, 1080, 1920, [])}, index={7: "a" * 32})
    digest, data = packfile.encode(*records.encode(group))
    pack = packfile.decode(data)
    back = records.decode(pack.meta, pack.arrays)
    assert back.records["a" * 32].faces == []
    assert back.records["a" * 32].has(Stage.DETECT)
    assert back.index == {7: "a" * 32}


def test_face_with_embedding_and_68_landmarks_fits_in_3kb():
    rng = np.random.default_rng(0)
    face = Face(rng.random(4, dtype=np.float32), 0.9, rng.random((5, 2), dtype=np.float32),
                rng.random((68, 2), dtype=np.float32), rng.random(512, dtype=np.float32), rng.random(3, dtype=np.float32))
    group = GroupRecords()
    for i in range(64):
        fp = f"{i:032x}"
        group.records[fp] = FrameRecord(fp, Stage(15), 1080, 1920, [face])
        group.index[i] = fp
    _, data = packfile.encode(*records.encode(group))
    assert len(data) / 64 < 3072
