"""Stand-in models for the analysis tests.

``standin_model`` writes a small ONNX graph with a model's exact input name,
shape and dtype whose outputs are fixed tensors (plus zero times the mean of
the input, so the input is really consumed and ONNX Runtime checks its
shape). ``echo_model`` outputs the first values of the flattened input, so a
test can see exactly what an adapter fed. ``batched_landmarker_model`` and
``echo_model(..., batch="N")`` leave the batch axis open, as graphs that take
all faces of a frame in one run. ``RecordingSession`` is a plain Python session
that returns fixed outputs and keeps the feeds; ``ForwardingSession`` wraps a real
session and keeps the feeds (and batch sizes) of its runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OPSET = 13


def _write(graph, path: Path) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="facecache-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def standin_model(path: Path, input_name: str, input_shape: Sequence, outputs: Sequence[tuple[str, np.ndarray]]) -> Path:
    nodes = [
        helper.make_node("ReduceMean", [input_name], ["mean"], keepdims=0),
        helper.make_node("Mul", ["mean", "zero"], ["nothing"]),
    ]
    initializers = [numpy_helper.from_array(np.array(0.0, dtype=np.float32), "zero")]
    graph_outputs = []
    for name, value in outputs:
        value = np.asarray(value, dtype=np.float32)
        initializers.append(numpy_helper.from_array(value, f"{name}_value"))
        nodes.append(helper.make_node("Add", [f"{name}_value", "nothing"], [name]))
        graph_outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(value.shape)))
    graph = helper.make_graph(
        nodes,
        "standin",
        [helper.make_tensor_value_info(input_name, TensorProto.FLOAT, list(input_shape))],
        graph_outputs,
        initializers,
    )
    return _write(graph, path)


def echo_model(path: Path, input_name: str, input_shape: Sequence, output_name: str, count: int,
               batch: int | str = 1) -> Path:
    """Output (batch, count): the first ``count`` values of each flattened input."""
    nodes = [
        helper.make_node("Flatten", [input_name], ["flat"], axis=1),
        helper.make_node("Slice", ["flat", "starts", "ends", "axes"], [output_name]),
    ]
    initializers = [
        numpy_helper.from_array(np.array([0], dtype=np.int64), "starts"),
        numpy_helper.from_array(np.array([count], dtype=np.int64), "ends"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "axes"),
    ]
    graph = helper.make_graph(
        nodes,
        "echo",
        [helper.make_tensor_value_info(input_name, TensorProto.FLOAT, [batch, *list(input_shape)[1:]])],
        [helper.make_tensor_value_info(output_name, TensorProto.FLOAT, [batch, count])],
        initializers,
    )
    return _write(graph, path)


def batched_landmarker_model(path: Path, points: np.ndarray) -> Path:
    """A 2DFAN4 stand-in with an open batch axis: input (N, 3, 256, 256); outputs
    landmarks_xyscore (N, 68, 3) = ``points`` plus each crop's mean (so every face gets its own
    answer) and heatmaps (N, 68, 64, 64) of 0.8."""
    nodes = [
        helper.make_node("ReduceMean", ["input"], ["mean"], axes=[1, 2, 3], keepdims=1),
        helper.make_node("Reshape", ["mean", "per_face"], ["mean3"]),
        helper.make_node("Add", ["points", "mean3"], ["landmarks_xyscore"]),
        helper.make_node("Mul", ["mean", "zero"], ["nothing"]),
        helper.make_node("Add", ["heat", "nothing"], ["heatmaps"]),
    ]
    initializers = [
        numpy_helper.from_array(np.asarray(points, np.float32).reshape(1, 68, 3), "points"),
        numpy_helper.from_array(np.array([-1, 1, 1], np.int64), "per_face"),
        numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
        numpy_helper.from_array(np.full((1, 68, 64, 64), 0.8, np.float32), "heat"),
    ]
    graph = helper.make_graph(
        nodes, "batched_landmarker",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 256, 256])],
        [helper.make_tensor_value_info("landmarks_xyscore", TensorProto.FLOAT, ["N", 68, 3]),
         helper.make_tensor_value_info("heatmaps", TensorProto.FLOAT, ["N", 68, 64, 64])],
        initializers,
    )
    return _write(graph, path)


def cpu_session(path: Path):
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


@dataclass
class _Arg:
    name: str
    shape: list


class RecordingSession:
    """A session returning fixed outputs (or what ``respond(feeds)`` returns), keeping every feed."""

    def __init__(self, inputs, outputs, respond=None):
        self._inputs = [_Arg(name, list(shape)) for name, shape in inputs]
        self._outputs = [_Arg(name, list(np.shape(value))) for name, value in outputs]
        self._values = {name: np.asarray(value, dtype=np.float32) for name, value in outputs}
        self._respond = respond
        self.feeds: list[dict] = []

    def get_inputs(self):
        return self._inputs

    def get_outputs(self):
        return self._outputs

    def run(self, names, feeds):
        self.feeds.append({k: np.array(v) for k, v in feeds.items()})
        values = self._respond(feeds) if self._respond else self._values
        return [values[name] for name in (names or [o.name for o in self._outputs])]


class ForwardingSession:
    """A real ONNX Runtime session wrapped: every run is forwarded, and its feeds are kept."""

    def __init__(self, inner):
        self.inner = inner
        self.feeds: list[dict] = []

    def get_inputs(self):
        return self.inner.get_inputs()

    def get_outputs(self):
        return self.inner.get_outputs()

    def run(self, names, feeds):
        self.feeds.append({k: np.array(v, copy=True) for k, v in feeds.items()})
        return self.inner.run(names, feeds)

    @property
    def batches(self) -> list[int]:
        """The batch size fed to each run."""
        return [len(next(iter(feed.values()))) for feed in self.feeds]
