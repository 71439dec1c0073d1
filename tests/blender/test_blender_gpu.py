"""The GPU in the add-on: Check GPU asks the engine session and the preferences show its answer without
touching the file system; a job that asked for CUDA and ran on the CPU says so once, in its report and in
the panel. The engine runs on the onnxruntime it finds: the zip's CPU wheel (in .venv-blender4.x), or the
test environment's (.venv), where CUDA is offered but its libraries are missing; CUDA runs in neither."""

import json

import pytest

from blender_helpers import add_movie, select_only
from test_blender_draw import FILE_SYSTEM_CALLS, WithLayout, _refuse, draw_everything, labels
from test_blender_ui import CheckedLayout

pytestmark = [pytest.mark.blender, pytest.mark.index]


def draw_preferences(bpy, addon, monkeypatch) -> list[str]:
    drawn = []
    with monkeypatch.context() as closed:
        for module, name in FILE_SYSTEM_CALLS:
            closed.setattr(module, name, _refuse(name))
        type(addon.prefs).draw(WithLayout(addon.prefs, CheckedLayout(bpy, drawn)), bpy.context)
    return drawn


def test_check_gpu_shows_what_runs_where_in_the_preferences(bpy, addon, project, tmp_path, monkeypatch):
    from facecache.gpu_runtime import pins

    drawn = draw_preferences(bpy, addon, monkeypatch)  # before any answer: this platform's size from the pins
    cuda_set = pins.runtime_set(pins.DEFAULT_CUDA, pins.this_platform())  # 2.0 GB on Linux, 1.9 on Windows
    size = f"{cuda_set.download_bytes(pins.this_python()) / 1e9:.1f} GB"
    assert any(b.get("text", "").startswith(f"Install NVIDIA GPU Runtime ({size} download)") for _n, b in drawn), drawn
    addon.prefs.gpu_runtime_dir = str(tmp_path / "gpu-runtime")  # the engine is started with it
    assert addon.runtime.ENGINE.environment == {"FACECACHE_GPU_RUNTIME": str(tmp_path / "gpu-runtime")}
    assert bpy.ops.faceswap.gpu_check() == {"FINISHED"}
    status = addon.runtime.STATE.gpu
    assert status["runtime"]["folder"] == str(tmp_path / "gpu-runtime") and not status["runtime"]["installed"]
    assert status["providers"]["CUDAExecutionProvider"]["usable"] is False
    runs = {model["runs_on"][0] for model in status["sessions"]["models"].values()}
    assert runs == {"CPUExecutionProvider"} and "pnet.onnx" in status["sessions"]["models"]

    text = labels(draw_preferences(bpy, addon, monkeypatch))
    assert any(t.startswith("NVIDIA runtime: not installed") for t in text)
    assert any(t.startswith("Runs on CPU: pnet.onnx") for t in text)
    assert any(t.startswith("CUDA: not usable (") for t in text)
    addon.prefs.gpu_runtime_dir = ""
    assert addon.runtime.ENGINE.environment == {}


def test_a_cuda_job_on_the_cpu_is_reported_once_in_the_report_and_the_panel(bpy, addon, project, clip, monkeypatch):
    addon.prefs.execution_provider = "cuda"
    try:
        strip = add_movie(project, clip, frame_start=1)
        strip.frame_offset_end = 21  # media frames 0..2
        select_only(project, strip)
        assert bpy.ops.faceswap.swap() == {"FINISHED"}
        report = json.loads(project.faceswap.last_report)
        assert "CUDAExecutionProvider" in report["gpu_warning"] and "running on the CPU" in report["gpu_warning"]
        assert set(report["providers"].values()) == {"CPUExecutionProvider"}
        text = labels(draw_everything(bpy, addon, project, monkeypatch))
        assert f"Not on the GPU: {report['gpu_warning']}" in " ".join(text)  # wrapped to the sidebar's width
        assert bpy.ops.faceswap.update() == {"FINISHED"}
        assert "gpu_warning" not in json.loads(project.faceswap.last_report)  # said once
    finally:
        addon.prefs.execution_provider = "auto"


def test_the_runtimes_install_shows_its_progress_and_cancel_in_the_preferences(bpy, addon, project, monkeypatch):
    """While the GPU runtime installs, the preferences (where it was started) show its progress and Cancel in
    place of the buttons; the job's state is runtime state, as the sidebar's progress is."""
    status = addon.runtime.STATE.job
    monkeypatch.setattr(status, "running", True)
    monkeypatch.setattr(status, "kind", "gpu_install")
    monkeypatch.setattr(status, "progress", 0.25)
    monkeypatch.setattr(status, "text", "gpu_install: 0.5 GB of 2.0 GB 1/8")
    drawn = draw_preferences(bpy, addon, monkeypatch)
    assert ("progress", {"factor": 0.25, "text": "gpu_install: 0.5 GB of 2.0 GB 1/8"}) in drawn
    operators = [bound.get("operator") for name, bound in drawn if name == "operator"]
    assert "faceswap.cancel" in operators and "faceswap.gpu_install" not in operators
    monkeypatch.setattr(status, "running", False)  # done: the buttons again
    operators = [bound.get("operator") for name, bound in draw_preferences(bpy, addon, monkeypatch) if name == "operator"]
    assert "faceswap.gpu_install" in operators and "faceswap.cancel" not in operators
