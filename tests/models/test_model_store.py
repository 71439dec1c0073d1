"""ModelStore without the network: missing and corrupt models, imports in place, digests."""

import json
import os
import zlib

import pytest

import facecache.models.installed as store_module
from facecache.errors import ModelCorrupt, ModelMissing
from facecache.models.store import ModelStore

from model_helpers import catalog_standin, crc32_hex


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
    for name in ("mtcnn", "face_mesh_468", "facenet_512"):  # the default pack's models name the pack
        with pytest.raises(ModelMissing, match="`facecache models install default`"):
            store.paths(name)
    with pytest.raises(ModelMissing, match="facecache models install default"):
        store.digest("mtcnn")
    assert not store.is_installed("mtcnn")
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
    real = store_module.hash_bytes
    monkeypatch.setattr(store_module, "hash_bytes", lambda *a, **k: calls.append(len(a[0])) or real(*a, **k))
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


def _standin_bytes(tmp_path, name, **kwargs) -> bytes:
    return catalog_standin(tmp_path / "standins" / f"{name}.onnx", name, **kwargs).read_bytes()


def _tree(folder):
    return {p.name: (p.is_symlink(), p.read_bytes() if p.is_file() else None, p.stat(follow_symlinks=False).st_mtime_ns)
            for p in sorted(folder.iterdir())}


def test_import_facefusion_folder_in_place(tmp_path):
    facefusion = tmp_path / "facefusion"
    assets = facefusion / ".assets" / "models"
    scrfd = _write_release_model(assets, "scrfd_2.5g", _standin_bytes(tmp_path, "scrfd_2.5g"))
    _write_release_model(assets, "yoloface_8n", _standin_bytes(tmp_path, "yoloface_8n"), sidecar=None)
    _write_release_model(assets, "2dfan4", _standin_bytes(tmp_path, "2dfan4"), sidecar="00000000")
    (assets / "some_other_model.onnx").write_bytes(b"ignored")
    models = tmp_path / "models"
    before = _tree(assets)

    report = ModelStore(models).import_folder(facefusion)
    assert report.folder == assets.resolve() and report.newly_registered
    assert report.verified == ["scrfd_2.5g"]
    assert report.unverified == ["yoloface_8n"]
    assert list(report.refused) == ["2dfan4.onnx"] and "does not match its sidecar 2dfan4.hash" in report.refused["2dfan4.onnx"]
    assert _tree(assets) == before  # FaceFusion's folder is never changed: nothing renamed or written

    # nothing copied: the models folder holds only the registry, which persists the import
    assert sorted(p.name for p in models.iterdir()) == ["registry.json"]
    assert json.loads((models / "registry.json").read_text())["imports"] == [str(assets.resolve())]
    store = ModelStore(models)
    assert store.path("scrfd_2.5g") == scrfd.resolve()
    assert store.status("scrfd_2.5g").location == f"imported: {assets.resolve()}"
    assert store.model("yoloface_8n").verified is False
    assert not store.is_installed("2dfan4") and not store.status("2dfan4").installed
    with pytest.raises(ModelMissing):
        store.path("2dfan4")
    # importing again is harmless
    assert not store.import_folder(assets).newly_registered
    assert _tree(assets) == before


