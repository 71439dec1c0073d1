import cv2
import numpy as np
import onnx
import pytest
from onnx import helper

from facecache.analysis.align import alignment_matrix
from facecache.analysis.errors import ModelContractError
from facecache.errors import ModelCorrupt
from facecache.models.derived import extract_emap as load_emap
from facecache.store.records import Face
from facecache.swap.composite import CompositeParams, overlay, paste_back
from facecache.swap.embedding import average_embedding
from facecache.swap.errors import SwapInputError
from facecache.swap.inswapper import InswapperSwapper

from analysis_graphs import ForwardingSession
from swap_graphs import GAIN, cpu_session, emap_matrix, inswapper_standin, probe_vector

KPS = np.array([[260.0, 200.0], [340.0, 198.0], [300.0, 245.0], [268.0, 290.0], [334.0, 288.0]], np.float32)


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    path = tmp_path_factory.mktemp("inswapper") / "inswapper_128.onnx"
    return inswapper_standin(path, emap_matrix(), probe_vector())


@pytest.fixture
def target_face():
    return Face(box=np.array([220, 140, 380, 330], np.float32), score=0.99, kps5=KPS)


@pytest.fixture
def embedding():
    return np.random.default_rng(11).normal(0.0, 3.0, 512).astype(np.float32)  # raw: not unit length


def expected_crop(frame, source_vector, crop_size=128):
    """The stand-in's output for this frame, computed without the adapter."""
    matrix = alignment_matrix(KPS, "arcface_128", crop_size)
    crop = cv2.warpAffine(frame, matrix, (crop_size, crop_size), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    rgb = crop[:, :, ::-1].astype(np.float64) / 255
    shift = GAIN * float(source_vector.reshape(-1) @ probe_vector().astype(np.float64))
    out = np.clip(1.0 - rgb + shift, 0, 1)
    return np.rint(out[:, :, ::-1] * 255), crop, matrix


def test_emap_is_the_graphs_last_initializer_read_without_the_onnx_package(standin):
    emap = load_emap(standin)  # facecache's own reader of the file (the extension ships no onnx package)
    assert emap.shape == (512, 512) and emap.dtype == np.float32
    assert np.array_equal(emap, emap_matrix())
    assert np.array_equal(emap, onnx.numpy_helper.to_array(onnx.load(str(standin)).graph.initializer[-1]))


def test_emap_errors_say_what_to_do(tmp_path, standin):
    model = onnx.load(str(standin))
    del model.graph.initializer[-1]  # now the last initializer is the probe's (512, 1) vector
    onnx.save(model, str(tmp_path / "no_emap.onnx"))
    with pytest.raises(ModelCorrupt, match="512x512"):
        load_emap(tmp_path / "no_emap.onnx")
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"not a model")
    with pytest.raises(ModelCorrupt, match="reinstall"):
        load_emap(junk)
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(standin.read_bytes()[:300_000])
    with pytest.raises(ModelCorrupt, match="reinstall"):
        load_emap(truncated)
    onnx.save(helper.make_model(helper.make_graph([], "empty", [], [])), str(tmp_path / "empty.onnx"))
    with pytest.raises(ModelCorrupt, match="no initializers"):
        load_emap(tmp_path / "empty.onnx")


def test_feeds_follow_the_contract_and_output_comes_back_as_bgr(standin, target_face, embedding, noise_frame):
    session = ForwardingSession(cpu_session(standin))
    emap = load_emap(standin)
    swapper = InswapperSwapper(session, emap)
    result = swapper.swap(noise_frame, target_face, embedding)
    (feeds,) = session.feeds
    # source = raw embedding . emap / |embedding|
    raw = embedding.astype(np.float64)
    expected_source = raw @ emap.astype(np.float64) / np.linalg.norm(raw)
    assert feeds["source"].shape == (1, 512) and feeds["source"].dtype == np.float32
    assert np.allclose(feeds["source"][0], expected_source, rtol=1e-5, atol=1e-6)
    # target = aligned 128 px crop, RGB, 0..1, NCHW
    expected, crop, matrix = expected_crop(noise_frame, expected_source)
    assert feeds["target"].shape == (1, 3, 128, 128) and feeds["target"].dtype == np.float32
    assert np.allclose(feeds["target"][0], crop[:, :, ::-1].transpose(2, 0, 1) / 255.0, atol=1e-6)
    # output 0..1 RGB -> BGR x 255
    assert result.crop.shape == (128, 128, 3) and result.mask is None
    assert np.abs(result.crop.astype(int) - expected).max() <= 1
    assert np.allclose(result.matrix, matrix, atol=1e-4)


