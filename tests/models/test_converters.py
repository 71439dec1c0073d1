"""Our own model converters' building blocks: protobuf wire format, the ONNX writer (checked by
the `onnx` package and run by ONNX Runtime), and clear errors for what they cannot convert.
The real conversions are compared with TFLite and TensorFlow in tests/analysis/test_default_models.py."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from facecache.models.convert import Conversion, ConversionError
from facecache.models.convert.flatbuf import FlatBufferError, Table
from facecache.models.convert.onnx_writer import OnnxGraph
from facecache.models.convert.tf_graph import graphdef_to_onnx
from facecache.models.convert.tflite import tflite_to_onnx
from facecache.models.convert.wire import (WireError, bytes_field, fields, int_field, packed_varints, read_varint,
                                           varint)


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 2**31, 2**63 - 1])
def test_varints_round_trip(value):
    assert read_varint(varint(value), 0) == (value, len(varint(value)))


def test_negative_int64_takes_ten_bytes_and_reads_back():
    data = int_field(3, -1)
    [(number, wire, value)] = list(fields(data))
    assert number == 3 and len(data) == 11 and packed_varints(value, wire) == [-1]


def test_truncated_message_is_an_error_not_garbage():
    data = bytes_field(1, b"x" * 20)
    with pytest.raises(WireError, match="past the end"):
        list(fields(data[:-1]))


def test_onnx_writer_makes_a_valid_model_with_a_dynamic_batch():
    graph = OnnxGraph("tiny")
    x = graph.input("input", ("batch", 2, 4, 4))
    weights = np.arange(2 * 2 * 3 * 3, dtype=np.float32).reshape(2, 2, 3, 3) / 10
    y = graph.node("Conv", [x, graph.constant("w", weights)], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    y = graph.node("Relu", [y], output="out")
    graph.output(y, ("batch", 2, 4, 4))
    data = graph.to_bytes(doc="test", metadata={"source": "unit test"})
    onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    feed = np.random.default_rng(0).standard_normal((3, 2, 4, 4)).astype(np.float32)
    (out,) = session.run(None, {"input": feed})
    padded = np.pad(feed, ((0, 0), (0, 0), (1, 1), (1, 1)))
    expected = np.zeros_like(out)
    for i in range(4):
        for j in range(4):
            expected[:, :, i, j] = np.einsum("nchw,ochw->no", padded[:, :, i:i + 3, j:j + 3], weights)
    np.testing.assert_allclose(out, np.maximum(expected, 0), atol=1e-5)
    assert graph.to_bytes(doc="test", metadata={"source": "unit test"}) == data  # deterministic bytes


def test_damaged_tflite_file_is_a_conversion_error():
    with pytest.raises(ConversionError, match="not a readable TFLite model"):
        tflite_to_onnx(b"\x10\x00\x00\x00TFL3" + b"\x00" * 4, graph_name="x")
    with pytest.raises(FlatBufferError, match="outside"):
        Table(b"\x00" * 6, 4)  # a table whose offset field runs past the end


def _graphdef(*nodes: bytes) -> bytes:
    return b"".join(bytes_field(1, node) for node in nodes)


def _node(name: str, op: str, inputs=(), attrs: dict | None = None) -> bytes:
    out = bytes_field(1, name) + bytes_field(2, op) + b"".join(bytes_field(3, i) for i in inputs)
    for key, value in (attrs or {}).items():
        out += bytes_field(5, bytes_field(1, key) + bytes_field(2, value))
    return out


def test_unsupported_tensorflow_operator_is_named():
    shape = bytes_field(7, b"".join(bytes_field(2, int_field(1, d)) for d in (1, 8, 8, 3)))
    data = _graphdef(_node("input", "Placeholder", attrs={"shape": shape}),
                     _node("out", "Softmax", ["input"]))
    with pytest.raises(ConversionError, match="Softmax is not supported"):
        graphdef_to_onnx(data, graph_name="x", input_name="input", output_name="out")
    with pytest.raises(ConversionError, match="no node 'missing'"):
        graphdef_to_onnx(data, graph_name="x", input_name="input", output_name="missing")


def test_a_tensorflow_graph_converts_with_nhwc_semantics():
    """Placeholder -> Relu -> Reshape to (1, -1): the flattening order must be TensorFlow's (NHWC)."""
    shape = bytes_field(7, b"".join(bytes_field(2, int_field(1, d)) for d in (1, 2, 2, 3)))
    target = bytes_field(8, int_field(1, 3) + bytes_field(2, bytes_field(2, int_field(1, 2)))
                         + bytes_field(4, np.array([1, -1], "<i4").tobytes()))
    data = _graphdef(_node("input", "Placeholder", attrs={"shape": shape}), _node("relu", "Relu", ["input"]),
                     _node("shape", "Const", attrs={"value": target}), _node("flat", "Reshape", ["relu", "shape"]))
    onnx_bytes = graphdef_to_onnx(data, graph_name="x", input_name="input", output_name="flat")
    nhwc = np.random.default_rng(1).standard_normal((2, 2, 2, 3)).astype(np.float32)
    (out,) = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"]).run(
        None, {"input": nhwc.transpose(0, 3, 1, 2).copy()})
    np.testing.assert_array_equal(out, np.maximum(nhwc, 0).reshape(2, -1))  # batch 2 through a graph frozen for 1


def test_conversion_kinds_are_checked():
    with pytest.raises(ValueError, match="unknown conversion"):
        Conversion("keras")
