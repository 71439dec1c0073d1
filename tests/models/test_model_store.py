"""ModelStore without the network: missing and corrupt models, imports in place, digests."""

import json
import os
import zlib

import pytest

import facecache.models.store as store_module
from facecache.errors import ModelCorrupt, ModelMissing
from facecache.models.store import ModelStore

from model_helpers import crc32_hex


def _write_release_model(folder, name, data, sidecar: str | None = "match"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.onnx").write_bytes(data)
    if sidecar == "match":
        (folder / f"{name}.hash").write_text(crc32_hex(data))
    elif sidecar is not None:
        (folder / f"{name}.hash").write_text(sidecar)
    return folder / f"{name}.onnx"


def test_missing_model_names_the_install_command(tmp_path):
    store = ModelStore(tmp_path / "models")
    with pytest.raises(ModelMissing, match=r"`facecache models install scrfd_2\.5g`"):
        store.path("scrfd_2.5g")
    with pytest.raises(ModelMissing, match="`facecache models install default`"):
        store.paths("default")
    with pytest.raises(ModelMissing, match="facecache models install default"):
        store.digest("mtcnn")
    assert not store.is_installed("default")
    assert not (tmp_path / "models").exists()  # asking does not create anything


def test_models_dir_comes_from_argument_then_environment_then_user_folder(tmp_path, isolated_env, monkeypatch):
    assert ModelStore().root == tmp_path / "xdg-data" / "facecache" / "models"
    monkeypatch.setenv("FACECACHE_MODELS", str(tmp_path / "env-models"))
    assert ModelStore().root == tmp_path / "env-models"
    assert ModelStore(tmp_path / "arg").root == tmp_path / "arg"


def test_modified_model_file_is_set_aside_and_then_missing(tmp_path):
    models = tmp_path / "models"
    target = _write_release_model(models, "inswapper_128", b"\x01" * 5000)
    store = ModelStore(models)
    assert store.path("inswapper_128") == target
    data = bytearray(target.read_bytes())
    data[100] ^= 0xFF  # same size, different content
    target.write_bytes(bytes(data))
    os.utime(target, ns=(1, 1_000_000_000))  # a different mtime, as any rewrite gives
    with pytest.raises(ModelCorrupt) as caught:
        ModelStore(models).path("inswapper_128")
    message = str(caught.value)
    assert "inswapper_128.onnx.corrupt" in message and "facecache models install inswapper_128" in message
    assert not target.exists() and (models / "inswapper_128.onnx.corrupt").read_bytes() == bytes(data)
    with pytest.raises(ModelMissing, match="facecache models install inswapper_128"):
        store.path("inswapper_128")


def test_verify_rechecks_even_when_size_and_mtime_are_unchanged(tmp_path):
    models = tmp_path / "models"
    target = _write_release_model(models, "2dfan4", b"\x02" * 4000)
    store = ModelStore(models)
    store.path("2dfan4")
    st = target.stat()
    target.write_bytes(b"\x03" * 4000)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert store.path("2dfan4") == target  # remembered check: not hashed again
    with pytest.raises(ModelCorrupt):
        store.verify("2dfan4")
    assert (models / "2dfan4.onnx.corrupt").exists()


def test_malformed_sidecar_is_set_aside_not_the_model(tmp_path):
    models = tmp_path / "models"
    target = _write_release_model(models, "2dfan4", b"\x02" * 4000, sidecar="not a crc")
    with pytest.raises(ModelCorrupt, match="2dfan4.hash is not a FaceFusion hash sidecar"):
        ModelStore(models).path("2dfan4")
    assert target.exists() and (models / "2dfan4.hash.corrupt").exists()


def test_digest_is_computed_once_and_remembered_across_stores(tmp_path, monkeypatch):
    models = tmp_path / "models"
    target = _write_release_model(models, "arcface_w600k_r50", b"\x05" * 8000)
    calls = []
    real = store_module.hash_file
    monkeypatch.setattr(store_module, "hash_file", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    first = ModelStore(models).digest("arcface_w600k_r50")
    assert len(first) == 32 and int(first, 16) >= 0
    assert ModelStore(models).digest("arcface_w600k_r50") == first
    assert len(calls) == 1  # the second store trusted the recorded (size, mtime_ns)
    target.write_bytes(b"\x06" * 8000)
    (models / "arcface_w600k_r50.hash").write_text(crc32_hex(b"\x06" * 8000))
    os.utime(target, ns=(2, 2_000_000_000))
    assert ModelStore(models).digest("arcface_w600k_r50") != first
    assert len(calls) == 2


def test_digest_depends_on_content_only(tmp_path):
    a = _write_release_model(tmp_path / "a", "scrfd_2.5g", b"same bytes")
    b = _write_release_model(tmp_path / "b", "scrfd_2.5g", b"same bytes")
    assert a != b
    assert ModelStore(tmp_path / "a").digest("scrfd_2.5g") == ModelStore(tmp_path / "b").digest("scrfd_2.5g")


def test_import_facefusion_folder_in_place(tmp_path):
    facefusion = tmp_path / "facefusion"
    assets = facefusion / ".assets" / "models"
    scrfd = _write_release_model(assets, "scrfd_2.5g", b"scrfd" * 100)
    _write_release_model(assets, "yoloface_8n", b"yolo" * 100, sidecar=None)
    _write_release_model(assets, "2dfan4", b"fan" * 100, sidecar="00000000")
    (assets / "some_other_model.onnx").write_bytes(b"ignored")
    models = tmp_path / "models"

    report = ModelStore(models).import_folder(facefusion)
    assert report.folder == assets.resolve() and report.newly_registered
    assert report.verified == ["scrfd_2.5g"]
    assert report.unverified == ["yoloface_8n"]
    assert report.corrupt == ["2dfan4"]
    assert (assets / "2dfan4.onnx.corrupt").exists() and not (assets / "2dfan4.onnx").exists()

    # nothing copied: the models folder holds only the registry, which persists the import
    assert sorted(p.name for p in models.iterdir()) == ["registry.json"]
    assert json.loads((models / "registry.json").read_text())["imports"] == [str(assets.resolve())]
    store = ModelStore(models)
    assert store.path("scrfd_2.5g") == scrfd.resolve()
    assert store.status("scrfd_2.5g").location == f"imported: {assets.resolve()}"
    assert store.model("yoloface_8n").verified is False
    with pytest.raises(ModelMissing):
        store.path("2dfan4")
    # importing again is harmless
    assert not store.import_folder(assets).newly_registered


def test_imported_and_checked_model_is_not_downloaded(tmp_path):
    assets = tmp_path / "ff" / ".assets" / "models"
    _write_release_model(assets, "scrfd_2.5g", b"scrfd" * 100)
    store = ModelStore(tmp_path / "models", base_url="http://127.0.0.1:9/unreachable")
    store.import_folder(assets)
    [result] = store.install(["scrfd_2.5g"])
    assert not result.downloaded and result.paths["model"] == (assets / "scrfd_2.5g.onnx").resolve()


def test_import_of_a_folder_without_models_says_what_to_point_at(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelMissing, match=r"\.assets/models"):
        ModelStore(tmp_path / "models").import_folder(tmp_path / "empty")
    with pytest.raises(ModelMissing, match="not a folder"):
        ModelStore(tmp_path / "models").import_folder(tmp_path / "nope")


def test_damaged_registry_is_set_aside_and_the_store_still_works(tmp_path, caplog):
    models = tmp_path / "models"
    _write_release_model(models, "scrfd_2.5g", b"abc" * 10)
    (models / "registry.json").write_text("{not json")
    assert ModelStore(models).path("scrfd_2.5g") == models / "scrfd_2.5g.onnx"
    assert (models / "registry.json.corrupt").exists()
    assert "facecache models import" in caplog.text
    assert json.loads((models / "registry.json").read_text())["version"] == 1


def test_crc32_sidecar_format_is_zlib_crc32_of_the_whole_file():
    assert crc32_hex(b"hello") == format(zlib.crc32(b"hello"), "08x") == "3610a686"
