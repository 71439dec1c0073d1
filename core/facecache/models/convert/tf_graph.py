"""Convert a frozen TensorFlow graph (`GraphDef`, a `.pb` file) into ONNX, without TensorFlow.

Covers the operators of FaceNet's frozen Inception-ResNet-v1 (Conv2D, BiasAdd, Relu,
ConcatV2, Add, Mul, MaxPool, AvgPool, MatMul, Reshape, FusedBatchNorm, and the L2
normalisation: Square, Sum, Maximum, Rsqrt); any other operator stops the conversion with
its name.

Layout: TensorFlow works in NHWC, the ONNX graph in NCHW: the image input becomes
(batch, C, H, W), 4-D values stay NCHW, and a Reshape from or to 4-D goes through NHWC so
it orders elements exactly as TensorFlow does. The graph was frozen for one image, so a
leading 1 in a Reshape's target shape is the batch: it becomes 0 ("copy the input's
dimension"), which makes the batch axis dynamic.

Facts used: the GraphDef, NodeDef, AttrValue, TensorProto and TensorShapeProto field numbers
and the DataType numbers of TensorFlow's published `.proto` files, and each operator's
documented semantics.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from facecache.models.convert.errors import DAMAGED_INPUT, ConversionError, element_count
from facecache.models.convert.onnx_writer import OnnxGraph
from facecache.models.convert.wire import MAX_PACKED_VALUES, WireError, fields, packed_floats, packed_varints, text

_DTYPES = {1: np.float32, 3: np.int32, 9: np.int64}  # DT_FLOAT, DT_INT32, DT_INT64
_TO_NHWC, _TO_NCHW = [0, 2, 3, 1], [0, 3, 1, 2]


@dataclass
class Node:
    name: str
    op: str
    inputs: list[str] = field(default_factory=list)  # data inputs only ("^control" inputs dropped)
    attrs: dict[str, object] = field(default_factory=dict)


def read_graph(data: bytes) -> dict[str, Node]:
    """The nodes of a GraphDef by name, attributes decoded to Python values and numpy arrays.
    Damaged bytes raise ConversionError: every length is checked against the bytes that remain
    (`wire`) and every tensor's size against its shape and MAX_TENSOR_ELEMENTS before it is made."""
    nodes: dict[str, Node] = {}
    try:
        for number, _, value in fields(data):
            if number == 1:  # GraphDef.node
                node = _node(value)
                nodes[node.name] = node
    except WireError as exc:
        raise ConversionError(f"not a readable TensorFlow GraphDef ({exc})") from None
    except DAMAGED_INPUT as exc:
        raise ConversionError(f"not a readable TensorFlow GraphDef ({type(exc).__name__}: {exc})") from None
    if not nodes:
        raise ConversionError("the file holds no TensorFlow graph nodes")
    return nodes


def _node(buf) -> Node:
    node = Node("", "")
    for number, _, value in fields(buf):
        if number == 1:
            node.name = text(value)
        elif number == 2:
            node.op = text(value)
        elif number == 3:
            name = text(value)
            if not name.startswith("^"):
                node.inputs.append(name[:-2] if name.endswith(":0") else name)
        elif number == 5:  # map<string, AttrValue> entry
            entry = dict((n, v) for n, _, v in fields(value))
            node.attrs[text(entry.get(1, b""))] = _attr(entry.get(2, b""))
    return node


def _attr(buf):
    """AttrValue -> str, int, float, bool, list, numpy array (tensor) or shape list."""
    for number, wire, value in fields(buf):
        if number == 2:
            return text(value)
        if number in (3, 6):
            return value
        if number == 4:
            return struct.unpack("<f", value)[0]
        if number == 5:
            return bool(value)
        if number == 7:
            return _shape(value)
        if number == 8:
            return _tensor(value)
        if number == 1:  # ListValue: ints (3) or floats (4) are all this converter needs
            items: list = []
            for n, w, v in fields(value):
                items += packed_varints(v, w) if n == 3 else packed_floats(v, w) if n == 4 else []
            return items
    return None


def _shape(buf) -> list[int]:
    dims = []
    for number, _, value in fields(buf):
        if number == 2:
            dims.append(next((packed_varints(v, w)[0] for n, w, v in fields(value) if n == 1), -1))
    return dims


