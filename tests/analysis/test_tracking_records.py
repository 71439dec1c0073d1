"""Tracking keeps the cache's rule: a frame's record is the same whichever range, order or process
computed it (real MTCNN weights, a real clip of a portrait moving over a still background).

Records are compared as the store encodes them (packfile meta and arrays), byte for byte."""

import subprocess
import sys
import textwrap

import cv2
import numpy as np
import pytest

from facecache.media.identity import media_identity
from facecache.media.reader import MediaReader
from facecache.samples import sample_image
from facecache.store.frame_store import SEGMENT_FRAMES
from facecache.store.records import GroupRecords, Stage, encode

from test_analyzer import analyzer

pytestmark = pytest.mark.index  # real weights and portraits come from the package index

FRAMES = range(100)


@pytest.fixture(scope="module")
def clip(tmp_path_factory, portraits):
    """100 frames at 480x320: a still camera on the group photo (six still faces), a portrait moving
    slowly across it, and a black frame at 40 (the whole frame searched)."""
    path = tmp_path_factory.mktemp("tracking") / "clip.mp4"
    background = cv2.resize(cv2.imread(str(sample_image("group"))), (480, 320), interpolation=cv2.INTER_AREA)
    card = cv2.resize(portraits["grace_hopper"], (110, 130), interpolation=cv2.INTER_AREA)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 25, (480, 320))
    for index in range(100):
        frame = np.zeros_like(background) if index == 40 else background.copy()
        if index != 40:
            x = 20 + 2 * index % 180
            frame[150:280, x:x + 110] = card
        writer.write(frame)
    writer.release()
    return path


def encoded_records(analyzer_, clip) -> list[bytes]:
    """Each frame's record of FRAMES, encoded alone as the store encodes a pack."""
    media_id = media_identity(clip, analyzer_.cache)
    with MediaReader(clip) as reader:
        decoder_id = reader.decoder_id
    out = []
    for index in FRAMES:
        group = analyzer_.open_segment(media_id, decoder_id, index // SEGMENT_FRAMES)
        record = group.content.records[group.fingerprint_at(index)]
        meta, arrays, _ = encode(GroupRecords({0: record.fingerprint}, {record.fingerprint: record}))
        out.append(repr(meta).encode() + b"".join(name.encode() + arrays[name].tobytes() for name in sorted(arrays)))
    return out


def test_any_range_or_order_gives_the_same_records(tmp_path, models_dir, clip):
    at_once = analyzer(tmp_path / "at-once", models_dir)
    at_once.analyze_media(clip, FRAMES)
    assert at_once.tracking and at_once.models.get("detector").stats.followed > 50  # it really followed

    backwards = analyzer(tmp_path / "backwards", models_dir)
    backwards.analyze_media(clip, range(50, 100))
    backwards.analyze_media(clip, range(0, 50))
    assert encoded_records(backwards, clip) == encoded_records(at_once, clip)

    # chunks as a farm runs them, the second starting right after the black frame (which passed the
    # picture before it on: the second chunk resumes from the last frame with a face, not from it)
    chunked = analyzer(tmp_path / "chunked", models_dir)
    chunked.analyze_media(clip, range(0, 41))
    chunked.analyze_media(clip, range(41, 100))
    assert encoded_records(chunked, clip) == encoded_records(at_once, clip)

    # a cold preview-like look at one frame computes the frames before it in its segment
    single = analyzer(tmp_path / "single", models_dir)
    (only,) = single.analyze_media(clip, range(70, 71))
    assert single.inferences.detect == 70 - SEGMENT_FRAMES + 1
    assert encoded_records(at_once, clip)[70] == _encoded_one(only.record)


def test_with_the_face_mesh_in_its_blocked_form_any_order_gives_the_same_records(tmp_path, default_models_dir, clip):
    """The default landmarker too (on the CPU in the form models/cpu_graphs.py names): its 68 points and the
    poses made from them are the same to the byte whichever range computed them."""
    at_once = analyzer(tmp_path / "at-once", default_models_dir, recognizer="none")
    at_once.analyze_media(clip, FRAMES)
    assert at_once.models.settings["cpu_graphs"] == {"face_mesh_468/model": "blocked_prelu"}
    backwards = analyzer(tmp_path / "backwards", default_models_dir, recognizer="none")
    backwards.analyze_media(clip, range(50, 100))
    backwards.analyze_media(clip, range(0, 50))
    records = encoded_records(at_once, clip)
    assert records == encoded_records(backwards, clip)
    assert all(b"landmarks68" in record for record in records[:40])  # faces on every frame before the black one


def _encoded_one(record) -> bytes:
    meta, arrays, _ = encode(GroupRecords({0: record.fingerprint}, {record.fingerprint: record}))
    return repr(meta).encode() + b"".join(name.encode() + arrays[name].tobytes() for name in sorted(arrays))


def test_two_processes_racing_on_segments_give_the_same_records(tmp_path, models_dir, clip):
    reference = analyzer(tmp_path / "reference", models_dir)
    reference.analyze_media(clip, FRAMES)
    racing = tmp_path / "racing"
    script = textwrap.dedent(f"""
        import sys
        from facecache.analysis.analyzer import FaceAnalyzer
        from facecache.analysis.factory import build_model_set
        from facecache.models.runtime import SessionFactory
        from facecache.models.store import ModelStore
        from facecache.store.cache import FaceCache
        models = build_model_set(ModelStore({str(models_dir)!r}), SessionFactory("cpu"))
        a = FaceAnalyzer(FaceCache({str(racing)!r}), models, claim_poll_seconds=0.05)
        a.analyze_media({str(clip)!r}, range(100) if sys.argv[1] == "forward" else range(36, 100))
        a.analyze_media({str(clip)!r}, range(100))
    """)
    runs = [subprocess.Popen([sys.executable, "-c", script, way]) for way in ("forward", "later")]
    assert [run.wait(600) for run in runs] == [0, 0]
    assert encoded_records(analyzer(racing, models_dir), clip) == encoded_records(reference, clip)


def test_tracking_off_is_detection_on_every_frame(tmp_path, models_dir, clip):
    off = analyzer(tmp_path / "off", models_dir, tracking=False)
    records = off.analyze_media(clip, range(0, 12), needed=Stage.DETECT)
    assert not off.tracking and "tracking" not in off.models.settings  # the namespace before tracking
    detector = off.models.get("detector")
    with MediaReader(clip) as reader:
        for (index, frame), analysed in zip(reader.frames(list(range(12))), records):
            expected = detector.detect(frame)
            assert [tuple(face.box) for face in analysed.record.faces] == [tuple(d.box) for d in expected]
            assert analysed.record.detected is not None
            np.testing.assert_array_equal(analysed.record.detected,  # the boxes found, each 0 frames old
                                          np.array([[*d.box, 0] for d in expected], np.float32).reshape(-1, 5))
