"""A job's report says where each model's session runs, and a GPU fallback once: the real engine (worker
jobs with real MTCNN sessions) on these machines, where CUDA never runs (no GPU, no NVIDIA libraries)."""

import pytest

from facecache.engine import Engine, run_job

pytestmark = pytest.mark.index


def test_a_cuda_job_on_a_machine_without_cuda_reports_the_cpu_and_the_fallback_once(tmp_path, models_dir,
                                                                                    portrait_paths):
    engine = Engine()
    settings = {"cache_dir": str(tmp_path / "cache"), "models_dir": str(models_dir), "providers": "cuda",
                "sources": [str(portrait_paths["astronaut"])]}
    job = {"kind": "swap", "settings": settings,
           "items": [{"media": str(portrait_paths["grace_hopper"]), "start": 0, "stop": 1, "out": str(tmp_path / "o")}]}
    first = run_job(job, lambda message: None, engine=engine)
    assert first["providers"] == {"onet.onnx": "CPUExecutionProvider", "pnet.onnx": "CPUExecutionProvider",
                                  "rnet.onnx": "CPUExecutionProvider"}
    assert "CUDAExecutionProvider" in first["gpu_warning"] and "running on the CPU" in first["gpu_warning"]
    second = run_job({**job, "kind": "update"}, lambda message: None, engine=engine)
    assert "gpu_warning" not in second and second["providers"] == first["providers"]


def test_a_cpu_job_has_no_warning(tmp_path, models_dir, portrait_paths):
    settings = {"cache_dir": str(tmp_path / "cache"), "models_dir": str(models_dir), "providers": "cpu"}
    summary = run_job({"kind": "analyze", "settings": settings,
                       "items": [{"media": str(portrait_paths["grace_hopper"]), "start": 0, "stop": 1}]},
                      lambda message: None)
    assert set(summary["providers"].values()) == {"CPUExecutionProvider"} and "gpu_warning" not in summary
