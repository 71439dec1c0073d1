"""Installing FaceFusion release models from a local HTTP server (127.0.0.1): crc32 sidecars,
corrupt downloads, dropped connections and resumption with HTTP Range."""

import json
import os

import pytest

from facecache.errors import DownloadError, ModelCorrupt
from facecache.models.store import ModelStore

from model_helpers import crc32_hex

RELEASE = "models-3.0.0"
SCRFD = os.urandom(300_000)  # stand-in bytes: the installer does not parse ONNX


def _store(tmp_path, server, **kwargs):
    return ModelStore(tmp_path / "models", base_url=server.base_url, **kwargs)


def test_good_file_is_installed_with_its_sidecar(tmp_path, asset_server):
    asset_server.add_release_file(RELEASE, "scrfd_2.5g.onnx", SCRFD)
    events = []
    store = _store(tmp_path, asset_server)
    [result] = store.install(["scrfd_2.5g"], progress=events.append)
    target = tmp_path / "models" / "scrfd_2.5g.onnx"
    assert result.downloaded and result.paths == {"model": target}
    assert target.read_bytes() == SCRFD
    assert (tmp_path / "models" / "scrfd_2.5g.hash").read_text().strip() == crc32_hex(SCRFD)
    assert not (tmp_path / "models" / "scrfd_2.5g.onnx.part").exists()
    assert store.path("scrfd_2.5g") == target
    # progress: for this model and file, growing, ending at the full size
    assert {e.model for e in events} == {"scrfd_2.5g"} and {e.file for e in events} == {"scrfd_2.5g.onnx"}
    assert [e.done for e in events] == sorted(e.done for e in events)
    assert events[-1].done == events[-1].total == len(SCRFD)
    assert [r.path for r in asset_server.requests] == [f"/{RELEASE}/scrfd_2.5g.hash", f"/{RELEASE}/scrfd_2.5g.onnx"]
    registry = json.loads((tmp_path / "models" / "registry.json").read_text())
    assert registry["checked"][str(target)]["check"] == "crc32"


def test_installed_model_is_not_downloaded_again(tmp_path, asset_server):
    asset_server.add_release_file(RELEASE, "scrfd_2.5g.onnx", SCRFD)
    _store(tmp_path, asset_server).install(["scrfd_2.5g"])
    [again] = _store(tmp_path, asset_server).install(["scrfd_2.5g"])
    assert not again.downloaded
    assert len(asset_server.requests) == 2
    [forced] = _store(tmp_path, asset_server).install(["scrfd_2.5g"], force=True)
    assert forced.downloaded and len(asset_server.requests) == 4


def test_crc_mismatch_deletes_the_download_and_says_so(tmp_path, asset_server):
    asset_server.add_release_file(RELEASE, "scrfd_2.5g.onnx", SCRFD, crc="deadbeef")
    store = _store(tmp_path, asset_server)
    with pytest.raises(ModelCorrupt) as caught:
        store.install(["scrfd_2.5g"])
    message = str(caught.value)
    assert "deadbeef" in message and crc32_hex(SCRFD) in message
    assert "deleted" in message and "facecache models install scrfd_2.5g" in message
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) in ([], ["registry.json"])


def test_dropped_connection_is_resumed_with_range_in_the_same_run(tmp_path, asset_server):
    path = f"/{RELEASE}/scrfd_2.5g.onnx"
    asset_server.add_release_file(RELEASE, "scrfd_2.5g.onnx", SCRFD)
    asset_server.drop_after[path] = 100_000
    [result] = _store(tmp_path, asset_server).install(["scrfd_2.5g"])
    assert result.paths["model"].read_bytes() == SCRFD
    first, second = asset_server.served(".onnx")
    assert first.range is None and first.body_bytes == 100_000
    assert second.range == "bytes=100000-" and second.status == 206
    assert second.body_bytes == len(SCRFD) - 100_000  # only the rest was sent again


def test_dropped_connection_keeps_the_part_and_the_next_run_resumes(tmp_path, asset_server):
    path = f"/{RELEASE}/scrfd_2.5g.onnx"
    asset_server.add_release_file(RELEASE, "scrfd_2.5g.onnx", SCRFD)
    asset_server.drop_after[path] = 123_456
    part = tmp_path / "models" / "scrfd_2.5g.onnx.part"
    with pytest.raises(DownloadError, match="run the same command again to resume"):
        _store(tmp_path, asset_server, retries=0).install(["scrfd_2.5g"])
    assert part.stat().st_size == 123_456
    assert not (tmp_path / "models" / "scrfd_2.5g.onnx").exists()

    events = []
    [result] = _store(tmp_path, asset_server, retries=0).install(["scrfd_2.5g"], progress=events.append)
    assert result.paths["model"].read_bytes() == SCRFD and not part.exists()
    resumed = asset_server.served(".onnx")[-1]
    assert resumed.range == "bytes=123456-" and resumed.body_bytes == len(SCRFD) - 123_456
    assert events[0].resumed_from == 123_456 and events[-1].done == len(SCRFD)


def test_server_that_ignores_range_restarts_the_file(tmp_path, asset_server):
    path = f"/{RELEASE}/scrfd_2.5g.onnx"
    asset_server.add_release_file(RELEASE, "scrfd_2.5g.onnx", SCRFD)
    asset_server.drop_after[path] = 50_000
    asset_server.ignore_range = True
    [result] = _store(tmp_path, asset_server).install(["scrfd_2.5g"])
    assert result.paths["model"].read_bytes() == SCRFD
    assert [r.status for r in asset_server.served(".onnx")] == [200, 200]


def test_stale_part_longer_than_the_file_is_restarted(tmp_path, asset_server):
    asset_server.add_release_file(RELEASE, "scrfd_2.5g.onnx", SCRFD)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "scrfd_2.5g.onnx.part").write_bytes(b"x" * (len(SCRFD) + 10))
    [result] = _store(tmp_path, asset_server).install(["scrfd_2.5g"])
    assert result.paths["model"].read_bytes() == SCRFD
    assert [r.status for r in asset_server.served(".onnx")] == [416, 200]


def test_missing_asset_and_bad_sidecar_are_clear_errors(tmp_path, asset_server):
    with pytest.raises(DownloadError, match="HTTP 404.*FACECACHE_MODELS_URL"):
        _store(tmp_path, asset_server).install(["yoloface_8n"])
    asset_server.files[f"/{RELEASE}/yoloface_8n.hash"] = b"<html>not a hash</html>"
    asset_server.files[f"/{RELEASE}/yoloface_8n.onnx"] = b"model"
    with pytest.raises(DownloadError, match="8 hex digits"):
        _store(tmp_path, asset_server).install(["yoloface_8n"])


def test_base_url_comes_from_the_environment(tmp_path, asset_server, monkeypatch):
    asset_server.files["/mirror/models-3.3.0/hyperswap_1a_256.onnx"] = b"swap" * 1000
    asset_server.files["/mirror/models-3.3.0/hyperswap_1a_256.hash"] = crc32_hex(b"swap" * 1000).encode()
    monkeypatch.setenv("FACECACHE_MODELS_URL", asset_server.base_url + "/mirror/{release}/{file}")
    [result] = ModelStore(tmp_path / "models").install(["hyperswap_1a_256"])
    assert result.paths["model"].read_bytes() == b"swap" * 1000
