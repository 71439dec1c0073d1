"""Write ONNX models (the `ModelProto` protobuf) without the `onnx` package.

    graph = OnnxGraph("face_mesh")
    x = graph.input("input", ("batch", 3, 192, 192))
    y = graph.node("Conv", [x, graph.constant("w", weights)], pads=[0, 0, 1, 1], strides=[2, 2])
    graph.output(y, ("batch", 16, 96, 96))
    data = graph.to_bytes(doc="converted from ...")

Field numbers are those of `onnx.proto` (ONNX's published schema). Arrays are stored as
little-endian `raw_data`, so the bytes written for the same graph are always the same
(converted models are pinned by their SHA-256 like downloaded ones).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from facecache.models.convert.wire import bytes_field, float_field, int_field

IR_VERSION = 7  # the IR of opset 13; every onnxruntime the engine supports reads it
OPSET = 13

FLOAT, INT32, INT64 = 1, 6, 7
_ELEM_TYPES = {np.dtype("float32"): FLOAT, np.dtype("int32"): INT32, np.dtype("int64"): INT64}
# AttributeProto.AttributeType
_ATTR_FLOAT, _ATTR_INT, _ATTR_STRING, _ATTR_TENSOR, _ATTR_FLOATS, _ATTR_INTS = 1, 2, 3, 4, 6, 7


def tensor_proto(name: str, array: np.ndarray) -> bytes:
    array = np.asarray(array)
    elem = _ELEM_TYPES.get(array.dtype)
    if elem is None:
        raise TypeError(f"tensor {name}: dtype {array.dtype} is not written by this converter")
    out = b"".join(int_field(1, d) for d in array.shape)
    out += int_field(2, elem) + bytes_field(8, name)
    return out + bytes_field(9, np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes())


def attribute_proto(name: str, value) -> bytes:
    out = bytes_field(1, name)
    if isinstance(value, bool) or isinstance(value, (int, np.integer)):
        return out + int_field(3, int(value)) + int_field(20, _ATTR_INT)
    if isinstance(value, (float, np.floating)):
        return out + float_field(2, float(value)) + int_field(20, _ATTR_FLOAT)
    if isinstance(value, (str, bytes)):
        return out + bytes_field(4, value) + int_field(20, _ATTR_STRING)
    if isinstance(value, np.ndarray):
        return out + bytes_field(5, tensor_proto(name, value)) + int_field(20, _ATTR_TENSOR)
    values = list(value)
    if all(isinstance(v, (int, np.integer)) for v in values):
        return out + b"".join(int_field(8, int(v)) for v in values) + int_field(20, _ATTR_INTS)
    return out + b"".join(float_field(7, float(v)) for v in values) + int_field(20, _ATTR_FLOATS)


def value_info_proto(name: str, shape: Sequence[int | str], elem: int = FLOAT) -> bytes:
    dims = b"".join(bytes_field(1, bytes_field(2, d) if isinstance(d, str) else int_field(1, d)) for d in shape)
    tensor_type = int_field(1, elem) + bytes_field(2, dims)
    return bytes_field(1, name) + bytes_field(2, bytes_field(1, tensor_type))


class OnnxGraph:
    """Nodes, initializers, inputs and outputs of one graph; names are made unique."""

    def __init__(self, name: str):
        self.name = name
        self._nodes: list[bytes] = []
        self._initializers: list[bytes] = []
        self._inputs: list[bytes] = []
        self._outputs: list[bytes] = []
        self._used: set[str] = set()
        self.op_types: list[str] = []

    def unique(self, hint: str) -> str:
        name, n = hint, 1
        while name in self._used:
            n += 1
            name = f"{hint}_{n}"
        self._used.add(name)
        return name

    def input(self, name: str, shape: Sequence[int | str], elem: int = FLOAT) -> str:
        name = self.unique(name)
        self._inputs.append(value_info_proto(name, shape, elem))
        return name

    def output(self, name: str, shape: Sequence[int | str], elem: int = FLOAT) -> None:
        self._outputs.append(value_info_proto(name, shape, elem))

    def constant(self, hint: str, array: np.ndarray) -> str:
        name = self.unique(hint)
        self._initializers.append(tensor_proto(name, array))
        return name

    def node(self, op_type: str, inputs: Sequence[str], output: str | None = None, **attributes) -> str:
        """Add a node with one output (named `output`, else after the op); returns the output's name."""
        out = self.unique(output or op_type.lower())
        body = b"".join(bytes_field(1, i) for i in inputs) + bytes_field(2, out)
        body += bytes_field(3, self.unique(f"{out}/{op_type}")) + bytes_field(4, op_type)
        body += b"".join(bytes_field(5, attribute_proto(k, v)) for k, v in attributes.items() if v is not None)
        self._nodes.append(body)
        self.op_types.append(op_type)
        return out

    def to_bytes(self, *, producer: str = "facecache", doc: str = "",
                 metadata: Mapping[str, str] | None = None) -> bytes:
        graph = b"".join(bytes_field(1, n) for n in self._nodes) + bytes_field(2, self.name)
        graph += b"".join(bytes_field(5, t) for t in self._initializers)
        graph += b"".join(bytes_field(11, i) for i in self._inputs)
        graph += b"".join(bytes_field(12, o) for o in self._outputs)
        model = int_field(1, IR_VERSION) + bytes_field(2, producer)
        model += bytes_field(6, doc) if doc else b""
        model += bytes_field(7, graph) + bytes_field(8, bytes_field(1, "") + int_field(2, OPSET))
        for k, v in sorted((metadata or {}).items()):
            model += bytes_field(14, bytes_field(1, k) + bytes_field(2, v))
        return model