def _tensor(buf) -> np.ndarray:
    dtype, shape, content, values = 1, [], None, []
    for number, wire, value in fields(buf):
        if number == 1:
            dtype = value
        elif number == 2:
            shape = _shape(value)
        elif number == 4:
            content = bytes(value)
        elif number == 5:
            values += packed_floats(value, wire)
        elif number in (7, 10):
            values += packed_varints(value, wire)
        if len(values) > MAX_PACKED_VALUES:
            raise ConversionError(f"a constant lists more than {MAX_PACKED_VALUES} values: the file is damaged")
    if dtype not in _DTYPES:
        raise ConversionError(f"a constant has TensorFlow dtype {dtype}; only float32, int32 and int64 convert")
    np_type = np.dtype(_DTYPES[dtype])
    size = element_count(shape, "a constant")  # checked before anything of that size is made
    if content is not None:
        if len(content) != size * np_type.itemsize:
            raise ConversionError(f"a constant holds {len(content)} bytes for shape {shape} of {np_type}")
        array = np.frombuffer(content, np_type.newbyteorder("<")).astype(np_type)
    else:  # small constants list their values; one value fills the whole tensor
        array = np.array(values or [0], np_type)
        array = np.full(size, array[0], np_type) if array.size == 1 else array
    if array.size != size:
        raise ConversionError(f"a constant holds {array.size} values for shape {shape}")
    return array.reshape(shape)


def graphdef_to_onnx(data: bytes, *, graph_name: str, input_name: str, output_name: str,
                     onnx_input: str = "input", onnx_output: str = "output", doc: str = "") -> bytes:
    """ONNX bytes computing `output_name` of the frozen graph `data` from its image input `input_name`."""
    nodes = read_graph(data)
    for name in (input_name, output_name):
        if name not in nodes:
            raise ConversionError(f"the graph has no node {name!r}")
    try:
        return _Converter(nodes, graph_name).convert(input_name, output_name, onnx_input, onnx_output, doc)
    except DAMAGED_INPUT as exc:
        raise ConversionError(f"the TensorFlow graph does not convert ({type(exc).__name__}: {exc})") from None


