"""PRelu written as Relu(x) + slope * Min(x, 0) for ONNX Runtime's CPU provider: the same numbers, faster.

ONNX Runtime's CPU PRelu is a slow broadcasting kernel, and it leaves the blocked channel layout the
convolutions run in, so every PRelu pays two layout changes as well. The face mesh has 23 of them:
measured here (onnxruntime 1.32, 2 threads, six faces a run), PRelu and those layout changes were
17 of the graph's 27 ms. Relu, Min, Mul and Add are ONNX Runtime's fast element-wise kernels: the
face mesh costs 25-40 % less CPU, R-Net 33 %, O-Net 5 %. (Not every graph gains: MTCNN's P-Net, over
whole frames, was 5-10 % slower; the catalog says which files are split, `ModelFile.split_prelu_on_cpu`.)

The numbers are the same to the bit: where x > 0, x + slope * 0 is x; where x < 0, 0 + slope * x is
slope * x; Relu, Min and Add return their inputs' values exactly, and the one product is PRelu's own.
(Only a zero's sign can differ, and a zero adds nothing to the sums that follow.) So a model file keeps
its digest, and an analysis made with either graph is the same record.

The model is rewritten in its protobuf bytes (`convert/wire.py`), as the converters write models:
the `onnx` package is not one of the extension's wheels.
"""

from __future__ import annotations

import numpy as np

from facecache.models.convert import wire
from facecache.models.convert.onnx_writer import tensor_proto

_MODEL_GRAPH, _MODEL_OPSET = 7, 8
_GRAPH_NODE, _GRAPH_INITIALIZER = 1, 5
_NODE_INPUT, _NODE_OUTPUT, _NODE_NAME, _NODE_OP, _NODE_DOMAIN = 1, 2, 3, 4, 7
_OPSET_DOMAIN, _OPSET_VERSION = 1, 2
_BROADCASTING_MIN = 8  # the first opset whose Min broadcasts a scalar
_ZERO = "prelu_split/zero"


def split_prelu(model: bytes) -> bytes:
    """The model with each PRelu node replaced by Relu, Min, Mul and Add (see the module doc); the bytes
    unchanged when it has no PRelu or its opset is too old for a broadcasting Min."""
    if b"PRelu" not in model or _default_opset(model) < _BROADCASTING_MIN:
        return model
    return b"".join(_split_graph(value) if number == _MODEL_GRAPH and kind == wire.BYTES
                    else _field(number, kind, value) for number, kind, value in wire.fields(model))


def _split_graph(graph) -> bytes:
    parts, split = [], False  # joined once: a graph's initializers can be hundreds of megabytes
    for number, kind, value in wire.fields(graph):
        nodes = _split_node(value) if number == _GRAPH_NODE and kind == wire.BYTES else None
        if nodes is None:
            parts.append(_field(number, kind, value))
        else:
            parts += [wire.bytes_field(_GRAPH_NODE, node) for node in nodes]
            split = split or len(nodes) > 1
    if split:
        parts.append(wire.bytes_field(_GRAPH_INITIALIZER, tensor_proto(_ZERO, np.zeros((), np.float32))))
    return wire.bytes_field(_MODEL_GRAPH, b"".join(parts))


def _split_node(node) -> list[bytes]:
    """[the node] as it is, or the four nodes of a PRelu."""
    inputs, outputs, op_type, domain = [], [], "", ""
    for number, kind, value in wire.fields(node):
        if kind != wire.BYTES:
            continue
        if number == _NODE_INPUT:
            inputs.append(wire.text(value))
        elif number == _NODE_OUTPUT:
            outputs.append(wire.text(value))
        elif number == _NODE_OP:
            op_type = wire.text(value)
        elif number == _NODE_DOMAIN:
            domain = wire.text(value)
    if op_type != "PRelu" or domain not in ("", "ai.onnx") or len(inputs) != 2 or len(outputs) != 1:
        return [bytes(node)]
    (x, slope), (y,) = inputs, outputs
    positive, negative, scaled = (f"{y}/prelu_split/{part}" for part in ("relu", "min", "mul"))
    return [_node("Relu", [x], positive), _node("Min", [x, _ZERO], negative),
            _node("Mul", [negative, slope], scaled), _node("Add", [positive, scaled], y)]


def _node(op_type: str, inputs: list[str], output: str) -> bytes:
    return (b"".join(wire.bytes_field(_NODE_INPUT, name) for name in inputs) + wire.bytes_field(_NODE_OUTPUT, output)
            + wire.bytes_field(_NODE_NAME, f"{output}/{op_type}") + wire.bytes_field(_NODE_OP, op_type))


def _default_opset(model: bytes) -> int:
    for number, kind, value in wire.fields(model):
        if number == _MODEL_OPSET and kind == wire.BYTES:
            fields = {n: v for n, _, v in wire.fields(value)}
            if wire.text(fields.get(_OPSET_DOMAIN, b"")) in ("", "ai.onnx"):
                return int(fields.get(_OPSET_VERSION, 0))
    return 0


def _field(number: int, kind: int, value) -> bytes:
    """One field written back as it was read."""
    if kind == wire.VARINT:
        return wire.int_field(number, value)
    if kind == wire.BYTES:
        return wire.bytes_field(number, bytes(value))
    return wire.key(number, kind) + value  # fixed 32- and 64-bit fields come as their bytes
