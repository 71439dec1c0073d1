"""Convert a float32 TensorFlow Lite model (`.tflite`) into ONNX.

Covers the operators of MediaPipe's face mesh (CONV_2D, DEPTHWISE_CONV_2D, PRELU, ADD,
MAX_POOL_2D, PAD), of its BlazeFace detectors and iris model (RELU, RESHAPE, CONCATENATION,
RESIZE_BILINEAR) plus the few close relatives that cost nothing to add (AVERAGE_POOL_2D,
MUL, LOGISTIC); any other operator stops the conversion with its name.

Float16 weights convert when a DEQUANTIZE operator turns them into float32 (how MediaPipe
ships BlazeFace): they become float32 constants (float16 -> float32 is exact) and the
DEQUANTIZE disappears, so the ONNX graph is float32 throughout. Quantised (int8/uint8)
models are refused.

TFLite works in NHWC; the ONNX graph works in NCHW: the input is (batch, C, H, W), kernels
are transposed once here, 4-D outputs are transposed back to TFLite's NHWC layout (so they
equal TFLite's outputs), and the batch axis is dynamic. TensorFlow's SAME padding puts the
odd extra pixel at the end, so pads are computed from the static shapes.

Facts used: TFLite's FlatBuffers schema (`tensorflow/lite/schema/schema.fbs`): table field
ids, the BuiltinOperator and TensorType numbers, and each options table's fields.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from facecache.models.convert.errors import DAMAGED_INPUT, ConversionError, element_count
from facecache.models.convert.flatbuf import FlatBufferError, Table
from facecache.models.convert.onnx_writer import OnnxGraph

# BuiltinOperator numbers (schema.fbs)
ADD, AVERAGE_POOL_2D, CONCATENATION, CONV_2D, DEPTHWISE_CONV_2D, DEQUANTIZE = 0, 1, 2, 3, 4, 6
LOGISTIC, MAX_POOL_2D, MUL, RELU, RESHAPE, RESIZE_BILINEAR, PAD, PRELU = 14, 17, 18, 19, 22, 23, 34, 54
_UNARY = {LOGISTIC: "Sigmoid", RELU: "Relu"}
_TENSOR_TYPES = {0: np.float32, 1: np.float16, 2: np.int32, 4: np.int64}  # FLOAT32, FLOAT16, INT32, INT64
_QUANTISED_TYPES = {3: "uint8", 7: "int16", 9: "int8"}  # UINT8, INT16, INT8
_SAME, _VALID = 0, 1
# ActivationFunctionType: NONE, RELU, RELU_N1_TO_1, RELU6, TANH
_ACTIVATIONS = {0: None, 1: ("Relu", None), 2: ("Clip", (-1.0, 1.0)), 3: ("Clip", (0.0, 6.0)), 4: ("Tanh", None)}


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple[int, ...]
    data: np.ndarray | None  # constant weights, else None


@dataclass(frozen=True)
class Operator:
    code: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options: Table | None


@dataclass(frozen=True)
class TfliteModel:
    tensors: list[Tensor]
    operators: list[Operator]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    description: str


def read_tflite(data: bytes) -> TfliteModel:
    """The first subgraph of a TFLite model: tensors (with constant data), operators, inputs, outputs.
    Damaged bytes raise ConversionError: every reference is checked against the buffer (`flatbuf`),
    every index against what it indexes, every tensor's bytes against its shape before it is made."""
    try:
        model = Table.root(data, b"TFL3")
        codes = [max(code.scalar(0, "b"), code.scalar(3, "i")) for code in model.tables(1)]
        buffers = model.tables(4)
        subgraphs = model.tables(2)
        if len(subgraphs) != 1:
            raise ConversionError(f"the model has {len(subgraphs)} subgraphs; only single-graph models convert")
        graph = subgraphs[0]
        tensors = [_tensor(t, buffers) for t in graph.tables(0)]
        operators = [_operator(op, codes, len(tensors)) for op in graph.tables(3)]
        inputs, outputs = (_indices(graph.vector(field, "i"), len(tensors), "the graph") for field in (1, 2))
        return TfliteModel(tensors, operators, inputs, outputs, model.string(3))
    except FlatBufferError as exc:
        raise ConversionError(f"not a readable TFLite model ({exc})") from None
    except DAMAGED_INPUT as exc:
        raise ConversionError(f"not a readable TFLite model ({type(exc).__name__}: {exc})") from None


