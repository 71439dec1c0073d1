"""`./dev gpu-check`: the NVIDIA GPU path measured on an NVIDIA GPU, CPU and GPU side by side from one run.

1. installs the NVIDIA runtime into a temporary folder (`facecache gpu install`: the real pinned wheels, about
   2 GB, downloaded by pip from the index pip is set up for), and prints `facecache gpu status`; with
   `--installed-onnxruntime`, uses instead the onnxruntime-gpu this Python already imports, installed with
   pip beside NVIDIA's library wheels (as on a CUDA machine image where nothing can be downloaded);
2. runs `facecache bench pipeline --json` (its cold pass: the first analysis of new footage, tracking on,
   with detection on every frame beside it) with `--providers cpu` and with `--providers cuda`, for each
   `--faces`, and prints their timings side by side with the ratio;
3. runs the quality bench's swap (`facecache bench quality`) with each, and prints the pixel difference
   between the CPU's and the GPU's pictures;
4. exits 1 unless every model session of the CUDA run really ran on CUDA (ONNX Runtime's own answer).

    ./dev gpu-check [--frames 33] [--size 1920x1080] [--faces 1,6] [--runtime-dir DIR | --installed-onnxruntime]
                    [--json FILE] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np

CUDA = "CUDAExecutionProvider"


def facecache(env: dict, *args: str) -> dict:
    """One `facecache ... --json` command; its JSON answer (stderr goes through to the terminal)."""
    command = [sys.executable, "-m", "facecache", *args, "--json"]
    print("$ facecache " + " ".join(args), file=sys.stderr, flush=True)
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, text=True)
    answer = json.loads(done.stdout or "{}")
    if done.returncode != 0:
        raise SystemExit(f"gpu-check: `facecache {' '.join(args)}` failed: {answer.get('error', done.returncode)}")
    return answer


def timings(result: dict) -> dict[str, float]:
    """The bench's timing figures (milliseconds and seconds), by name."""
    found = {}
    for name, value in result.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and (
                name.endswith(("_ms", "_s")) or "_ms_" in name):
            found[name] = float(value)
    for model, value in result.get("cold_analysis_cpu_ms_per_frame_by_model", {}).items():
        found[f"cold_analysis_cpu_ms_per_frame[{model}]"] = float(value)
    return found


def side_by_side(cpu: dict, gpu: dict) -> list[str]:
    a, b = timings(cpu), timings(gpu)
    lines = [f"{'figure':<48} {'CPU':>10} {'GPU':>10} {'GPU/CPU':>8}"]
    for name in sorted(set(a) & set(b)):
        ratio = f"{b[name] / a[name]:.3f}" if a[name] else "-"
        lines.append(f"{name:<48} {a[name]:>10.2f} {b[name]:>10.2f} {ratio:>8}")
    return lines


def pixel_differences(cpu_dir: Path, gpu_dir: Path) -> dict[str, dict]:
    """For each picture the quality bench wrote in both runs: the largest channel difference, the mean one,
    and the share of pixels that differ at all."""
    found = {}
    for cpu_file in sorted(cpu_dir.glob("*.png")):
        gpu_file = gpu_dir / cpu_file.name
        if not gpu_file.is_file():
            found[cpu_file.name] = {"error": "missing from the GPU run"}
            continue
        a = cv2.imread(str(cpu_file), cv2.IMREAD_UNCHANGED).astype(np.int16)
        b = cv2.imread(str(gpu_file), cv2.IMREAD_UNCHANGED).astype(np.int16)
        if a.shape != b.shape:
            found[cpu_file.name] = {"error": f"sizes differ: {a.shape} and {b.shape}"}
            continue
        diff = np.abs(a - b)
        found[cpu_file.name] = {"max": int(diff.max()), "mean": round(float(diff.mean()), 4),
                                "pixels_differing": round(float((diff.max(axis=-1) > 0).mean()), 5)}
    return found


