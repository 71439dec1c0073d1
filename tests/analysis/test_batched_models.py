"""The landmarker and the recognizer take all faces of a frame in one session run when the graph
has an open batch axis, and give the same answers as one run per face (stand-in graphs with the
FaceFusion models' input and output names; their values are not the real models')."""

import numpy as np
import pytest

from analysis_graphs import ForwardingSession, batched_landmarker_model, cpu_session, echo_model, standin_model
from facecache.analysis.analyzer import FaceAnalyzer, ModelSet
from facecache.analysis.arcface import ArcFaceRecognizer
from facecache.analysis.fan68 import Fan68Landmarker
from facecache.analysis.results import Detection
from facecache.store.cache import FaceCache

POINTS = np.stack([np.linspace(60, 200, 68), np.linspace(70, 190, 68), np.zeros(68)], axis=1).astype(np.float32)


class SixFaces:
    """A detector stand-in: six faces spread over the frame."""

    def describe(self):
        return {"model": "six-faces"}

    def detect(self, frame):
        faces = []
        for i in range(6):
            x, y = 40 + 300 * (i % 3), 40 + 300 * (i // 3)
            kps = np.array([[x + 60, y + 80], [x + 140, y + 80], [x + 100, y + 120], [x + 70, y + 160],
                            [x + 130, y + 160]], np.float32)
            faces.append(Detection(np.array([x, y, x + 200, y + 220], np.float32), 0.99, kps))
        return faces


@pytest.fixture
def frame():
    return np.random.default_rng(3).integers(0, 256, (640, 960, 3), dtype=np.uint8)


@pytest.fixture
def graphs(tmp_path):
    fixed = tmp_path / "fixed"
    fixed.mkdir()
    return {
        "batched_landmarker": batched_landmarker_model(tmp_path / "2dfan4_batched.onnx", POINTS),
        "batched_recognizer": echo_model(tmp_path / "arcface_batched.onnx", "input", (1, 3, 112, 112), "output", 512,
                                         batch="N"),
        "fixed_recognizer": echo_model(fixed / "arcface.onnx", "input", (1, 3, 112, 112), "output", 512),
        "fixed_landmarker": standin_model(fixed / "2dfan4.onnx", "input", (1, 3, 256, 256),
                                          [("landmarks_xyscore", POINTS[None]),
                                           ("heatmaps", np.full((1, 68, 64, 64), 0.8, np.float32))]),
    }


def analyzer(tmp_path, landmarker, recognizer):
    models = ModelSet({"six": "0" * 32}, {"test": "batched"}, SixFaces, lambda: landmarker, lambda: recognizer)
    return FaceAnalyzer(FaceCache(tmp_path / "cache"), models)


def test_six_faces_go_through_each_model_in_one_run(tmp_path, graphs, frame):
    landmark_session = ForwardingSession(cpu_session(graphs["batched_landmarker"]))
    embed_session = ForwardingSession(cpu_session(graphs["batched_recognizer"]))
    analysis = analyzer(tmp_path, Fan68Landmarker(landmark_session), ArcFaceRecognizer(embed_session))
    record = analysis.analyze_frame(frame)
    assert len(record.faces) == 6
    assert landmark_session.batches == [6] and embed_session.batches == [6]  # one run per frame, not per face
    assert analysis.inferences.as_dict() == {"detect": 1, "landmark": 6, "embed": 6}

    # The same answers as one run per face.
    single_landmarker = Fan68Landmarker(cpu_session(graphs["batched_landmarker"]))
    single_recognizer = ArcFaceRecognizer(cpu_session(graphs["batched_recognizer"]))
    for face in record.faces:
        alone = single_landmarker.landmarks(frame, face.box, 0).points
        assert np.allclose(face.landmarks68, alone, atol=1e-3)
        assert np.array_equal(face.embedding, single_recognizer.embed(frame, face.kps5))
    assert len({face.landmarks68[0, 0].round(3) for face in record.faces}) > 1  # each face its own answer


def test_a_graph_with_a_fixed_batch_of_one_runs_once_per_face(tmp_path, graphs, frame):
    landmark_session = ForwardingSession(cpu_session(graphs["fixed_landmarker"]))
    embed_session = ForwardingSession(cpu_session(graphs["fixed_recognizer"]))
    batched = analyzer(tmp_path / "a", Fan68Landmarker(cpu_session(graphs["batched_landmarker"])),
                       ArcFaceRecognizer(cpu_session(graphs["batched_recognizer"]))).analyze_frame(frame)
    record = analyzer(tmp_path / "b", Fan68Landmarker(landmark_session),
                      ArcFaceRecognizer(embed_session)).analyze_frame(frame)
    assert landmark_session.batches == [1] * 6 and embed_session.batches == [1] * 6
    for face, other in zip(record.faces, batched.faces):
        assert np.array_equal(face.embedding, other.embedding)