def _indices(values: np.ndarray, count: int, what: str, optional: bool = False) -> tuple[int, ...]:
    """Tensor indices, each one of the `count` tensors (or -1, "none", where `optional`)."""
    indices = tuple(values.tolist())
    lowest = -1 if optional else 0
    if any(not lowest <= index < count for index in indices):
        raise ConversionError(f"{what} refers to a tensor outside the model's {count}: the file is damaged")
    return indices


def _operator(table: Table, codes: list[int], tensors: int) -> Operator:
    code_index = table.scalar(0, "I")
    if code_index >= len(codes):
        raise ConversionError(f"an operator has code {code_index} of {len(codes)}: the file is damaged")
    return Operator(codes[code_index], _indices(table.vector(1, "i"), tensors, "an operator", optional=True),
                    _indices(table.vector(2, "i"), tensors, "an operator"), table.table(4))


def _tensor(table: Table, buffers: list[Table]) -> Tensor:
    name = table.string(3)
    kind = table.scalar(1, "b")
    shape = tuple(table.vector(0, "i").tolist())
    count = element_count(shape, f"tensor {name}")
    buffer = table.scalar(2, "I")
    if buffers and buffer >= len(buffers):
        raise ConversionError(f"tensor {name} refers to buffer {buffer} of {len(buffers)}: the file is damaged")
    raw = buffers[buffer].bytes(0) if buffers else b""
    if not len(raw):
        return Tensor(name, shape, None)
    if table.has(6):  # sparsity: the buffer holds only the non-zero values (e.g. face_detection_full_range_sparse)
        raise ConversionError(f"tensor {name} is stored sparse: sparse models do not convert; use the dense version "
                              "of the model")
    if kind in _QUANTISED_TYPES:
        raise ConversionError(f"tensor {name} holds {_QUANTISED_TYPES[kind]} weights: quantised models do not "
                              "convert; use the float32 or float16 version of the model")
    if kind not in _TENSOR_TYPES:
        raise ConversionError(f"tensor {name} has TFLite type {kind}; only float32, float16 (behind DEQUANTIZE) "
                              "and int32/int64 constants convert")
    dtype = np.dtype(_TENSOR_TYPES[kind])
    if len(raw) != count * dtype.itemsize:
        raise ConversionError(f"tensor {name} holds {len(raw)} bytes for shape {shape}: the file is damaged")
    array = np.frombuffer(bytes(raw), dtype.newbyteorder("<")).astype(dtype)
    return Tensor(name, shape, array.reshape(shape))


def tflite_to_onnx(data: bytes, *, graph_name: str, input_name: str = "input",
                   output_names: tuple[str, ...] = (), doc: str = "") -> bytes:
    """ONNX bytes equivalent to the TFLite model `data` (see the module doc for the layout)."""
    model = read_tflite(data)
    try:
        return _Converter(_float16_folded(model), graph_name).convert(input_name, output_names, doc)
    except DAMAGED_INPUT as exc:
        raise ConversionError(f"the TFLite model does not convert ({type(exc).__name__}: {exc})") from None