def test_half_precision_graph_gets_half_precision_feeds(tmp_path, target_face, embedding, noise_frame):
    path = inswapper_standin(tmp_path / "inswapper_128_fp16.onnx", emap_matrix(), probe_vector(), fp16=True)
    emap = load_emap(path)
    assert emap.dtype == np.float32 and np.allclose(emap, emap_matrix(), atol=1e-3)
    session = ForwardingSession(cpu_session(path))
    result = InswapperSwapper(session, emap, model="inswapper_128_fp16").swap(noise_frame, target_face, embedding)
    assert session.feeds[0]["source"].dtype == np.float16 and session.feeds[0]["target"].dtype == np.float16
    expected, _, _ = expected_crop(noise_frame, session.feeds[0]["source"].astype(np.float64))
    assert np.abs(result.crop.astype(int) - expected).max() <= 2


def test_a_face_object_or_several_sources_work_as_the_source(standin, target_face, embedding, noise_frame):
    session = ForwardingSession(cpu_session(standin))
    swapper = InswapperSwapper(session, load_emap(standin))
    swapper.swap(noise_frame, target_face, Face(box=np.zeros(4), score=1.0, kps5=KPS, embedding=embedding))
    other = -embedding
    swapper.swap(noise_frame, target_face, average_embedding([embedding, 3 * embedding]))
    assert np.allclose(session.feeds[0]["source"], session.feeds[1]["source"], atol=1e-5)  # scale does not matter
    assert np.allclose(average_embedding([embedding, other]), 0)


def test_composite_changes_never_rerun_the_model(standin, target_face, embedding, noise_frame):
    session = ForwardingSession(cpu_session(standin))
    result = InswapperSwapper(session, load_emap(standin)).swap(noise_frame, target_face, embedding)
    for params in (CompositeParams(), CompositeParams(mask_blur=0.6, opacity=0.5),
                   CompositeParams(color_match=1.0, mask_padding=(10, 0, 0, 0))):
        out = paste_back(noise_frame, [result], params)
        overlay(noise_frame, [result], params)
        assert not np.array_equal(out, noise_frame)
    assert len(session.feeds) == 1


def test_contract_errors(tmp_path, standin, target_face, noise_frame):
    wrong = inswapper_standin(tmp_path / "wrong.onnx", emap_matrix(), probe_vector(), target_name="input")
    with pytest.raises(ModelContractError, match="inputs"):
        InswapperSwapper(cpu_session(wrong), emap_matrix())
    with pytest.raises(ModelContractError, match="512x512"):
        InswapperSwapper(cpu_session(standin), np.zeros((512, 256)))
    mine = emap_matrix()
    swapper = InswapperSwapper(cpu_session(standin), mine)
    mine[0, 0] = 5.0  # the caller's matrix stays writable and the swapper keeps its own copy
    assert swapper._emap[0, 0] != 5.0
    with pytest.raises(SwapInputError, match="no identity embedding"):
        swapper.swap(noise_frame, target_face, Face(box=np.zeros(4), score=1.0, kps5=KPS))
    with pytest.raises(SwapInputError, match="512-d"):
        swapper.swap(noise_frame, target_face, np.ones(128, np.float32))
    with pytest.raises(SwapInputError, match="zero"):
        swapper.swap(noise_frame, target_face, np.zeros(512, np.float32))
    assert swapper.describe() == {"swapper": "inswapper_128", "template": "arcface_128", "crop_size": 128}


def test_import_extracts_the_emap_once_into_a_checked_file_in_the_models_folder(tmp_path, standin, monkeypatch):
    import shutil

    from facecache.models import derived
    from facecache.models.store import ModelStore

    facefusion = tmp_path / "facefusion_models"
    facefusion.mkdir()
    shutil.copy(standin, facefusion / "inswapper_128.onnx")
    store = ModelStore(tmp_path / "models")
    store.import_folder(facefusion)
    (made,) = (tmp_path / "models" / derived.FOLDER).glob("inswapper_128-*.emap.fcp")
    assert sorted(p.name for p in facefusion.iterdir()) == ["inswapper_128.onnx"]  # the imported folder untouched

    reads = []
    monkeypatch.setattr(derived, "last_initializer", lambda path: reads.append(path) or pytest.fail("re-extracted"))
    assert np.array_equal(ModelStore(tmp_path / "models").derived("inswapper_128", derived.EMAP), emap_matrix())
    made.write_bytes(made.read_bytes()[:-3] + b"xyz")  # damaged: made again from the model file
    monkeypatch.undo()
    assert np.array_equal(ModelStore(tmp_path / "models").derived("inswapper_128", derived.EMAP), emap_matrix())
    assert derived.read(made, "inswapper_128", store.digest("inswapper_128"), derived.EMAP) is not None


def test_the_engine_never_imports_the_onnx_package():
    """Only the tests build graphs with `onnx`; the extension ships ONNX Runtime alone."""
    import ast
    from pathlib import Path

    import facecache

    for path in Path(facecache.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(name == "onnx" or name.startswith("onnx.") for name in names), path
