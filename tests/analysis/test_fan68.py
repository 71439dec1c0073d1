import numpy as np
import pytest

from analysis_graphs import RecordingSession, cpu_session, standin_model
from facecache.analysis.align import transform_points
from facecache.analysis.errors import ModelContractError
from facecache.analysis.fan68 import Fan68Landmarker, brighten_if_dark, crop_matrix, face_angle, heatmap_score, landmarks_to_frame

BOX = np.array([100.0, 50.0, 300.0, 200.0])  # 200 x 150, centre (200, 125)


def test_crop_matrix_fits_the_longer_side_to_195_px_centred():
    matrix = crop_matrix(BOX)
    corners = transform_points(np.array([[100, 50], [300, 200], [200, 125]]), matrix)
    np.testing.assert_allclose(corners, [[30.5, 128 - 73.125], [225.5, 128 + 73.125], [128, 128]])


def test_crop_matrix_turns_by_the_face_angle():
    matrix = crop_matrix(BOX, angle=90)
    # a point right of the box centre ends up above the crop centre
    np.testing.assert_allclose(transform_points(np.array([[240.0, 125.0]]), matrix), [[128, 128 - 40 * 0.975]])
    with pytest.raises(ValueError, match="multiples of 90"):
        crop_matrix(BOX, angle=45)


def test_face_angle_snaps_the_eye_line_to_quarter_turns():
    upright = np.array([[100, 100], [140, 102], [120, 120], [105, 140], [135, 140]], float)
    assert face_angle(upright) == 0
    turned = upright.copy()
    turned[1] = [100, 140]  # right eye straight below the left eye: head on its side
    assert face_angle(turned) == 90
    # turning the crop by that angle brings the eyes back level, left eye on the left
    crop = transform_points(turned[:2], crop_matrix([80, 80, 160, 160], face_angle(turned)))
    assert crop[0, 0] < crop[1, 0] and abs(crop[0, 1] - crop[1, 1]) < 3
    upside_down = upright * [-1, -1] + [300, 300]
    assert face_angle(upside_down) == 180


def test_heatmap_score_maps_0_to_0_9_onto_0_to_1():
    heatmaps = np.zeros((1, 68, 64, 64))
    assert heatmap_score(heatmaps) == 0.0
    heatmaps[0, :, 5, 7] = 0.45
    assert heatmap_score(heatmaps) == pytest.approx(0.5)
    heatmaps[0, :34, 1, 1] = 1.5  # maxima above 0.9 saturate
    assert heatmap_score(heatmaps) == pytest.approx(1.0)


def test_landmarks_go_back_through_the_inverse_crop():
    matrix = crop_matrix(BOX)
    raw = np.zeros((68, 3))
    raw[:, :2] = 32  # heatmap centre = crop centre = box centre
    raw[1, :2] = [0, 0]  # crop corner
    points = landmarks_to_frame(raw, matrix)
    np.testing.assert_allclose(points[0], [200, 125])
    np.testing.assert_allclose(points[1], [200 - 128 / 0.975, 125 - 128 / 0.975])


def _outputs(points_heatmap_units, peak=0.45):
    landmarks = np.zeros((1, 68, 3), np.float32)
    landmarks[0, :, :2] = points_heatmap_units
    heatmaps = np.zeros((1, 68, 64, 64), np.float32)
    heatmaps[0, :, 20, 20] = peak
    return [("landmarks", landmarks), ("heatmaps", heatmaps)]


def test_landmarker_on_a_standin_graph(tmp_path):
    grid = np.stack(np.meshgrid(np.arange(17) * 4, np.arange(4) * 16), -1).reshape(-1, 2)[:68] * 0.75 + 8
    graph = standin_model(tmp_path / "2dfan4.onnx", "input", [1, 3, 256, 256], _outputs(grid))
    result = Fan68Landmarker(cpu_session(graph)).landmarks(np.zeros((400, 500, 3), np.uint8), BOX)
    expected = transform_points(grid * 4, np.linalg.inv(np.vstack([crop_matrix(BOX), [0, 0, 1]]))[:2])
    np.testing.assert_allclose(result.points, expected, rtol=1e-5)
    assert result.points.dtype == np.float32 and result.score == pytest.approx(0.5)


def test_landmarker_feeds_the_centred_crop_scaled_to_unit_range():
    session = RecordingSession([("input", [1, 3, 256, 256])], _outputs(np.full((68, 2), 32.0)))
    frame = np.zeros((400, 500, 3), np.uint8)
    frame[50:200, 100:300] = (255, 0, 0)  # the box, in blue
    Fan68Landmarker(session).landmarks(frame, BOX)
    blob = session.feeds[0]["input"]
    assert blob.shape == (1, 3, 256, 256) and blob.dtype == np.float32
    np.testing.assert_allclose(blob[0, :, 128, 128], [1.0, 0.0, 0.0])  # channels as in the frame
    inside = np.flatnonzero(blob[0, 0, 128] > 0.5)
    assert inside.min() in (30, 31) and inside.max() in (224, 225)  # 195 px wide, centred
    rows = np.flatnonzero(blob[0, 0, :, 128] > 0.5)
    assert rows.min() in (54, 55) and rows.max() in (200, 201)


def test_dark_crops_get_their_contrast_raised():
    rng = np.random.default_rng(0)
    dark = rng.integers(5, 25, (256, 256, 3), dtype=np.uint8)
    assert brighten_if_dark(dark).std() > 1.3 * dark.std()
    bright = rng.integers(100, 200, (256, 256, 3), dtype=np.uint8)
    assert brighten_if_dark(bright) is bright


def test_landmarker_contract_checks():
    with pytest.raises(ModelContractError, match="1 outputs"):
        Fan68Landmarker(RecordingSession([("input", [1, 3, 256, 256])], [("landmarks", np.zeros((1, 68, 3)))]))
    wrong = RecordingSession([("input", [1, 3, 256, 256])], [("a", np.zeros((1, 68, 2))), ("b", np.zeros((1, 68, 64, 64)))])
    with pytest.raises(ModelContractError, match=r"\(1, 68, 3\)"):
        Fan68Landmarker(wrong).landmarks(np.zeros((100, 100, 3), np.uint8), [10, 10, 90, 90])
