"""The MTCNN pipeline on scripted sessions: how windows travel through the
three networks, whatever the weights."""

import math

import numpy as np
import pytest

from analysis_graphs import RecordingSession
from facecache.analysis.errors import ModelContractError
from facecache.analysis.mtcnn import MtcnnDetector, MtcnnSettings

LANDMARKS = [0.3, 0.7, 0.5, 0.35, 0.65, 0.4, 0.4, 0.6, 0.8, 0.8]


def pnet_face_at(row, col, level_width):
    """A P-Net that sees a face in one cell of the level that is ``level_width`` wide."""

    def respond(feeds):
        image = feeds["input_1"]  # (1, W, H, 3): the level, width first
        out_w = math.ceil((image.shape[1] - 2) / 2) - 4
        out_h = math.ceil((image.shape[2] - 2) / 2) - 4
        probs = np.zeros((1, out_w, out_h, 2), np.float32)
        probs[..., 0] = 1.0
        if image.shape[1] == level_width:
            probs[0, col, row] = (0.1, 0.9)
        return {"conv2d_4": np.zeros((1, out_w, out_h, 4), np.float32), "softmax": probs}

    return RecordingSession([("input_1", ["N", "M1", "M2", 3])], [("conv2d_4", np.zeros(1)), ("softmax", np.zeros(1))], respond)


def all_faces(input_name, outputs):
    def respond(feeds):
        n = len(feeds[input_name])
        values = {"softmax_1": [[0.0, 1.0]], "softmax_2": [[0.0, 0.99]], "dense_6": [LANDMARKS]}
        return {name: np.repeat(np.asarray(values.get(name, [[0.0] * 4]), np.float32), n, axis=0) for name in outputs}

    return RecordingSession([(input_name, ["N", 24, 24, 3])], [(name, np.zeros(1)) for name in outputs], respond)


def scripted_detector(row, col, level_width):
    pnet = pnet_face_at(row, col, level_width)
    rnet = all_faces("input_2", ["dense_2", "softmax_1"])
    onet = all_faces("input_3", ["dense_5", "dense_6", "softmax_2"])
    return MtcnnDetector(pnet, rnet, onet, MtcnnSettings(min_face_size=24.0)), (pnet, rnet, onet)


def test_a_cell_becomes_a_face_at_its_window():
    detector, (pnet, rnet, onet) = scripted_detector(row=10, col=30, level_width=150)
    faces = detector.detect(np.zeros((200, 300, 3), np.uint8))  # first level: 150 x 100 (scale 0.5)
    assert len(faces) == 1
    face = faces[0]
    # cell (row 10, col 30) = level window x 60..72, y 20..32 = frame x 120..144, y 40..64
    np.testing.assert_allclose(face.box, [120, 40, 144, 64])
    np.testing.assert_allclose(face.kps5, np.array([[120 + 24 * f for f in LANDMARKS[:5]], [40 + 24 * f for f in LANDMARKS[5:]]]).T, rtol=1e-6)
    assert face.score == pytest.approx(0.99)
    assert pnet.feeds[0]["input_1"].shape == (1, 150, 100, 3)
    assert rnet.feeds[0]["input_2"].shape == (1, 24, 24, 3) and onet.feeds[0]["input_3"].shape == (1, 48, 48, 3)


def test_rows_and_columns_are_not_confused():
    detector, _ = scripted_detector(row=30, col=10, level_width=150)
    (face,) = detector.detect(np.zeros((200, 300, 3), np.uint8))
    np.testing.assert_allclose(face.box, [40, 120, 64, 144])


def test_nothing_found_means_no_later_stage_runs():
    detector, (pnet, rnet, onet) = scripted_detector(row=0, col=0, level_width=-1)
    assert detector.detect(np.zeros((200, 300, 3), np.uint8)) == []
    assert len(pnet.feeds) > 1 and rnet.feeds == [] and onet.feeds == []


def test_tiny_frames_run_nothing():
    detector, (pnet, _, _) = scripted_detector(row=0, col=0, level_width=150)
    assert detector.detect(np.zeros((8, 8, 3), np.uint8)) == []
    assert pnet.feeds == []


def test_settings_are_checked_and_described():
    with pytest.raises(ValueError, match="scale_factor"):
        MtcnnSettings(scale_factor=1.2)
    with pytest.raises(ValueError, match="three probabilities"):
        MtcnnSettings(thresholds=(0.6, 0.7))
    with pytest.raises(ValueError, match="min_face_size"):
        MtcnnSettings(min_face_size=0)
    detector, _ = scripted_detector(0, 0, 1)
    described = detector.describe()
    assert described["model"] == "mtcnn" and described["thresholds"] == [0.6, 0.7, 0.7] and described["min_face_size"] == 24.0


def test_sessions_with_other_names_are_refused():
    _, (pnet, rnet, onet) = scripted_detector(0, 0, 1)
    with pytest.raises(ModelContractError, match="mtcnn rnet"):
        MtcnnDetector(pnet, pnet, onet)
    with pytest.raises(ModelContractError, match="lacks outputs"):
        MtcnnDetector(pnet, RecordingSession([("input_2", [1])], [("dense_2", np.zeros(1))]), onet)
