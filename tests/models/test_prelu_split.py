"""split_prelu: PRelu as Relu(x) + slope * Min(x, 0), the same numbers to the bit on ONNX Runtime's CPU
provider, for a small graph and for the embedded default's real models."""

from __future__ import annotations

import cv2
import numpy as np
import onnx
import onnxruntime as ort
import pytest

from facecache.analysis.mtcnn_steps import net_batch
from facecache.models.convert.onnx_writer import OnnxGraph
from facecache.models.prelu_split import split_prelu
from facecache.models.store import ModelStore


def _outputs(model: bytes, feed: np.ndarray) -> list[np.ndarray]:
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: feed})


def _prelu_model(slopes: np.ndarray) -> bytes:
    graph = OnnxGraph("prelu")
    x = graph.input("x", ("batch", len(slopes), 5, 6))
    graph.output(graph.node("PRelu", [x, graph.constant("slope", slopes.reshape(-1, 1, 1))], output="y"),
                 ("batch", len(slopes), 5, 6))
    return graph.to_bytes()


def test_prelu_becomes_four_fast_nodes_with_the_same_numbers():
    slopes = np.array([-1.1, 0.0, 0.25, 1.5], np.float32)
    model = _prelu_model(slopes)
    split = split_prelu(model)
    graph = onnx.load_from_string(split)
    onnx.checker.check_model(graph)
    assert [node.op_type for node in graph.graph.node] == ["Relu", "Min", "Mul", "Add"]
    values = np.random.default_rng(3).standard_normal((2, 4, 5, 6)).astype(np.float32) * 100
    values[0, :, 0, :4] = [0.0, 1e-40, -1e-40, -1e30]  # zero, denormals, a large negative
    expected = np.where(values > 0, values, slopes.reshape(-1, 1, 1) * values)
    (prelu,), (rewritten,) = _outputs(model, values), _outputs(split, values)
    assert np.array_equal(prelu, expected)
    assert np.array_equal(rewritten, prelu)


def test_models_without_prelu_or_with_an_old_opset_are_left_as_they_are():
    graph = OnnxGraph("relu")
    x = graph.input("x", (1, 2))
    graph.output(graph.node("Relu", [x], output="y"), (1, 2))
    model = graph.to_bytes()
    assert split_prelu(model) is model
    old = onnx.load_from_string(_prelu_model(np.ones(2, np.float32)))
    old.opset_import[0].version = 7  # Min broadcasts from opset 8
    assert split_prelu(old.SerializeToString()) == old.SerializeToString()


@pytest.fixture(scope="module")
def default_models(default_models_dir) -> dict:
    store = ModelStore(default_models_dir)
    return {**store.paths("mtcnn"), "face_mesh": store.path("face_mesh_468")}


def test_the_default_models_give_the_same_numbers_to_the_bit(default_models, portraits):
    """MTCNN's three networks and the face mesh on real portraits: every output equal, PRelu gone."""
    faces = [portraits["grace_hopper"], portraits["astronaut"]]
    feeds = {
        "pnet": net_batch(cv2.resize(faces[0], (300, 256), interpolation=cv2.INTER_AREA)[None]),
        "rnet": net_batch(np.stack([cv2.resize(face, (24, 24), interpolation=cv2.INTER_AREA) for face in faces])),
        "onet": net_batch(np.stack([cv2.resize(face, (48, 48), interpolation=cv2.INTER_AREA) for face in faces])),
        "face_mesh": np.stack([cv2.resize(face, (192, 192), interpolation=cv2.INTER_AREA)[..., ::-1]
                               for face in faces]).transpose(0, 3, 1, 2).astype(np.float32) / np.float32(255),
    }
    for name, feed in feeds.items():
        model = default_models[name].read_bytes()
        split = split_prelu(model)
        assert "PRelu" not in {node.op_type for node in onnx.load_from_string(split).graph.node}, name
        feed = np.ascontiguousarray(feed)
        for before, after in zip(_outputs(model, feed), _outputs(split, feed)):
            assert np.array_equal(before, after), name
