import numpy as np
import pytest

from analysis_graphs import RecordingSession, cpu_session, standin_model
from facecache.analysis.errors import ModelContractError
from facecache.analysis.scrfd import ScrfdDetector, anchor_centres, decode_scrfd, distances_to_boxes, offsets_to_points

STRIDES = (8, 16, 32)
NAMES = [f"score_{s}" for s in STRIDES] + [f"bbox_{s}" for s in STRIDES] + [f"kps_{s}" for s in STRIDES]


def empty_outputs(size=640):
    counts = [(size // s) ** 2 * 2 for s in STRIDES]
    return [np.zeros((n, 1)) for n in counts] + [np.zeros((n, 4)) for n in counts] + [np.zeros((n, 10)) for n in counts]


def place(outputs, stride, row, col, anchor, score, distances, offsets, size=640):
    """Set one anchor's raw outputs (distances and offsets in stride units)."""
    level = STRIDES.index(stride)
    index = (row * (size // stride) + col) * 2 + anchor
    outputs[level][index] = score
    outputs[level + 3][index] = distances
    outputs[level + 6][index] = offsets


def test_anchor_centres_are_row_major_with_two_anchors_per_cell():
    centres = anchor_centres(2, 3, 16)
    np.testing.assert_array_equal(
        centres, [[0, 0], [0, 0], [16, 0], [16, 0], [32, 0], [32, 0], [0, 16], [0, 16], [16, 16], [16, 16], [32, 16], [32, 16]]
    )
    assert anchor_centres(80, 80, 8).shape == (12800, 2)


def test_distance_and_offset_decoding():
    centres = np.array([[100.0, 50.0]])
    np.testing.assert_array_equal(distances_to_boxes(centres, [[10, 20, 30, 40]]), [[90, 30, 130, 90]])
    points = offsets_to_points(centres, [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]])
    np.testing.assert_array_equal(points, [[[101, 52], [103, 54], [105, 56], [107, 58], [109, 60]]])


def test_decode_finds_the_anchor_and_scales_by_stride():
    outputs = empty_outputs()
    place(outputs, 16, row=10, col=20, anchor=1, score=0.9, distances=[2, 3, 4, 5], offsets=[-1, -1, 1, -1, 0, 0, -1, 1, 1, 1])
    place(outputs, 8, row=0, col=0, anchor=0, score=0.49, distances=[1, 1, 1, 1], offsets=np.zeros(10))
    boxes, scores, kps = decode_scrfd(outputs, (640, 640), 0.5)
    # anchor centre (20 * 16, 10 * 16) = (320, 160)
    np.testing.assert_allclose(boxes, [[320 - 32, 160 - 48, 320 + 64, 160 + 80]])
    np.testing.assert_allclose(scores, [0.9], rtol=1e-6)
    np.testing.assert_allclose(kps[0], [[304, 144], [336, 144], [320, 160], [304, 176], [336, 176]])


def test_decode_accepts_batched_maps_and_rejects_wrong_sizes():
    outputs = [o[None] for o in empty_outputs()]
    place([o[0] for o in outputs], 32, 19, 19, 0, 0.8, [1, 1, 1, 1], np.zeros(10))
    boxes, _, _ = decode_scrfd(outputs, (640, 640), 0.5)
    np.testing.assert_allclose(boxes, [[576, 576, 640, 640]])
    with pytest.raises(ModelContractError, match="640x640 input needs 12800"):
        decode_scrfd(empty_outputs(320), (640, 640), 0.5)
    with pytest.raises(ModelContractError, match="expected 9 outputs"):
        decode_scrfd(empty_outputs()[:6], (640, 640), 0.5)


@pytest.fixture
def scrfd_graph(tmp_path):
    outputs = empty_outputs()
    # one face found by three neighbouring anchors (NMS keeps the best), one more elsewhere
    face = dict(distances=[4, 5, 4, 5], offsets=[-2, -1, 2, -1, 0, 1, -1.5, 3, 1.5, 3])
    place(outputs, 8, 30, 40, 0, 0.95, **face)
    place(outputs, 8, 30, 40, 1, 0.90, **face)
    place(outputs, 8, 30, 41, 0, 0.85, **face)
    place(outputs, 32, 5, 15, 1, 0.6, distances=[1, 1, 1, 1], offsets=np.zeros(10))
    place(outputs, 16, 2, 2, 0, 0.3, distances=[1, 1, 1, 1], offsets=np.zeros(10))  # under the threshold
    return standin_model(tmp_path / "scrfd.onnx", "input", [1, 3, 640, 640], list(zip(NAMES, outputs)))


def test_detector_on_a_standin_graph_scales_results_back_to_the_frame(scrfd_graph):
    detector = ScrfdDetector(cpu_session(scrfd_graph))
    frame = np.zeros((960, 1280, 3), np.uint8)  # fitted into 640x480: ratio 2
    faces = detector.detect(frame)
    assert [round(f.score, 2) for f in faces] == [0.95, 0.6]
    best = faces[0]
    # anchor centre (320, 240), distances x8, then x2 back to the frame
    np.testing.assert_allclose(best.box, [(320 - 32) * 2, (240 - 40) * 2, (320 + 32) * 2, (240 + 40) * 2])
    np.testing.assert_allclose(best.kps5[0], [(320 - 16) * 2, (240 - 8) * 2])
    np.testing.assert_allclose(best.kps5[4], [(320 + 12) * 2, (240 + 24) * 2])
    assert best.box.dtype == np.float32 and best.kps5.shape == (5, 2)
    np.testing.assert_allclose(faces[1].box, [(480 - 32) * 2, (160 - 32) * 2, (480 + 32) * 2, (160 + 32) * 2])


def test_small_frames_are_not_enlarged(scrfd_graph):
    faces = ScrfdDetector(cpu_session(scrfd_graph)).detect(np.zeros((400, 500, 3), np.uint8))
    np.testing.assert_allclose(faces[0].box, [288, 200, 352, 280])


def test_preprocessing_letterboxes_bgr_and_normalises():
    outputs = empty_outputs()
    session = RecordingSession([("input", [1, 3, 640, 640])], list(zip(NAMES, outputs)))
    frame = np.zeros((480, 1280, 3), np.uint8)
    frame[:, :, 0] = 255  # blue
    frame[:, :, 2] = 127  # red
    ScrfdDetector(session).detect(frame)
    blob = session.feeds[0]["input"]
    assert blob.shape == (1, 3, 640, 640) and blob.dtype == np.float32
    # fitted to 640x240 at the top; channels stay in BGR order
    np.testing.assert_allclose(blob[0, :, 100, 300], [(255 - 127.5) / 128, -127.5 / 128, (127 - 127.5) / 128], rtol=1e-6)
    np.testing.assert_allclose(blob[0, :, 239, 639], blob[0, :, 0, 0])
    np.testing.assert_allclose(blob[0, :, 240:, :], -127.5 / 128)  # zero padding below


def test_contract_errors_name_the_model_and_what_to_do(tmp_path):
    outputs = empty_outputs()
    wrong_input = RecordingSession([("images", [1, 3, 640, 640])], list(zip(NAMES, outputs)))
    with pytest.raises(ModelContractError, match=r"scrfd_2.5g: the ONNX graph has inputs \['images'\].*reinstall"):
        ScrfdDetector(wrong_input)
    too_few = RecordingSession([("input", [1, 3, 640, 640])], list(zip(NAMES, outputs))[:3])
    with pytest.raises(ModelContractError, match="3 outputs"):
        ScrfdDetector(too_few)
    fixed = RecordingSession([("input", [1, 3, 640, 640])], list(zip(NAMES, outputs)))
    with pytest.raises(ValueError, match=r"size=\(640, 640\)"):
        ScrfdDetector(fixed, size=320)
    with pytest.raises(ValueError, match="multiples of 32"):
        ScrfdDetector(fixed, size=(630, 640))


def test_describe_lists_what_changes_results(scrfd_graph):
    detector = ScrfdDetector(cpu_session(scrfd_graph), score_threshold=0.6)
    assert detector.describe() == {"model": "scrfd_2.5g", "size": [640, 640], "score_threshold": 0.6, "iou_threshold": 0.4}
