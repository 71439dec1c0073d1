import numpy as np
import pytest

from analysis_graphs import RecordingSession, cpu_session, standin_model
from facecache.analysis.errors import ModelContractError
from facecache.analysis.yoloface import YoloFaceDetector, decode_rows, output_rows

ANCHORS = 8400


def row(cx, cy, w, h, score, points):
    values = [cx, cy, w, h, score]
    for x, y in points:
        values += [x, y, 0.99]
    return values


FACE_POINTS = [(300, 200), (340, 200), (320, 225), (305, 250), (335, 250)]


def raw_output(rows):
    """(1, 20, 8400) as the model emits it: one column per candidate."""
    output = np.zeros((1, 20, ANCHORS), np.float32)
    for index, values in enumerate(rows):
        output[0, :, index] = values
    return output


def test_rows_are_the_transposed_output():
    output = raw_output([row(1, 2, 3, 4, 0.5, FACE_POINTS)])
    rows = output_rows(output)
    assert rows.shape == (ANCHORS, 20)
    np.testing.assert_allclose(rows[0, :7], [1, 2, 3, 4, 0.5, 300, 200])
    with pytest.raises(ModelContractError, match=r"\(1, 20, N\)"):
        output_rows(np.zeros((1, ANCHORS, 20)))


def test_decode_rows_turns_centres_into_corners_and_drops_confidences():
    rows = np.array([row(320, 220, 80, 100, 0.9, FACE_POINTS), row(10, 10, 5, 5, 0.2, FACE_POINTS)])
    boxes, scores, kps = decode_rows(rows, 0.5)
    np.testing.assert_allclose(boxes, [[280, 170, 360, 270]])
    np.testing.assert_allclose(scores, [0.9])
    np.testing.assert_allclose(kps[0], FACE_POINTS)


@pytest.fixture
def yolo_graph(tmp_path):
    output = raw_output(
        [
            row(320, 220, 80, 100, 0.9, FACE_POINTS),
            row(322, 221, 80, 100, 0.8, FACE_POINTS),  # the same face again: NMS drops it
            row(100, 500, 40, 40, 0.7, [(90, 495)] * 5),
            row(500, 500, 40, 40, 0.4, [(500, 500)] * 5),  # under the threshold
        ]
    )
    return standin_model(tmp_path / "yoloface.onnx", "input", [1, 3, 640, 640], [("output0", output)])


def test_detector_on_a_standin_graph(yolo_graph):
    faces = YoloFaceDetector(cpu_session(yolo_graph)).detect(np.zeros((1080, 1920, 3), np.uint8))
    assert [round(f.score, 2) for f in faces] == [0.9, 0.7]
    ratio = 3.0  # 1920x1080 fits 640x360
    np.testing.assert_allclose(faces[0].box, np.array([280, 170, 360, 270]) * ratio, rtol=1e-6)
    np.testing.assert_allclose(faces[0].kps5, np.array(FACE_POINTS) * ratio, rtol=1e-6)
    np.testing.assert_allclose(faces[1].kps5[0], [270, 1485], rtol=1e-6)


def test_preprocessing_scales_to_unit_range_without_channel_swap():
    session = RecordingSession([("input", [1, 3, 640, 640])], [("output0", raw_output([]))])
    frame = np.zeros((640, 640, 3), np.uint8)
    frame[..., 0], frame[..., 1], frame[..., 2] = 255, 51, 0
    assert YoloFaceDetector(session).detect(frame) == []
    blob = session.feeds[0]["input"]
    assert blob.shape == (1, 3, 640, 640) and blob.dtype == np.float32
    np.testing.assert_allclose(blob[0, :, 5, 5], [1.0, 0.2, 0.0], rtol=1e-6)


def test_contract_checks():
    with pytest.raises(ModelContractError, match="2 outputs"):
        YoloFaceDetector(RecordingSession([("input", [1, 3, 640, 640])], [("a", np.zeros(1)), ("b", np.zeros(1))]))
    with pytest.raises(ModelContractError, match="inputs"):
        YoloFaceDetector(RecordingSession([("images", [1, 3, 640, 640])], [("a", np.zeros(1))]))
