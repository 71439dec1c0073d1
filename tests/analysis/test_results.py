import numpy as np
import pytest

from analysis_graphs import RecordingSession
from facecache.analysis.errors import FrameError, ModelContractError, ModelRunError
from facecache.analysis.frames import check_bgr_frame
from facecache.analysis.results import Detection, Landmarks68
from facecache.analysis.session import require_inputs, run_model, static_input_hw
from facecache.errors import FaceCacheError


def test_detection_holds_private_read_only_float32_arrays():
    box = np.array([1, 2, 30, 42], np.int64)
    face = Detection(box, np.float64(0.75), [[1, 2]] * 5)
    box[0] = 99
    assert face.box.tolist() == [1, 2, 30, 42] and face.box.dtype == np.float32
    assert face.kps5.shape == (5, 2) and isinstance(face.score, float)
    assert (face.width, face.height) == (29.0, 40.0)
    with pytest.raises(ValueError):
        face.box[0] = 5
    with pytest.raises(ValueError, match=r"Detection.kps5 must have shape \(5, 2\)"):
        Detection(box, 0.5, np.zeros((68, 2)))


def test_strided_views_are_accepted_as_contiguous_frames():
    frame = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3)
    mirrored = frame[:, ::-1]
    checked = check_bgr_frame(mirrored)
    assert checked.flags.c_contiguous
    np.testing.assert_array_equal(checked, mirrored)
    assert check_bgr_frame(frame) is frame


def test_landmarks68_reduce_to_five_points():
    points = np.zeros((68, 2))
    points[36:42] = [10, 20]
    points[42:48] = [30, 20]
    points[30], points[48], points[54] = [20, 30], [12, 40], [28, 40]
    marks = Landmarks68(points, 0.8)
    np.testing.assert_allclose(marks.kps5(), [[10, 20], [30, 20], [20, 30], [12, 40], [28, 40]])


@pytest.mark.parametrize(
    "frame, hint",
    [
        (np.zeros((10, 10), np.uint8), "COLOR_GRAY2BGR"),
        (np.zeros((10, 10, 4), np.uint8), "COLOR_BGRA2BGR"),
        (np.zeros((10, 10, 3), np.float32), "astype"),
        (np.zeros((2, 10, 10, 3), np.uint8), "one frame at a time"),
        ([[0]], "numpy array"),
    ],
)
def test_frames_that_are_not_bgr_uint8_are_refused_with_a_hint(frame, hint):
    with pytest.raises(FrameError, match=hint) as caught:
        check_bgr_frame(frame)
    assert isinstance(caught.value, FaceCacheError)


def test_session_checks_and_failures():
    session = RecordingSession([("input", [1, 3, 640, 640])], [("out", np.zeros(2))])
    require_inputs(session, "m", ["input"])
    with pytest.raises(ModelContractError, match=r"m: the ONNX graph has inputs \['input'\], expected \['x'\]"):
        require_inputs(session, "m", ["x"])
    assert static_input_hw(session, "input") == (640, 640)
    dynamic = RecordingSession([("input", [1, 3, "h", None])], [("out", np.zeros(2))])
    assert static_input_hw(dynamic, "input") == (None, None)

    class Broken(RecordingSession):
        def run(self, names, feeds):
            raise RuntimeError("bad allocation")

    with pytest.raises(ModelRunError, match="m: ONNX Runtime failed \\(bad allocation\\).*reinstall"):
        run_model(Broken([("input", [1])], [("out", np.zeros(1))]), "m", ["out"], {"input": np.zeros(1)})