class _Converter:
    def __init__(self, nodes: dict[str, Node], graph_name: str):
        self.nodes = nodes
        self.graph = OnnxGraph(graph_name)
        self.values: dict[str, tuple[str, int]] = {}  # TF node -> (ONNX value, rank)

    def convert(self, input_name: str, output_name: str, onnx_input: str, onnx_output: str, doc: str) -> bytes:
        placeholder = self.nodes[input_name]
        shape = placeholder.attrs.get("shape") or []
        if placeholder.op != "Placeholder" or not isinstance(shape, list) or len(shape) != 4:
            raise ConversionError(f"{input_name} is not an NHWC image placeholder (op {placeholder.op}, shape {shape})")
        _, height, width, channels = shape
        self.values[input_name] = (self.graph.input(onnx_input, ("batch", channels, height, width)), 4)
        value, rank = self._value(output_name)
        self.graph.node("Identity", [value], output=onnx_output)
        self.graph.output(onnx_output, ("batch", *["d%d" % i for i in range(1, rank)]))
        return self.graph.to_bytes(doc=doc)

    def _const(self, name: str) -> np.ndarray:
        node = self.nodes.get(name)
        if node is None or node.op != "Const":
            raise ConversionError(f"{name} must be a constant")
        return node.attrs["value"]

    def _value(self, name: str) -> tuple[str, int]:
        """Convert the node producing `name` (and, first, its inputs): a depth-first walk on a stack of
        its own (no recursion limit), each node once; a node met again while its own inputs are
        being converted closes a cycle, which a GraphDef must not have."""
        stack = [(name, False)]
        on_path: set[str] = set()  # the nodes whose inputs are being converted
        while stack:
            current, inputs_done = stack.pop()
            if current in self.values:
                continue
            node = self.nodes.get(current)
            if node is None:
                raise ConversionError(f"the graph refers to a missing node {current!r}")
            if inputs_done:
                self.values[current] = self._convert(node)
                on_path.discard(current)
                continue
            if current in on_path:
                raise ConversionError(f"the graph has a cycle through {current!r}: the file is damaged")
            on_path.add(current)
            stack.append((current, True))
            stack += [(i, False) for i in node.inputs if i not in self.values and self.nodes.get(i, node).op != "Const"]
        return self.values[name]

    def _convert(self, node: Node) -> tuple[str, int]:
        try:
            return self._convert_node(node)
        except DAMAGED_INPUT as exc:
            raise ConversionError(f"{node.name} ({node.op}): its inputs or attributes do not fit the operator "
                                  f"({type(exc).__name__}: {exc})") from None

    def _convert_node(self, node: Node) -> tuple[str, int]:
        g, op, name = self.graph, node.op, node.name
        data = [self.values[i] for i in node.inputs if i in self.values]
        if op in ("Conv2D", "MaxPool", "AvgPool"):
            if node.attrs.get("data_format", "NHWC") != "NHWC":
                raise ConversionError(f"{name}: data format {node.attrs.get('data_format')} is not supported")
            strides = node.attrs.get("strides", [1, 1, 1, 1])[1:3]
            padding = {"SAME": "SAME_UPPER", "VALID": "VALID"}.get(node.attrs.get("padding"))
            if padding is None:
                raise ConversionError(f"{name}: padding {node.attrs.get('padding')} is not supported")
            if op == "Conv2D":
                weights = self._const(node.inputs[1]).transpose(3, 2, 0, 1)  # HWIO -> OIHW
                dilations = node.attrs.get("dilations", [1, 1, 1, 1])[1:3]
                return g.node("Conv", [data[0][0], g.constant(f"{name}/weights", np.ascontiguousarray(weights))],
                              output=name, kernel_shape=list(weights.shape[2:]), strides=strides,
                              dilations=dilations, auto_pad=padding), 4
            kernel = node.attrs["ksize"][1:3]
            return g.node("MaxPool" if op == "MaxPool" else "AveragePool", [data[0][0]], output=name,
                          kernel_shape=kernel, strides=strides, auto_pad=padding), 4
        if op == "BiasAdd":
            value, rank = data[0]
            bias = self._const(node.inputs[1])
            bias = bias.reshape(-1, 1, 1) if rank == 4 else bias
            return g.node("Add", [value, g.constant(f"{name}/bias", bias)], output=name), rank
        if op in ("Relu", "Square", "Rsqrt"):
            value, rank = data[0]
            if op == "Relu":
                return g.node("Relu", [value], output=name), rank
            if op == "Square":
                return g.node("Mul", [value, value], output=name), rank
            return g.node("Reciprocal", [g.node("Sqrt", [value])], output=name), rank
        if op in ("Add", "AddV2", "Mul", "Maximum"):
            inputs, rank = self._binary_inputs(node)
            onnx_op = {"Add": "Add", "AddV2": "Add", "Mul": "Mul", "Maximum": "Max"}[op]
            return g.node(onnx_op, inputs, output=name), rank
        if op == "ConcatV2":
            axis = int(self._const(node.inputs[-1]))
            rank = data[0][1]
            if rank == 4:
                axis = _TO_NCHW.index(axis % 4)
            return g.node("Concat", [v for v, _ in data], output=name, axis=axis), rank
        if op == "MatMul":
            if node.attrs.get("transpose_a") or node.attrs.get("transpose_b"):
                raise ConversionError(f"{name}: transposed MatMul is not supported")
            weights = self._const(node.inputs[1])
            return g.node("MatMul", [data[0][0], g.constant(f"{name}/weights", weights)], output=name), 2
        if op == "Reshape":
            value, rank = data[0]
            target = self._const(node.inputs[1]).astype(np.int64).copy()
            if target.size and target[0] == 1:
                target[0] = 0  # the frozen batch of one: copy the batch dimension instead
            if rank == 4:
                value = g.node("Transpose", [value], perm=_TO_NHWC)
            out = g.node("Reshape", [value, g.constant(f"{name}/shape", target)],
                         output=name if target.size != 4 else None)
            if target.size == 4:
                out = g.node("Transpose", [out], output=name, perm=_TO_NCHW)
            return out, int(target.size)
        if op == "FusedBatchNorm":
            value, rank = data[0]
            if rank != 4 or node.attrs.get("is_training"):
                raise ConversionError(f"{name}: only inference-mode batch norm of a 4-D value is supported")
            params = [g.constant(f"{name}/{part}", self._const(i).astype(np.float32))
                      for part, i in zip(("scale", "offset", "mean", "variance"), node.inputs[1:5])]
            return g.node("BatchNormalization", [value, *params], output=name,
                          epsilon=float(node.attrs.get("epsilon", 1e-3))), 4
        if op == "Sum":
            value, rank = data[0]
            axes = np.atleast_1d(self._const(node.inputs[1])).astype(np.int64) % rank
            if rank == 4:
                axes = np.array([_TO_NCHW.index(a) for a in axes], np.int64)
            return g.node("ReduceSum", [value, g.constant(f"{name}/axes", axes)], output=name,
                          keepdims=int(bool(node.attrs.get("keep_dims")))), rank
        raise ConversionError(f"{name}: TensorFlow operator {op} is not supported by this converter")

    def _binary_inputs(self, node: Node) -> tuple[list[str], int]:
        """Both operands of an elementwise op; constants must be scalars or match a 2-D operand."""
        names, ranks = [], []
        for item in node.inputs:
            if item in self.values:
                value, rank = self.values[item]
                names.append(value)
                ranks.append(rank)
            else:
                names.append(None)
        rank = max(ranks)
        for position, item in enumerate(node.inputs):
            if names[position] is None:
                constant = self._const(item)
                if constant.size != 1 and rank == 4:
                    raise ConversionError(f"{node.name}: a non-scalar constant with a 4-D value is not supported")
                names[position] = self.graph.constant(item, constant.astype(np.float32))
        return names, rank
