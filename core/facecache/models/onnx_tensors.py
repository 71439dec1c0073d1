"""Read one initializer (a weight tensor) out of an ONNX model file, without the `onnx` package.

InSwapper's source projection (its "emap") is the graph's last initializer. The `onnx` package would
read it, but it is not one of the extension's wheels (with protobuf it adds about 16 MB per platform)
and it loads the whole 530 MB model into memory to hand back one 1 MB matrix. An ONNX file is a
protobuf message, whose wire format is small and stable (protobuf.dev, "Encoding"), so the file is
memory-mapped and walked field by field: large fields are stepped over, never copied.

The path through the messages (onnx.proto): ModelProto.graph (field 7) -> GraphProto.initializer
(field 5, repeated TensorProto) -> TensorProto.dims (1), data_type (2), float_data (4), int32_data (5,
float16 bit patterns), raw_data (9).
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterator

import numpy as np

from facecache.errors import ModelCorrupt

_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5
_MODEL_GRAPH, _GRAPH_INITIALIZER = 7, 5
_TENSOR_DIMS, _TENSOR_TYPE, _TENSOR_FLOATS, _TENSOR_INT32S, _TENSOR_RAW, _TENSOR_LOCATION = 1, 2, 4, 5, 9, 14
_FLOAT16 = 10
# TensorProto.DataType values this reader turns into arrays.
_DTYPES = {1: np.dtype("<f4"), 10: np.dtype("<f2"), 11: np.dtype("<f8")}


class _Malformed(Exception):
    pass


def last_initializer(path: str | os.PathLike) -> np.ndarray:
    """The last initializer of the model's graph as a numpy array; ModelCorrupt when the file is not
    a readable ONNX model or the tensor is of a type this reader does not handle."""
    try:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            view = memoryview(mapped)
            try:
                graph = _last(view, 0, len(view), _MODEL_GRAPH)
                if graph is None:
                    raise _Malformed("no graph")
                tensor = _last(view, graph[0], graph[1], _GRAPH_INITIALIZER)
                if tensor is None:
                    raise _Malformed("the graph has no initializers")
                return _tensor(view, *tensor)
            finally:
                view.release()
    except (_Malformed, ValueError) as exc:
        raise ModelCorrupt(f"{os.fspath(path)} is not a readable ONNX model ({exc}); reinstall the model") from None


def _varint(view: memoryview, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise _Malformed("truncated or overlong varint")
        byte = view[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _fields(view: memoryview, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, value or payload offset, payload end) of each field in [start, end)."""
    pos = start
    while pos < end:
        key, pos = _varint(view, pos, end)
        number, wire = key >> 3, key & 7
        if wire == _VARINT:
            value, pos = _varint(view, pos, end)
            yield number, wire, value, pos
        elif wire == _BYTES:
            length, pos = _varint(view, pos, end)
            if pos + length > end:
                raise _Malformed("a field runs past its message")
            yield number, wire, pos, pos + length
            pos += length
        elif wire in (_FIXED32, _FIXED64):
            size = 4 if wire == _FIXED32 else 8
            if pos + size > end:
                raise _Malformed("a field runs past its message")
            yield number, wire, pos, pos + size
            pos += size
        else:
            raise _Malformed(f"wire type {wire} (protobuf groups) is not used by ONNX")


def _last(view: memoryview, start: int, end: int, number: int) -> tuple[int, int] | None:
    """The payload span of the last length-delimited field `number` of a message."""
    found = None
    for field, wire, begin, stop in _fields(view, start, end):
        if field == number and wire == _BYTES:
            found = (begin, stop)
    return found


def _packed_varints(view: memoryview, start: int, stop: int) -> list[int]:
    values, pos = [], start
    while pos < stop:
        value, pos = _varint(view, pos, stop)
        values.append(value)
    return values


def _tensor(view: memoryview, start: int, end: int) -> np.ndarray:
    dims: list[int] = []
    data_type = None
    raw = floats = None
    halves: list[int] = []
    for field, wire, value, stop in _fields(view, start, end):
        if field == _TENSOR_DIMS and wire == _VARINT:
            dims.append(value)
        elif field == _TENSOR_DIMS and wire == _BYTES:  # packed repeated int64
            dims += _packed_varints(view, value, stop)
        elif field == _TENSOR_INT32S and wire == _BYTES:
            halves += _packed_varints(view, value, stop)
        elif field == _TENSOR_INT32S and wire == _VARINT:
            halves.append(value)
        elif field == _TENSOR_TYPE and wire == _VARINT:
            data_type = value
        elif field == _TENSOR_RAW and wire == _BYTES:
            raw = (value, stop)
        elif field == _TENSOR_FLOATS and wire == _BYTES:
            floats = (value, stop)
        elif field == _TENSOR_FLOATS and wire == _FIXED32:  # unpacked repeated float
            floats = floats or []
            floats.append(struct.unpack_from("<f", view, value)[0])
        elif field == _TENSOR_LOCATION and wire == _VARINT and value == 1:
            raise _Malformed("the tensor is stored in an external data file")
    if data_type not in _DTYPES:
        raise _Malformed(f"tensor data type {data_type} is not float16, float32 or float64")
    count = int(np.prod(dims, dtype=np.int64)) if dims else 1
    if raw is not None:
        dtype = _DTYPES[data_type]
        if raw[1] - raw[0] != count * dtype.itemsize:
            raise _Malformed("the tensor's data does not match its shape")
        array = np.frombuffer(view[raw[0]:raw[1]], dtype=dtype).copy()
    elif isinstance(floats, list):
        array = np.asarray(floats, dtype=np.float32)
    elif floats is not None:
        array = np.frombuffer(view[floats[0]:floats[1]], dtype="<f4").copy()
    elif halves and data_type == _FLOAT16:
        array = np.asarray(halves, dtype=np.uint16).view(np.float16)
    else:
        raise _Malformed("the tensor has no data")
    if array.size != count:
        raise _Malformed("the tensor's data does not match its shape")
    return array.reshape(dims)
