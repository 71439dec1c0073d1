import numpy as np
import pytest

from analysis_graphs import RecordingSession, cpu_session, echo_model
from facecache.analysis.align import template_points
from facecache.analysis.arcface import ArcFaceRecognizer, face_blob, l2_normalised
from facecache.analysis.errors import ModelContractError


def _frame():
    rng = np.random.default_rng(7)
    frame = rng.integers(0, 256, (112, 112, 3), dtype=np.uint8)
    return frame


def test_embedding_is_the_raw_output_of_the_aligned_rgb_crop(tmp_path):
    graph = echo_model(tmp_path / "arcface.onnx", "input", [1, 3, 112, 112], "embedding", 512)
    recognizer = ArcFaceRecognizer(cpu_session(graph))
    frame = _frame()
    kps = template_points("arcface_112_v2", 112)  # already aligned: the crop is the frame itself
    embedding = recognizer.embed(frame, kps)
    assert embedding.shape == (512,) and embedding.dtype == np.float32
    red = frame[:, :, 2].astype(np.float32).ravel()[:512]  # first plane fed is red
    np.testing.assert_allclose(embedding, red / 127.5 - 1, atol=1e-5)


def test_alignment_follows_the_key_points(tmp_path):
    graph = echo_model(tmp_path / "arcface.onnx", "input", [1, 3, 112, 112], "embedding", 512)
    recognizer = ArcFaceRecognizer(cpu_session(graph))
    small = _frame()
    big = np.zeros((400, 600, 3), np.uint8)
    big[100:212, 300:412] = small  # the same face moved: same embedding
    kps = template_points("arcface_112_v2", 112) + [300, 100]
    np.testing.assert_allclose(recognizer.embed(big, kps), recognizer.embed(small, template_points("arcface_112_v2", 112)), atol=1e-5)


def test_face_blob_layout():
    crop = np.zeros((112, 112, 3), np.uint8)
    crop[..., 0] = 255  # blue
    blob = face_blob(crop)
    assert blob.shape == (1, 3, 112, 112)
    np.testing.assert_allclose(blob[0, :, 0, 0], [-1.0, -1.0, 1.0])


def test_l2_normalised_copy():
    raw = np.array([3.0, 4.0], np.float32)
    unit = l2_normalised(raw)
    np.testing.assert_allclose(unit, [0.6, 0.8])
    assert unit.dtype == np.float32 and raw[0] == 3.0
    np.testing.assert_array_equal(l2_normalised(np.zeros(4)), np.zeros(4))


def test_recognizer_contract_checks():
    with pytest.raises(ModelContractError, match="inputs"):
        ArcFaceRecognizer(RecordingSession([("data", [1, 3, 112, 112])], [("e", np.zeros((1, 512)))]))
    short = ArcFaceRecognizer(RecordingSession([("input", [1, 3, 112, 112])], [("e", np.zeros((1, 128)))]))
    with pytest.raises(ModelContractError, match=r"\(1, 512\) embedding"):
        short.embed(_frame(), template_points("arcface_112_v2", 112))