def _float16_folded(model: TfliteModel) -> TfliteModel:
    """`model` with each DEQUANTIZE of a float16 constant replaced by the float32 constant it makes.
    A float16 constant read by any other operator is refused: ONNX would need float16 kernels for it."""
    tensors = list(model.tensors)
    operators = []
    for op in model.operators:
        if op.code != DEQUANTIZE:
            operators.append(op)
            continue
        source = tensors[op.inputs[0]] if op.inputs and op.inputs[0] >= 0 else None
        if source is None or source.data is None or source.data.dtype != np.float16:
            raise ConversionError(f"a DEQUANTIZE reads {source.name if source else 'nothing'}, which is not a "
                                  "float16 constant: quantised models do not convert; use the float32 or float16 "
                                  "version of the model")
        target = tensors[op.outputs[0]]
        tensors[op.outputs[0]] = Tensor(target.name, target.shape, source.data.astype(np.float32).reshape(target.shape))
    for op in operators:
        for index in op.inputs:
            data = tensors[index].data if index >= 0 else None
            if data is not None and data.dtype == np.float16:
                raise ConversionError(f"operator {op.code} reads the float16 constant {tensors[index].name} directly; "
                                      "float16 weights convert only behind a DEQUANTIZE operator: use the float32 "
                                      "version of the model")
    return TfliteModel(tensors, operators, model.inputs, model.outputs, model.description)


