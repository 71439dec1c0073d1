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


def test_install_default_models_also_installs_the_iris_model_the_eyes_swapper_needs(bpy, addon, tmp_path):
    """The button's models (the default, and the iris model of "Classic, Eyes Follow"), as its job asks for them."""
    folder = tmp_path / "models"
    request = {"kind": "install_models", "settings": {"models_dir": str(folder)},
               "models": list(addon.ops.INSTALLED_MODELS)}
    job = addon.runtime.ENGINE.request(request).wait()
    assert job.error is None, job.error
    assert job.result["installed"] == ["mtcnn", "face_mesh_468", "facenet_512", "iris_landmark"]
    assert ModelStore(folder).model("iris_landmark").verified
