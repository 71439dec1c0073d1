"""scripts/gpu_check.py (`./dev gpu-check`) needs an NVIDIA GPU and a 2 GB download; here its judgement and
its figures are checked: did CUDA really run, the side-by-side table, the pixel difference of two pictures."""

import importlib.util
from pathlib import Path

import cv2
import numpy as np

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu_check.py"
spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
gpu_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_check)


def test_cuda_ran_only_when_every_session_ran_on_cuda():
    cuda, cpu = "CUDAExecutionProvider", "CPUExecutionProvider"
    assert gpu_check.cuda_ran({"machine": {"runs_on": {"pnet.onnx": cuda, "rnet.onnx": cuda}}})
    assert not gpu_check.cuda_ran({"machine": {"runs_on": {"pnet.onnx": cuda, "rnet.onnx": cpu}}})
    assert not gpu_check.cuda_ran({"machine": {"runs_on": {}}})


def test_side_by_side_lists_timings_with_their_ratio():
    lines = gpu_check.side_by_side({"cold_per_frame_ms": 100.0, "frames": 33, "cold_s": 3.3},
                                   {"cold_per_frame_ms": 25.0, "frames": 33, "cold_s": 0.9})
    assert lines[1].split() == ["cold_per_frame_ms", "100.00", "25.00", "0.250"]
    assert len(lines) == 3  # frames is not a timing


def test_pixel_differences_of_two_runs(tmp_path):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "gpu").mkdir()
    picture = np.full((10, 10, 3), 100, np.uint8)
    cv2.imwrite(str(tmp_path / "cpu" / "a.png"), picture)
    picture[0, 0, 1] = 103  # one pixel off by 3 in one channel
    cv2.imwrite(str(tmp_path / "gpu" / "a.png"), picture)
    cv2.imwrite(str(tmp_path / "cpu" / "b.png"), picture)
    found = gpu_check.pixel_differences(tmp_path / "cpu", tmp_path / "gpu")
    assert found["a.png"] == {"max": 3, "mean": 0.01, "pixels_differing": 0.01}
    assert found["b.png"] == {"error": "missing from the GPU run"}