def test_import_refuses_junk_wrong_contracts_and_symlinks_leaving_the_folder(tmp_path):
    """The files the issue tried: a text file, random bytes, a symlink to /etc/passwd, plus a valid
    ONNX graph of another model under a catalog name and a dangling symlink. All refused, with why,
    left as they are, and not installed; a valid stand-in beside them is used."""
    assets = tmp_path / "ff" / ".assets" / "models"
    assets.mkdir(parents=True)
    (assets / "scrfd_2.5g.onnx").write_text("this is a text file, not a model\n")
    (assets / "arcface_w600k_r50.onnx").write_bytes(os.urandom(4096))
    (assets / "2dfan4.onnx").symlink_to("/etc/passwd")
    (assets / "yoloface_8n.onnx").write_bytes(_standin_bytes(tmp_path, "yoloface_8n", inputs=("images",)))
    (assets / "inswapper_128.onnx").symlink_to(assets / "missing.onnx")
    good = assets / "hyperswap_1a_256.onnx"
    good.write_bytes(_standin_bytes(tmp_path, "hyperswap_1a_256"))
    before = _tree(assets)

    store = ModelStore(tmp_path / "models")
    report = store.import_folder(assets)
    assert sorted(report.refused) == ["2dfan4.onnx", "arcface_w600k_r50.onnx", "inswapper_128.onnx",
                                      "scrfd_2.5g.onnx", "yoloface_8n.onnx"]
    assert "does not load as an ONNX model" in report.refused["scrfd_2.5g.onnx"]
    assert "does not load as an ONNX model" in report.refused["arcface_w600k_r50.onnx"]
    assert "symbolic link to /etc/passwd, outside" in report.refused["2dfan4.onnx"]
    assert "its inputs are ['images'], but yoloface_8n has ['input']" in report.refused["yoloface_8n.onnx"]
    assert "not a regular file" in report.refused["inswapper_128.onnx"]
    assert report.unverified == ["hyperswap_1a_256"]
    assert _tree(assets) == before

    fresh = ModelStore(tmp_path / "models")  # the refusals are remembered
    installed = {s.name for s in fresh.statuses() if s.installed}
    assert installed == {"hyperswap_1a_256"}
    with pytest.raises(ModelMissing):
        fresh.path("2dfan4")
    assert fresh.path("hyperswap_1a_256") == good


def test_a_junk_file_added_after_the_import_is_refused_when_first_used(tmp_path, caplog):
    assets = tmp_path / "ff"
    _write_release_model(assets, "yoloface_8n", _standin_bytes(tmp_path, "yoloface_8n"))
    store = ModelStore(tmp_path / "models")
    store.import_folder(assets)
    (assets / "2dfan4.onnx").write_bytes(b"junk" * 100)
    assert not store.is_installed("2dfan4")  # what `--landmarker auto` asks: the junk is skipped
    assert "2dfan4.onnx is refused: it is not a 2dfan4 model: it does not load as an ONNX model" in caplog.text
    assert (assets / "2dfan4.onnx").read_bytes() == b"junk" * 100


def test_imported_and_checked_model_is_not_downloaded(tmp_path):
    assets = tmp_path / "ff" / ".assets" / "models"
    _write_release_model(assets, "scrfd_2.5g", _standin_bytes(tmp_path, "scrfd_2.5g"))
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


def _change_in_place(path, offset=64, count=64):
    """Flip `count` bytes of a file and restore its size and mtime (what the issue tried)."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    for i in range(offset, offset + count):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def test_a_session_is_made_only_from_bytes_with_the_checked_digest(tmp_path):
    from facecache.errors import ModelChanged
    from facecache.models.runtime import SessionFactory

    assets = tmp_path / "ff"
    model_file = catalog_standin(assets / "arcface_w600k_r50.onnx", "arcface_w600k_r50")  # no sidecar
    store = ModelStore(tmp_path / "models")
    store.import_folder(assets)
    checked = store.model("arcface_w600k_r50")
    assert store.session(SessionFactory("cpu"), checked).get_inputs()[0].name == "input"

    _change_in_place(model_file, offset=model_file.stat().st_size - 80, count=4)  # inside the graph's name
    assert ModelStore(tmp_path / "models").digest("arcface_w600k_r50") == checked.digest  # size+mtime trusted
    with pytest.raises(ModelChanged, match="changed after it was checked.*size and modification time are unchanged"
                                           ".*run the same command again"):
        store.session(SessionFactory("cpu"), checked)
    assert ModelStore(tmp_path / "models").digest("arcface_w600k_r50") != checked.digest  # checked again in full
