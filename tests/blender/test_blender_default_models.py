"""The extension's *Install Default Models* installs the whole embedded default (MTCNN, the face
mesh and FaceNet, the last two converted by our own converters) through the job it launches,
with the engine vendored in the built extension zip. (In the bpy module online access cannot be
switched on, so the button's job is started through the engine client it uses.)"""

import pytest

from facecache.models.store import ModelStore

pytestmark = [pytest.mark.blender, pytest.mark.index]


def test_install_default_models_job_installs_detector_landmarker_and_recognizer(bpy, addon, tmp_path):
    folder = tmp_path / "models"
    job = addon.runtime.ENGINE.request({"kind": "install_models", "settings": {"models_dir": str(folder)}}).wait()
    assert job.error is None, job.error
    assert job.result["installed"] == ["mtcnn", "face_mesh_468", "facenet_512"]
    store = ModelStore(folder)
    for name in ("mtcnn", "face_mesh_468", "facenet_512"):
        assert store.model(name).verified  # pinned SHA-256, including our conversions' outputs
