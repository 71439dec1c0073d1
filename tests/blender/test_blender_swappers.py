"""Every swapper the panel offers runs in the installed extension, with only the wheels it ships.

The FaceFusion models cannot be downloaded here, so they are stand-in ONNX graphs with the real
models' input and output names and shapes (tests/swap/swap_graphs.py, tests/analysis_graphs.py),
imported through the panel's own Import operator. The engine process is given an `onnx` package that
refuses to import, so the test proves the extension needs none (InSwapper's emap is read at import).
"""

import os
import shutil
import zlib

import cv2
import numpy as np
import pytest

from blender_helpers import add_movie, report, select_only

pytestmark = [pytest.mark.blender, pytest.mark.index]


@pytest.fixture
def facefusion_folder(tmp_path):
    import sys

    sys.path.insert(0, str(os.path.join(os.path.dirname(__file__), "..", "swap")))
    from analysis_graphs import echo_model
    from swap_graphs import emap_matrix, hyperswap_standin, inswapper_standin, probe_vector

    folder = tmp_path / "facefusion" / ".assets" / "models"
    folder.mkdir(parents=True)
    echo_model(folder / "arcface_w600k_r50.onnx", "input", (1, 3, 112, 112), "output", 512)
    inswapper_standin(folder / "inswapper_128.onnx", emap_matrix(), probe_vector())
    hyperswap_standin(folder / "hyperswap_1a_256.onnx", probe_vector())
    for model in folder.glob("*.onnx"):
        (folder / f"{model.stem}.hash").write_text(f"{zlib.crc32(model.read_bytes()):08x}")
    return tmp_path / "facefusion"


@pytest.fixture
def engine_without_onnx(addon, tmp_path, monkeypatch):
    """The engine process finds an `onnx` package that cannot be imported, ahead of the test venv's."""
    shadow = tmp_path / "no_onnx" / "onnx"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('onnx is not one of the extension wheels')\n")
    real_env = addon.engine_client.worker_env

    def env(extra=None):
        values = real_env(extra)
        values["PYTHONPATH"] = os.pathsep.join([str(shadow.parent), values["PYTHONPATH"]])
        return values

    monkeypatch.setattr(addon.engine_client, "worker_env", env)
    addon.runtime.ENGINE.stop()  # the next request starts a process with this environment
    yield
    monkeypatch.undo()
    addon.runtime.ENGINE.stop()


def test_installed_extension_runs_the_inswapper_and_hyperswap_stand_ins(bpy, addon, project, clip, tmp_path,
                                                                         models_dir, facefusion_folder,
                                                                         engine_without_onnx):
    local_models = tmp_path / "models"
    local_models.mkdir()
    for name in ("pnet.onnx", "rnet.onnx", "onet.onnx", "registry.json"):
        if (models_dir / name).exists():
            shutil.copyfile(models_dir / name, local_models / name)
    saved = addon.prefs.models_dir
    addon.prefs.models_dir = str(local_models)
    try:
        assert bpy.ops.faceswap.import_models(directory=str(facefusion_folder)) == {"FINISHED"}
        assert list((local_models / "derived").glob("inswapper_128-*.emap.fcp"))  # the emap, read at import
        strip = add_movie(project, clip)
        strip.frame_offset_end = 21  # media frames 0..2
        select_only(project, strip)
        overlays = {}
        for swapper in ("inswapper_128", "hyperswap_1a_256"):
            project.faceswap.swapper = swapper
            assert bpy.ops.faceswap.swap() == {"FINISHED"}, addon.runtime.STATE.job.text
            summary = report(project)
            assert summary["written"] == 3 and summary["inferences"]["swap"] >= 2  # frames with a face
            swapped = addon.timeline.swapped_strips(project)[0]
            overlays[swapper] = cv2.imread(os.path.join(bpy.path.abspath(swapped.directory), "000001.png"),
                                           cv2.IMREAD_UNCHANGED)
            assert (overlays[swapper][..., 3] > 0).sum() > 200  # a face was composited
        assert not np.array_equal(overlays["inswapper_128"], overlays["hyperswap_1a_256"])
    finally:
        addon.prefs.models_dir = saved