class _Converter:
    def __init__(self, model: TfliteModel, graph_name: str):
        self.model = model
        self.graph = OnnxGraph(graph_name)
        self.names: dict[int, str] = {}  # tensor index -> ONNX name (4-D values in NCHW)

    def convert(self, input_name: str, output_names: tuple[str, ...], doc: str) -> bytes:
        model = self.model
        if len(model.inputs) != 1:
            raise ConversionError(f"the model has {len(model.inputs)} inputs; one image input is supported")
        source = model.tensors[model.inputs[0]]
        if len(source.shape) != 4:
            raise ConversionError(f"the input {source.name} has shape {source.shape}; an NHWC image is expected")
        _, height, width, channels = source.shape
        self.names[model.inputs[0]] = self.graph.input(input_name, ("batch", channels, height, width))
        for op in model.operators:
            if not op.outputs:
                raise ConversionError("an operator has no output: the file is damaged")
            try:
                self.names[op.outputs[0]] = self._operator(op)
            except DAMAGED_INPUT as exc:
                raise ConversionError(f"operator {op.code} making {model.tensors[op.outputs[0]].name}: its inputs "
                                      f"or options do not fit it ({type(exc).__name__}: {exc})") from None
        names = output_names or tuple(model.tensors[i].name for i in model.outputs)
        for index, name in zip(model.outputs, names, strict=True):
            shape = model.tensors[index].shape
            value = self.names[index]
            if len(shape) == 4:
                value = self.graph.node("Transpose", [value], perm=[0, 2, 3, 1])  # back to NHWC
            self.graph.node("Identity", [value], output=name)
            self.graph.output(name, ("batch", *shape[1:]))
        return self.graph.to_bytes(doc=doc or model.description)

    # --- helpers -------------------------------------------------------------------------------

    def _const(self, index: int) -> np.ndarray:
        if index < 0:
            raise ConversionError("an operator lacks one of its inputs: the file is damaged")
        tensor = self.model.tensors[index]
        if tensor.data is None:
            raise ConversionError(f"{tensor.name} must be a constant (weights) for this operator")
        return tensor.data

    def _value(self, index: int) -> str:
        """The ONNX name of a tensor; constants become initializers (4-D ones turned to NCHW)."""
        if index in self.names:
            return self.names[index]
        if index < 0:
            raise ConversionError("an operator lacks one of its inputs: the file is damaged")
        tensor = self.model.tensors[index]
        if tensor.data is None:
            raise ConversionError(f"{tensor.name} is used before any operator produces it")
        data = tensor.data.transpose(0, 3, 1, 2) if tensor.data.ndim == 4 else _nchw_broadcast(tensor.data)
        self.names[index] = self.graph.constant(tensor.name, np.ascontiguousarray(data))
        return self.names[index]

    def _nhwc(self, index: int) -> str:
        """The value of tensor `index` in TFLite's own layout (4-D values are held in NCHW)."""
        value = self._value(index)
        if len(self.model.tensors[index].shape) == 4:
            value = self.graph.node("Transpose", [value], perm=[0, 2, 3, 1])
        return value

    def _activation(self, value: str, code: int, name: str) -> str:
        if code not in _ACTIVATIONS:
            raise ConversionError(f"{name}: fused activation {code} is not supported")
        act = _ACTIVATIONS[code]
        if act is None:
            return value
        op, clip_range = act
        bounds = [self.graph.constant(f"{name}/clip", np.float32(v)) for v in clip_range or ()]
        return self.graph.node(op, [value, *bounds], output=name)

    def _pads(self, op: Operator, kernel: tuple[int, int], strides: tuple[int, int],
              dilations: tuple[int, int], padding: int) -> list[int]:
        if padding == _VALID:
            return [0, 0, 0, 0]
        _, in_h, in_w, _ = self.model.tensors[op.inputs[0]].shape
        begin, end = [], []
        for size, k, s, d in zip((in_h, in_w), kernel, strides, dilations):
            out = -(-size // s)
            total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
            begin.append(total // 2)
            end.append(total - total // 2)
        return begin + end

    # --- operators ---------------------------------------------------------------------------

    def _operator(self, op: Operator) -> str:
        out_name = self.model.tensors[op.outputs[0]].name
        opt = op.options
        if op.code in (CONV_2D, DEPTHWISE_CONV_2D):
            depthwise = op.code == DEPTHWISE_CONV_2D
            weights = self._const(op.inputs[1])  # CONV: (O, H, W, I); DEPTHWISE: (1, H, W, C*M)
            kernel = (weights.shape[1], weights.shape[2])
            strides = (opt.scalar(2, "i", 1), opt.scalar(1, "i", 1)) if opt else (1, 1)
            first = 5 if depthwise else 4
            dilations = (opt.scalar(first + 1, "i", 1), opt.scalar(first, "i", 1)) if opt else (1, 1)
            activation = opt.scalar(4 if depthwise else 3, "b") if opt else 0
            padding = opt.scalar(0, "b") if opt else _SAME
            if depthwise:
                channels = self.model.tensors[op.inputs[0]].shape[3]
                w = weights.transpose(3, 0, 1, 2)  # (C*M, 1, H, W)
                group = channels
            else:
                w = weights.transpose(0, 3, 1, 2)  # (O, I, H, W)
                group = 1
            inputs = [self._value(op.inputs[0]), self.graph.constant(f"{out_name}/weights", np.ascontiguousarray(w))]
            if len(op.inputs) > 2 and op.inputs[2] >= 0:
                inputs.append(self.graph.constant(f"{out_name}/bias", self._const(op.inputs[2]).reshape(-1)))
            value = self.graph.node("Conv", inputs, output=out_name, kernel_shape=list(kernel), strides=list(strides),
                                    dilations=list(dilations), group=group,
                                    pads=self._pads(op, kernel, strides, dilations, padding))
            return self._activation(value, activation, f"{out_name}/act")
        if op.code in (MAX_POOL_2D, AVERAGE_POOL_2D):
            kernel = (opt.scalar(4, "i"), opt.scalar(3, "i"))
            strides = (opt.scalar(2, "i", 1), opt.scalar(1, "i", 1))
            pads = self._pads(op, kernel, strides, (1, 1), opt.scalar(0, "b"))
            kind = "MaxPool" if op.code == MAX_POOL_2D else "AveragePool"
            value = self.graph.node(kind, [self._value(op.inputs[0])], output=out_name,
                                    kernel_shape=list(kernel), strides=list(strides), pads=pads)
            return self._activation(value, opt.scalar(5, "b"), f"{out_name}/act")
        if op.code in (ADD, MUL):
            a, b = (self._value(i) for i in op.inputs)
            value = self.graph.node("Add" if op.code == ADD else "Mul", [a, b], output=out_name)
            return self._activation(value, opt.scalar(0, "b") if opt else 0, f"{out_name}/act")
        if op.code == PRELU:
            alpha = _nchw_broadcast(self._const(op.inputs[1]))
            return self.graph.node("PRelu", [self._value(op.inputs[0]), self.graph.constant(f"{out_name}/alpha", alpha)],
                                   output=out_name)
        if op.code == PAD:
            paddings = self._const(op.inputs[1]).astype(np.int64).reshape(-1, 2)
            if paddings.shape != (4, 2) or paddings[0].any():
                raise ConversionError(f"{out_name}: only padding of H, W and C of a 4-D tensor is supported")
            nchw = paddings[[0, 3, 1, 2]]
            pads = np.concatenate([nchw[:, 0], nchw[:, 1]])
            return self.graph.node("Pad", [self._value(op.inputs[0]), self.graph.constant(f"{out_name}/pads", pads)],
                                   output=out_name)
        if op.code in _UNARY:
            return self.graph.node(_UNARY[op.code], [self._value(op.inputs[0])], output=out_name)
        if op.code == RESHAPE:
            source, target = (self.model.tensors[i].shape for i in (op.inputs[0], op.outputs[0]))
            if not source or not target or source[0] != target[0]:
                raise ConversionError(f"{out_name}: a reshape from {source} to {target} does not keep the batch "
                                      "axis; only reshapes that keep it convert")
            # reshaping follows TFLite's element order, so it happens in NHWC; the batch stays dynamic
            shape = self.graph.constant(f"{out_name}/shape", np.array([-1, *target[1:]], np.int64))
            if len(target) != 4:
                return self.graph.node("Reshape", [self._nhwc(op.inputs[0]), shape], output=out_name)
            value = self.graph.node("Reshape", [self._nhwc(op.inputs[0]), shape])
            return self.graph.node("Transpose", [value], output=out_name, perm=[0, 3, 1, 2])
        if op.code == CONCATENATION:
            rank = len(self.model.tensors[op.outputs[0]].shape)
            axis = opt.scalar(0, "i") if opt else 0
            axis = axis + rank if axis < 0 else axis
            if not 0 <= axis < rank:
                raise ConversionError(f"{out_name}: concatenation axis {axis} of a {rank}-D tensor: "
                                      "the file is damaged")
            value = self.graph.node("Concat", [self._value(i) for i in op.inputs], output=out_name,
                                    axis=(0, 2, 3, 1)[axis] if rank == 4 else axis)  # NHWC axis -> NCHW axis
            return self._activation(value, opt.scalar(1, "b") if opt else 0, f"{out_name}/act")
        if op.code == RESIZE_BILINEAR:
            (_, in_h, in_w, _), (_, out_h, out_w, _) = (self.model.tensors[i].shape
                                                        for i in (op.inputs[0], op.outputs[0]))
            if tuple(self._const(op.inputs[1]).reshape(-1).tolist()) != (out_h, out_w):
                raise ConversionError(f"{out_name}: the resize's size does not match its output: the file is damaged")
            # whole-number factors only: ONNX sizes its output from float scales (a batch-free way), exact for those
            if out_h % in_h or out_w % in_w:
                raise ConversionError(f"{out_name}: a resize from {in_h}x{in_w} to {out_h}x{out_w}; only "
                                      "upscales by whole-number factors convert")
            align, half_pixel = (bool(opt.scalar(field, "?")) if opt else False for field in (2, 3))
            mode = "align_corners" if align else "half_pixel" if half_pixel else "asymmetric"
            factors = np.array([1, 1, out_h // in_h, out_w // in_w], np.float32)
            scales = self.graph.constant(f"{out_name}/scales", factors)
            return self.graph.node("Resize", [self._value(op.inputs[0]), "", scales], output=out_name,
                                   mode="linear", coordinate_transformation_mode=mode)
        raise ConversionError(f"{out_name}: TFLite builtin operator {op.code} (schema.fbs numbering) is not "
                              "supported by this converter")


def _nchw_broadcast(array: np.ndarray) -> np.ndarray:
    """A per-channel constant laid out for NHWC broadcasting ((C,), (1, 1, C), ...) reshaped for NCHW (C, 1, 1)."""
    array = np.asarray(array)
    if array.ndim == 0 or array.size == 1:
        return array.reshape(()) if array.ndim == 0 else array.reshape(1)
    if array.ndim <= 3 and all(d == 1 for d in array.shape[:-1]):
        return np.ascontiguousarray(array.reshape(-1, 1, 1))
    raise ConversionError(f"a constant of shape {array.shape} cannot be laid out for NCHW broadcasting")
