"""blocked_prelu: the face mesh's PRelu and zero channel padding as nodes ONNX Runtime keeps in its blocked
layout. Each rewrite alone gives the same numbers; in the real face mesh ONNX Runtime then fuses the
residual additions into the convolutions (other roundings), so the form is named in the analysis
namespace. Small graphs are built with the converters' own writer; the real model comes from the index."""

from __future__ import annotations

import cv2
import numpy as np
import onnx
import onnxruntime as ort
import pytest

from facecache.analysis.factory import AnalysisSettings, build_model_set
from facecache.models.blocked_prelu import blocked_prelu
from facecache.models.convert.onnx_writer import OnnxGraph
from facecache.models.runtime import SessionFactory
from facecache.models.store import ModelStore

# negative, zero and above one; 16 channels, a block of ONNX Runtime's blocked layout (8 or 16 by the CPU)
SLOPES = np.array([-1.1, -0.25, 0.0, 0.25, 1.0, 1.5, 0.5, -0.75] * 2, np.float32)


def _outputs(model: bytes, feed: np.ndarray) -> list[np.ndarray]:
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: feed})


def _values(shape) -> np.ndarray:
    values = np.random.default_rng(5).standard_normal(shape).astype(np.float32) * 100
    values[0, :, 0, :4] = [0.0, 1e-40, -1e-40, -1e30]  # zero, denormals, a large negative
    return values


def _op_types(model: bytes) -> list[str]:
    graph = onnx.load_from_string(model)
    onnx.checker.check_model(graph)
    return [node.op_type for node in graph.graph.node]


def test_prelu_becomes_relus_and_depthwise_convolutions_with_the_same_numbers():
    graph = OnnxGraph("prelu")
    x = graph.input("x", ("batch", len(SLOPES), 5, 6))
    graph.output(graph.node("PRelu", [x, graph.constant("slope", SLOPES.reshape(-1, 1, 1))], output="y"),
                 ("batch", len(SLOPES), 5, 6))
    model = graph.to_bytes()
    blocked = blocked_prelu(model)
    assert _op_types(blocked) == ["Relu", "Conv", "Relu", "Conv", "Add"]
    assert [init.name for init in onnx.load_from_string(blocked).graph.initializer if init.name == "slope"] == []
    values = _values((2, len(SLOPES), 5, 6))
    expected = np.where(values > 0, values, SLOPES.reshape(-1, 1, 1) * values)
    (prelu,), (rewritten,) = _outputs(model, values), _outputs(blocked, values)
    assert np.array_equal(prelu, expected)
    assert np.array_equal(rewritten, prelu)


def _padded_model(pads: list[int]) -> bytes:
    """PRelu (8 channels), a 2 x 2 max pool, then Pad by `pads` (a residual block's shortcut)."""
    graph = OnnxGraph("padding")
    x = graph.input("x", ("batch", len(SLOPES), 8, 8))
    y = graph.node("PRelu", [x, graph.constant("slope", SLOPES.reshape(-1, 1, 1))])
    y = graph.node("MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2])
    y = graph.node("Pad", [y, graph.constant("pads", np.array(pads, np.int64))], output="y")
    graph.output(y, ("batch", len(SLOPES) + pads[5], 4 + pads[2] + pads[6], 4 + pads[3] + pads[7]))
    return graph.to_bytes()


def test_zero_channel_padding_becomes_a_concatenation_with_zeros():
    model = _padded_model([0, 0, 0, 0, 0, len(SLOPES), 0, 0])
    blocked = blocked_prelu(model)
    assert _op_types(blocked)[-3:] == ["MaxPool", "Conv", "Concat"]
    values = _values((2, len(SLOPES), 8, 8))
    (padded,), (rewritten,) = _outputs(model, values), _outputs(blocked, values)
    assert padded.shape == rewritten.shape == (2, 2 * len(SLOPES), 4, 4)
    assert np.array_equal(rewritten, padded)


def test_other_padding_and_slopes_not_per_channel_are_left_as_they_are():
    spatial = blocked_prelu(_padded_model([0, 0, 1, 1, 0, 0, 1, 1]))
    assert _op_types(spatial)[-2:] == ["MaxPool", "Pad"]
    graph = OnnxGraph("last_axis")
    x = graph.input("x", ("batch", 4, len(SLOPES)))
    graph.output(graph.node("PRelu", [x, graph.constant("slope", SLOPES)], output="y"), ("batch", 4, len(SLOPES)))
    assert _op_types(blocked_prelu(graph.to_bytes())) == ["PRelu"]


@pytest.fixture(scope="module")
def face_mesh(default_models_dir) -> bytes:
    return ModelStore(default_models_dir).path("face_mesh_468").read_bytes()


def test_the_face_mesh_in_blocked_form_is_within_a_ten_thousandth_of_a_pixel(face_mesh, portraits):
    """The real face mesh on real portraits: no PRelu or Pad left, landmarks within 1e-3 crop pixels of the
    file's own (measured: 6e-5) and the face flag's logit within 1e-4."""
    blocked = blocked_prelu(face_mesh)
    assert not {"PRelu", "Pad"} & set(_op_types(blocked))
    feed = np.stack([cv2.resize(face, (192, 192), interpolation=cv2.INTER_AREA)[..., ::-1]
                     for face in portraits.values()]).transpose(0, 3, 1, 2).astype(np.float32) / np.float32(255)
    feed = np.ascontiguousarray(feed)
    (points, flag), (blocked_points, blocked_flag) = _outputs(face_mesh, feed), _outputs(blocked, feed)
    assert np.abs(blocked_points - points).max() < 1e-3
    assert np.abs(blocked_flag - flag).max() < 1e-4


def test_the_blocked_form_is_named_in_the_analysis_namespace(default_models_dir, models_dir):
    """Records made with the face mesh as the file is are never served for the blocked form; a model set
    whose files all keep their numbers (MTCNN alone: R-Net and O-Net split, the same to the bit) keeps
    the namespace it had."""
    sessions = SessionFactory("cpu")
    with_mesh = build_model_set(ModelStore(default_models_dir), sessions, AnalysisSettings(recognizer="none"))
    assert with_mesh.settings["cpu_graphs"] == {"face_mesh_468/model": "blocked_prelu"}
    alone = build_model_set(ModelStore(models_dir), sessions, AnalysisSettings(landmarker="none", recognizer="none"))
    assert "cpu_graphs" not in alone.settings
