"""Models that are not what they claim: a file changed in place with its size and mtime kept, and junk
in an imported FaceFusion folder. Neither ever reaches the cache under a good model's namespace."""

import json
import os
import re
import shutil

import pytest

from fault_helpers import cli

pytestmark = pytest.mark.index  # real MTCNN weights and portraits


def packs(cache):
    return sorted(p.name for p in cache.rglob("*.fcp"))


def test_a_model_changed_in_place_is_caught_before_anything_is_cached(tmp_path, models_dir, fault_media,
                                                                     portrait_paths):
    models, cache = tmp_path / "models", tmp_path / "cache"
    shutil.copytree(models_dir, models)
    first = cli("analyze", fault_media["portrait"], "--cache-dir", cache, "--models-dir", models, "--json")
    assert first.code == 0 and first.summary["faces"] == 1, first.err
    pnet = models / "pnet.onnx"
    st = pnet.stat()
    data = bytearray(pnet.read_bytes())
    data[len(data) // 2: len(data) // 2 + 64] = bytes(b ^ 0xFF for b in data[len(data) // 2: len(data) // 2 + 64])
    pnet.write_bytes(bytes(data))
    os.utime(pnet, ns=(st.st_atime_ns, st.st_mtime_ns))  # size and mtime as before: the cheap check passes
    before = packs(cache)

    changed = cli("analyze", portrait_paths["astronaut"], "--cache-dir", cache, "--models-dir", models, "--json")
    assert changed.code == 2, changed.err
    (line,) = [line for line in changed.err.splitlines() if line.startswith("facecache:")]
    assert re.search(r"pnet.onnx changed after it was checked .*although its size and modification time are "
                     r"unchanged; nothing was computed with it", line)
    assert "pinned SHA-256" in line and "facecache models install default" in line
    assert packs(cache) == before  # nothing computed with it was stored under the good model's namespace
    assert (models / "pnet.onnx.corrupt").exists() and not pnet.exists()  # set aside in our own models folder
    warm = cli("analyze", fault_media["portrait"], "--cache-dir", cache, "--models-dir", models, "--json")
    assert warm.code == 2 and "not installed" in warm.err  # until it is reinstalled, never used


def test_junk_in_an_imported_folder_is_refused_and_the_default_analysis_still_runs(tmp_path, models_dir,
                                                                                  fault_media):
    models, cache, facefusion = tmp_path / "models", tmp_path / "cache", tmp_path / "facefusion"
    shutil.copytree(models_dir, models)
    facefusion.mkdir()
    (facefusion / "scrfd_2.5g.onnx").write_text("a text file")
    (facefusion / "arcface_w600k_r50.onnx").write_bytes(os.urandom(2048))
    (facefusion / "2dfan4.onnx").symlink_to("/etc/passwd")
    (facefusion / "2dfan4.hash").write_text("00000000")
    before = {p.name: p.read_bytes() for p in facefusion.iterdir() if not p.is_symlink()}

    imported = cli("models", "import", facefusion, "--models-dir", models)
    assert imported.code == 1, imported.err  # done, but files were refused
    for name in ("scrfd_2.5g.onnx", "arcface_w600k_r50.onnx", "2dfan4.onnx"):
        assert f"{name}: " in imported.out
    listed = json.loads(cli("models", "list", "--models-dir", models, "--json").out)
    assert {m["name"] for m in listed["models"] if m["installed"]} == {"mtcnn"}
    assert {p.name: p.read_bytes() for p in facefusion.iterdir() if not p.is_symlink()} == before  # untouched

    analysed = cli("analyze", fault_media["portrait"], "--cache-dir", cache, "--models-dir", models, "--json")
    assert analysed.code == 0, analysed.err
    assert analysed.summary["faces"] == 1 and analysed.summary["inferences"]["landmark"] == 0


@pytest.mark.parametrize("under", [False, True], ids=["the file", "a folder under it"])
def test_a_models_folder_that_is_a_file_is_one_line_and_exit_6(tmp_path, fault_media, under):
    picture = tmp_path / "s.png"
    shutil.copy(fault_media["portrait"], picture)
    models = picture / "models" if under else picture
    result = cli("swap", "--source", picture, "--target", picture, "--out", tmp_path / "out",
                 "--cache-dir", tmp_path / "cache", "--models-dir", models)
    assert result.code == 6, result.err
    assert result.err.strip().splitlines() == [
        f"facecache: error: cannot use the models folder {models}{'' if not under else f' ({picture})'}: it (or a "
        "folder above it) is a file, not a folder; pass a folder to --models-dir (or $FACECACHE_MODELS), or leave it "
        "unset for the per-user models folder"]
    assert not packs(tmp_path / "cache") and not list((tmp_path / "out").rglob("*.png"))  # nothing made
