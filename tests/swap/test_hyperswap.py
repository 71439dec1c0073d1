import cv2
import numpy as np
import pytest

from facecache.analysis.align import alignment_matrix
from facecache.analysis.errors import ModelContractError
from facecache.store.records import Face
from facecache.swap.composite import CompositeParams, crop_mask, paste_back
from facecache.swap.hyperswap import HyperswapSwapper

from analysis_graphs import ForwardingSession
from swap_graphs import GAIN, cpu_session, hyperswap_standin, inswapper_standin, emap_matrix, probe_vector

KPS = np.array([[260.0, 200.0], [340.0, 198.0], [300.0, 245.0], [268.0, 290.0], [334.0, 288.0]], np.float32)
TARGET = Face(box=np.array([220, 140, 380, 330], np.float32), score=0.99, kps5=KPS)


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    return hyperswap_standin(tmp_path_factory.mktemp("hyperswap") / "hyperswap_1a_256.onnx", probe_vector())


@pytest.fixture
def embedding():
    return np.random.default_rng(5).normal(0.0, 2.0, 512).astype(np.float32)


@pytest.mark.parametrize("mask_first", [False, True])
def test_feeds_outputs_and_mask_follow_the_contract(tmp_path, embedding, noise_frame, mask_first):
    path = hyperswap_standin(tmp_path / "hyperswap.onnx", probe_vector(), mask_first=mask_first)
    session = ForwardingSession(cpu_session(path))
    result = HyperswapSwapper(session).swap(noise_frame, TARGET, embedding)
    (feeds,) = session.feeds
    unit = embedding.astype(np.float64) / np.linalg.norm(embedding.astype(np.float64))
    assert feeds["source"].shape == (1, 512) and np.allclose(feeds["source"][0], unit, atol=1e-6)
    matrix = alignment_matrix(KPS, "arcface_128", 256)
    crop = cv2.warpAffine(noise_frame, matrix, (256, 256), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    rgb = crop[:, :, ::-1].astype(np.float64) / 255
    assert feeds["target"].shape == (1, 3, 256, 256)
    assert np.allclose(feeds["target"][0], ((rgb - 0.5) / 0.5).transpose(2, 0, 1), atol=1e-6)
    # output (-x + shift) in the same normalisation, back to 0..255 BGR
    shift = GAIN * float(unit @ probe_vector().astype(np.float64))
    expected = np.clip((-(rgb - 0.5) / 0.5 + shift) * 0.5 + 0.5, 0, 1)[:, :, ::-1] * 255
    assert result.crop.shape == (256, 256, 3)
    assert np.abs(result.crop.astype(int) - np.rint(expected)).max() <= 1
    # the model's mask is the result's mask: here the mean 0..1 value of the target crop
    assert result.mask.shape == (256, 256)
    assert np.allclose(result.mask, rgb.mean(axis=2), atol=1e-5)
    assert np.allclose(result.matrix, matrix, atol=1e-4)


def test_the_models_mask_limits_the_composite(standin, embedding, noise_frame):
    result = HyperswapSwapper(cpu_session(standin)).swap(noise_frame, TARGET, embedding)
    combined = crop_mask(result, CompositeParams())
    assert np.all(combined <= result.mask + 1e-7)
    out = paste_back(noise_frame, [result], CompositeParams())
    assert not np.array_equal(out, noise_frame)


def test_contract_errors(tmp_path):
    wrong = inswapper_standin(tmp_path / "inswapper.onnx", emap_matrix(), probe_vector())
    with pytest.raises(ModelContractError, match="mask"):
        HyperswapSwapper(cpu_session(wrong))


def test_describe(standin):
    assert HyperswapSwapper(cpu_session(standin)).describe() == {
        "swapper": "hyperswap_1a_256", "template": "arcface_128", "crop_size": 256}
