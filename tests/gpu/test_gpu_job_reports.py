"""A job's report says where each model's session runs, and a GPU fallback once: the real engine (worker
jobs with real MTCNN sessions) on these machines, where CUDA never runs (no GPU, no NVIDIA libraries)."""

import json
import subprocess
import sys

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


def test_the_clis_json_reports_say_where_the_models_ran(tmp_path, models_dir, portrait_paths):
    """`facecache swap|analyze --json`, as docs/gpu.md says of every model job's report: the provider of each
    model file's session, and the GPU fallback when CUDA was asked for and could not run."""
    common = ["--cache-dir", str(tmp_path / "cache"), "--models-dir", str(models_dir)]
    swap = subprocess.run([sys.executable, "-m", "facecache", "swap", "--source", str(portrait_paths["astronaut"]),
                           "--target", str(portrait_paths["grace_hopper"]), "--out", str(tmp_path / "out"),
                           "--providers", "cuda", "--json", *common], capture_output=True, text=True, timeout=300)
    assert swap.returncode == 0, swap.stderr
    report = json.loads(swap.stdout)
    assert set(report["providers"].values()) == {"CPUExecutionProvider"} and "pnet.onnx" in report["providers"]
    assert "CUDAExecutionProvider" in report["gpu_warning"] and "running on the CPU" in report["gpu_warning"]
    fresh = ["--cache-dir", str(tmp_path / "fresh"), "--models-dir", str(models_dir)]  # else no model runs at all
    analyze = subprocess.run([sys.executable, "-m", "facecache", "analyze", str(portrait_paths["grace_hopper"]),
                              "--providers", "cpu", "--json", *fresh], capture_output=True, text=True, timeout=300)
    assert analyze.returncode == 0, analyze.stderr
    summary = json.loads(analyze.stdout.splitlines()[-1])
    assert summary["type"] == "summary" and set(summary["providers"].values()) == {"CPUExecutionProvider"}
    assert "gpu_warning" not in summary