def cuda_ran(result: dict) -> bool:
    """Whether every model session of a pipeline bench ran on CUDA (ONNX Runtime's answer after each was made,
    and after any run that fell back)."""
    runs_on = result.get("machine", {}).get("runs_on", {})
    return bool(runs_on) and set(runs_on.values()) == {CUDA}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", default="33", help="frames of the pipeline bench's clip (default 33)")
    parser.add_argument("--size", default="1920x1080", help="the clip's WIDTHxHEIGHT (default 1920x1080)")
    parser.add_argument("--runtime-dir", type=Path, default=None, help="install here and keep it (default: a "
                                                                        "temporary folder, deleted at the end)")
    parser.add_argument("--installed-onnxruntime", action="store_true",
                        help="install nothing: use the onnxruntime-gpu this Python imports (pip-installed beside "
                             "NVIDIA's library wheels)")
    parser.add_argument("--faces", default="1,6", help="faces in the pipeline bench's clip, a run each (default 1,6)")
    parser.add_argument("--json", type=Path, default=None, help="also write the summary and both benches here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (runtime and pictures)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="facecache-gpu-check-"))
    env = {**os.environ, "FACECACHE_GPU_RUNTIME": str(args.runtime_dir or work / "gpu-runtime")}
    try:
        if args.installed_onnxruntime:
            install = {"cuda": "", "reason": "the onnxruntime-gpu this Python imports; nothing installed"}
        else:
            install = facecache(env, "gpu", "install")
            print(f"installed CUDA {install['cuda']} ({install['reason']}): {install['download_bytes'] / 1e9:.2f} "
                  f"GB downloaded, {install['disk_bytes'] / 1e9:.2f} GB on disk")
        status = facecache(env, "gpu", "status", "--providers", "cuda")
        driver = status["driver"]
        print(f"driver {driver['version']}: " + ", ".join(f"{g['name']} ({g['compute_capability']})"
                                                          for g in driver["gpus"]))
        for name, state in status["providers"].items():
            print(f"  {name}: {state['usable']} ({state['reason']})")
        pipelines = {}
        for faces in args.faces.split(","):
            bench = ["bench", "pipeline", "--frames", args.frames, "--size", args.size, "--faces", faces]
            cpu, gpu = facecache(env, *bench, "--providers", "cpu"), facecache(env, *bench, "--providers", "cuda")
            print(f"{faces} face(s) a frame, {args.size}, {args.frames} frames:")
            print("\n".join(side_by_side(cpu, gpu)))
            pipelines[faces] = {"cpu": cpu, "cuda": gpu}
        quality = {name: facecache(env, "bench", "quality", "--providers", name, "--out", str(work / f"quality-{name}"))
                   for name in ("cpu", "cuda")}
        differences = pixel_differences(work / "quality-cpu", work / "quality-cuda")
        for name, figures in differences.items():
            print(f"pixels {name}: {figures}")
        runs_on = {faces: {name: run["machine"]["runs_on"] for name, run in runs.items()}
                   for faces, runs in pipelines.items()}
        summary = {"gpus": driver["gpus"], "driver": driver["version"],
                   "cuda": install["cuda"] or status.get("onnxruntime", {}).get("cuda", ""), "runs_on": runs_on,
                   "pixels": differences, "quality": {name: {k: v for k, v in q.items() if isinstance(v, (int, float))}
                                                      for name, q in quality.items()}}
        print(json.dumps(summary, sort_keys=True))
        if args.json:
            args.json.write_text(json.dumps({**summary, "status": status, "pipelines": pipelines}, indent=1))
        not_on_cuda = {faces: ran["cuda"] for faces, ran in runs_on.items() if not cuda_ran(pipelines[faces]["cuda"])}
        if not_on_cuda:
            print(f"gpu-check: CUDA did not really run: {not_on_cuda}; "
                  f"{status['providers'].get(CUDA, {}).get('reason', '')}", file=sys.stderr)
            return 1
        print("gpu-check: every model session of the CUDA run ran on CUDA")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
