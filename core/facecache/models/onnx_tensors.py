"""Read initializers (weight tensors) out of an ONNX model, without the `onnx` package.

InSwapper's source projection (its "emap") is the graph's last initializer. The `onnx` package would
read it, but it is not one of the extension's wheels (with protobuf it adds about 16 MB per platform)
and it loads the whole 530 MB model into memory to hand back one 1 MB matrix. An ONNX file is a
protobuf message, so the file is memory-mapped and walked with the model converters' wire-format
reader (`convert/wire.py`): large fields are stepped over, never copied.

The path through the messages (onnx.proto): ModelProto.graph (field 7) -> GraphProto.initializer
(field 5, repeated TensorProto) -> TensorProto.dims (1), data_type (2), float_data (4), int32_data (5,
float16 bit patterns), int64_data (7), name (8), raw_data (9), data_location (14). `tensor_array` also
reads the small tensors the CPU graph forms rewrite (`graph_edit`).
"""

from __future__ import annotations

import mmap
import os

import numpy as np

from facecache.errors import ModelCorrupt
from facecache.models.convert import wire

_MODEL_GRAPH, _GRAPH_INITIALIZER = 7, 5
_DIMS, _TYPE, _FLOATS, _INT32S, _INT64S, _NAME, _RAW, _LOCATION = 1, 2, 4, 5, 7, 8, 9, 14
_FLOAT16, _INT64, _EXTERNAL = 10, 7, 1
# TensorProto.DataType values this reader turns into arrays.
_DTYPES = {1: np.dtype("<f4"), _FLOAT16: np.dtype("<f2"), 11: np.dtype("<f8"), _INT64: np.dtype("<i8")}


def last_initializer(path: str | os.PathLike) -> np.ndarray:
    """The last initializer of the model's graph as a numpy array; ModelCorrupt when the file is not
    a readable ONNX model or the tensor is of a type this reader does not handle."""
    problem = None
    try:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            view = memoryview(mapped)
            try:
                return _last_tensor(view)
            except ValueError as exc:  # wire.WireError, or numpy refusing a malformed tensor
                problem = str(exc)  # the traceback (and the slices of the file its frames hold) goes now
            finally:
                view.release()  # before the mapping closes
    except ValueError as exc:  # an empty file cannot be mapped
        problem = str(exc)
    raise ModelCorrupt(f"{os.fspath(path)} is not a readable ONNX model ({problem}); reinstall the model")


def _last_tensor(model: memoryview) -> np.ndarray:
    """A copy (so nothing keeps pointing into the mapped file once this returns)."""
    graph = _last(model, _MODEL_GRAPH)
    if graph is None:
        raise wire.WireError("no graph")
    tensor = _last(graph, _GRAPH_INITIALIZER)
    if tensor is None:
        raise wire.WireError("the graph has no initializers")
    return tensor_array(tensor)


def _last(message, number: int):
    """The payload of the last length-delimited field `number` of a message (None when absent)."""
    found = None
    for field, kind, value in wire.fields(message):
        if field == number and kind == wire.BYTES:
            found = value
    return found


def tensor_name(message) -> str:
    """The name of a TensorProto (empty when it has none)."""
    return next((wire.text(value) for field, kind, value in wire.fields(message)
                 if field == _NAME and kind == wire.BYTES), "")


def tensor_array(message) -> np.ndarray:
    """A TensorProto's values (float16, float32, float64 or int64) as an array of its shape; WireError
    when it is of another type, stored outside the file or malformed."""
    dims: list[int] = []
    data_type = raw = None
    floats: list[float] = []
    halves: list[int] = []
    longs: list[int] = []
    for field, kind, value in wire.fields(message):
        if field == _DIMS:
            dims += wire.packed_varints(value, kind)
        elif field == _TYPE and kind == wire.VARINT:
            data_type = value
        elif field == _RAW and kind == wire.BYTES:
            raw = value
        elif field == _FLOATS:
            floats += wire.packed_floats(value, kind)
        elif field == _INT32S:
            halves += wire.packed_varints(value, kind)
        elif field == _INT64S:
            longs += [wire.signed64(v) for v in wire.packed_varints(value, kind)]
        elif field == _LOCATION and value == _EXTERNAL:
            raise wire.WireError("the tensor is stored in an external data file")
    if data_type not in _DTYPES:
        raise wire.WireError(f"tensor data type {data_type} is not float16, float32, float64 or int64")
    count = int(np.prod(dims, dtype=np.int64)) if dims else 1
    if raw is not None:
        array = np.frombuffer(raw, dtype=_DTYPES[data_type]).copy() if len(raw) == count * _DTYPES[data_type].itemsize \
            else np.empty(0)
    elif floats:
        array = np.asarray(floats, dtype=np.float32)
    elif halves and data_type == _FLOAT16:
        array = np.asarray(halves, dtype=np.uint16).view(np.float16)
    elif longs and data_type == _INT64:
        array = np.asarray(longs, dtype=np.int64)
    else:
        raise wire.WireError("the tensor has no data")
    if array.size != count:
        raise wire.WireError("the tensor's data does not match its shape")
    return array.reshape(dims)
