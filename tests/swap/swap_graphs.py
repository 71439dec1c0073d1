"""Stand-in swapper models for the swap tests (imported by name: tests/swap is on sys.path).

Each graph has the real model's input and output names, shapes and value
ranges, and computes a known function of its inputs, so a test can predict
the output exactly:

- inswapper stand-in: ``output = 1 - target + GAIN * (source . probe)`` (all
  channels), with ``probe`` the first initializer and a 512x512 ``emap`` as the
  last initializer (unused by the graph, as in the real file);
- hyperswap stand-in: ``output = -target + GAIN * (source . probe)`` and
  ``mask = mean over channels of target / 2 + 0.5`` (the target's mean 0..1 value).

A session that keeps the feeds of every run is ``analysis_graphs.ForwardingSession``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
GAIN = 0.1


def probe_vector(seed: int = 1) -> np.ndarray:
    return (np.random.default_rng(seed).normal(0.0, 1.0, 512) / np.sqrt(512)).astype(np.float32)


def emap_matrix(seed: int = 2) -> np.ndarray:
    return (np.random.default_rng(seed).normal(0.0, 1.0, (512, 512)) / np.sqrt(512)).astype(np.float32)


def _save(graph, path: Path) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="facecache-swap-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def _source_term(nodes: list, initializers: list, probe: np.ndarray) -> str:
    """Nodes computing GAIN * (source . probe) as a (1, 1, 1, 1) tensor named 'shift'."""
    initializers.append(numpy_helper.from_array(probe.reshape(512, 1), "probe"))
    initializers.append(numpy_helper.from_array(np.array([1, 1, 1, 1], dtype=np.int64), "shape4"))
    initializers.append(numpy_helper.from_array(np.array(GAIN, dtype=np.float32), "gain"))
    nodes += [
        helper.make_node("MatMul", ["source_f", "probe"], ["dot"]),
        helper.make_node("Reshape", ["dot", "shape4"], ["dot4"]),
        helper.make_node("Mul", ["dot4", "gain"], ["shift"]),
    ]
    return "shift"


def inswapper_standin(path: Path, emap: np.ndarray, probe: np.ndarray, *, fp16: bool = False,
                      target_name: str = "target") -> Path:
    """A stand-in inswapper_128 (``fp16``: float16 inputs and output, like a half-precision export)."""
    io_type = TensorProto.FLOAT16 if fp16 else TensorProto.FLOAT
    nodes, initializers = [], []
    if fp16:
        nodes += [helper.make_node("Cast", ["source"], ["source_f"], to=TensorProto.FLOAT),
                  helper.make_node("Cast", [target_name], ["target_f"], to=TensorProto.FLOAT)]
    else:
        nodes += [helper.make_node("Identity", ["source"], ["source_f"]),
                  helper.make_node("Identity", [target_name], ["target_f"])]
    shift = _source_term(nodes, initializers, probe)
    initializers.append(numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one"))
    nodes += [helper.make_node("Sub", ["one", "target_f"], ["inverted"]),
              helper.make_node("Add", ["inverted", shift], ["output_f"])]
    nodes.append(helper.make_node("Cast", ["output_f"], ["output"], to=TensorProto.FLOAT16) if fp16
                 else helper.make_node("Identity", ["output_f"], ["output"]))
    initializers.append(numpy_helper.from_array(np.asarray(emap, dtype=np.float16 if fp16 else np.float32), "emap"))
    graph = helper.make_graph(
        nodes, "inswapper_standin",
        [helper.make_tensor_value_info(target_name, io_type, [1, 3, 128, 128]),
         helper.make_tensor_value_info("source", io_type, [1, 512])],
        [helper.make_tensor_value_info("output", io_type, [1, 3, 128, 128])],
        initializers)
    return _save(graph, path)


def hyperswap_standin(path: Path, probe: np.ndarray, *, mask_first: bool = False) -> Path:
    """A stand-in hyperswap_1a_256 with outputs ``output`` and ``mask``."""
    nodes = [helper.make_node("Identity", ["source"], ["source_f"])]
    initializers = []
    shift = _source_term(nodes, initializers, probe)
    initializers.append(numpy_helper.from_array(np.array(0.5, dtype=np.float32), "half"))
    nodes += [
        helper.make_node("Neg", ["target"], ["negated"]),
        helper.make_node("Add", ["negated", shift], ["output"]),
        helper.make_node("ReduceMean", ["target"], ["channel_mean"], axes=[1], keepdims=1),
        helper.make_node("Mul", ["channel_mean", "half"], ["half_mean"]),
        helper.make_node("Add", ["half_mean", "half"], ["mask"]),
    ]
    outputs = [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3, 256, 256]),
               helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 1, 256, 256])]
    if mask_first:
        outputs.reverse()
    graph = helper.make_graph(
        nodes, "hyperswap_standin",
        [helper.make_tensor_value_info("source", TensorProto.FLOAT, [1, 512]),
         helper.make_tensor_value_info("target", TensorProto.FLOAT, [1, 3, 256, 256])],
        outputs, initializers)
    return _save(graph, path)


def cpu_session(path: Path) -> ort.InferenceSession:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])

