"""The engine process's side: the runtime first on the path, its libraries loaded (or each failure named),
and `facecache gpu status` saying what is usable. Run in fresh processes, as the engine runs: the path
set-up must happen before anything imports onnxruntime. The installed runtime is the stand-in of conftest
(its onnxruntime is a stand-in module, its libraries are not loadable: the loader says why)."""

import json
import os
import subprocess
import sys
from types import SimpleNamespace

from facecache.gpu_runtime.activate import cuda_libraries, load_cuda_libraries, use_runtime
from facecache.gpu.install import GpuRuntimeInstaller
from facecache.gpu_runtime.layout import Installed, RuntimeFolder, write_manifest
from facecache.gpu_runtime.pins import this_python

PROBE = ("from facecache.gpu_runtime.activate import use_runtime; setup = use_runtime(); import onnxruntime; "
         "print(onnxruntime.__file__); print(setup.site)")


def install_standin(standin) -> None:
    GpuRuntimeInstaller(sets=lambda cuda, platform: standin).install("12")


def engine_env(tmp_path, nvidia_smi: str | None = None) -> dict:
    """The test's environment with a PATH that has only this Python, and a stand-in nvidia-smi when given
    (a script printing what the driver's tool prints: no NVIDIA driver exists on these machines)."""
    tools = tmp_path / "bin"
    tools.mkdir(exist_ok=True)
    if nvidia_smi is not None:
        script = tools / "nvidia-smi"
        script.write_text(f"#!/bin/sh\ncase \"$*\" in *compute_cap*) printf '{nvidia_smi}\\n';; esac\n")
        script.chmod(0o755)
    return {**os.environ, "PATH": f"{tools}{os.pathsep}{os.path.dirname(sys.executable)}"}


def test_the_engine_imports_the_runtimes_onnxruntime_first(standin_set, runtime_dir, tmp_path):
    install_standin(standin_set[0])
    site = runtime_dir / standin_set[0].platform / this_python()
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=engine_env(tmp_path),
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str(site / "onnxruntime" / "__init__.py"), str(site)]


def test_without_a_runtime_the_engines_own_onnxruntime_is_used(tmp_path):
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=engine_env(tmp_path),
                          timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == "None" and "gpu-runtime" not in lines[0]


def status(tmp_path, nvidia_smi=None) -> dict:
    done = subprocess.run([sys.executable, "-m", "facecache", "gpu", "status", "--json", "--no-sessions"],
                          capture_output=True, text=True, env=engine_env(tmp_path, nvidia_smi), timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_status_names_each_library_that_did_not_load_and_the_missing_driver(standin_set, runtime_dir, tmp_path):
    install_standin(standin_set[0])
    report = status(tmp_path)
    assert report["runtime"]["installed"] and report["runtime"]["used"] and report["runtime"]["cuda"] == "12"
    assert report["onnxruntime"]["from_runtime"] and report["onnxruntime"]["version"] == "1.26.0"
    libraries = report["libraries"]
    assert libraries["preload_dlls_said"] == "Failed to load libcudnn.so.9: stand-in"
    failed = {lib["name"]: lib for lib in libraries["libraries"]}
    assert "libcublasLt.so.12" in failed and "libcudnn.so.9" in failed
    for lib in failed.values():  # loaded by full path from the runtime; the loader's own reason
        assert not lib["loaded"] and lib["path"].startswith(str(runtime_dir)) and lib["error"]
    assert not libraries["driver_library"]["loaded"] and libraries["driver_library"]["name"] == "libcuda.so.1"
    assert not report["driver"]["present"] and "nvidia-smi is not installed" in report["driver"]["problem"]
    cuda = report["providers"]["CUDAExecutionProvider"]
    assert cuda["usable"] is False and "no NVIDIA driver found" in cuda["reason"]
    assert report["providers"]["CPUExecutionProvider"]["usable"] is True


def test_status_with_a_driver_but_broken_libraries_names_the_libraries(standin_set, runtime_dir, tmp_path):
    install_standin(standin_set[0])
    report = status(tmp_path, "NVIDIA GeForce RTX 3060, 580.65.06, 8.6")
    assert report["driver"] == {"present": True, "version": "580.65.06", "source": "nvidia-smi", "problem": "",
                                "gpus": [{"name": "NVIDIA GeForce RTX 3060", "compute_capability": "8.6"}]}
    assert report["cuda_choice"]["cuda"] == "13"
    reason = report["providers"]["CUDAExecutionProvider"]["reason"]
    assert report["providers"]["CUDAExecutionProvider"]["usable"] is False
    assert "libcublasLt.so.12 did not load" in reason and "libcuda.so.1 did not load" in reason


def test_status_without_a_runtime_says_what_to_install(tmp_path):
    report = status(tmp_path)
    assert not report["runtime"]["installed"] and not report["onnxruntime"].get("from_runtime")
    plan = report["install_plan"]
    assert plan["cuda"] == "12" and plan["download_bytes"] > 1_900_000_000


def test_an_onnxruntime_imported_before_is_said_not_replaced(standin_set, runtime_dir):
    install_standin(standin_set[0])
    path = ["/somewhere"]
    modules = {"onnxruntime": SimpleNamespace(__file__="/elsewhere/onnxruntime/__init__.py")}
    setup = use_runtime(path=path, modules=modules)
    assert setup.site is None and "already imported from /elsewhere/onnxruntime" in setup.problem
    assert path == ["/somewhere"]


def test_a_runtime_without_this_pythons_wheel_says_so(runtime_dir):
    location = RuntimeFolder.resolve()
    location.folder.mkdir(parents=True)
    write_manifest(location.folder, Installed("12", "1.26.0", {}, {"cp27": "x.whl"}))
    path = []
    setup = use_runtime(path=path, modules={})
    assert setup.site is None and path == []
    assert f"no onnxruntime-gpu for this Python ({this_python()}; it has cp27)" in setup.problem


def standin_libraries(base, platform="linux_x86_64") -> None:
    """A file at each CUDA 12 library's path below `base` (nothing is loaded: the tests' loader only records)."""
    for library in cuda_libraries("12", platform):
        path = base.joinpath(*library.folder, library.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"stand-in")


def standin_onnxruntime(site) -> SimpleNamespace:
    """An onnxruntime package in `site`, and a stand-in of its module: what `load_cuda_libraries` reads of it."""
    (site / "onnxruntime").mkdir(parents=True)
    (site / "onnxruntime" / "__init__.py").write_text("")
    return SimpleNamespace(__file__=str(site / "onnxruntime" / "__init__.py"), cuda_version="12.8")


def standin_runtime(root, platform="linux_x86_64") -> SimpleNamespace:
    """A runtime folder laid out by hand as facecache.gpu_runtime.layout says: the libraries, this Python's
    onnxruntime and the manifest. Returns the stand-in of its onnxruntime module."""
    folder = root / platform
    standin_libraries(folder, platform)
    write_manifest(folder, Installed("12", "1.26.0", {}, {this_python(): "onnxruntime_gpu.whl"}))
    return standin_onnxruntime(folder / this_python())


def test_the_libraries_load_from_the_runtime_onnxruntime_came_from_not_the_default_one(runtime_dir, tmp_path):
    standin_runtime(runtime_dir)  # the default folder ($FACECACHE_GPU_RUNTIME) holds a runtime too
    chosen = tmp_path / "chosen-runtime"  # as with --runtime-dir or the add-on's GPU Runtime Folder
    ort = standin_runtime(chosen)
    loaded = []
    result = load_cuda_libraries(ort, loader=loaded.append, platform="linux_x86_64")
    nvidia = chosen / "linux_x86_64" / "nvidia"
    assert len(loaded) == len(cuda_libraries("12", "linux_x86_64")) + 1  # and the driver's, by its name
    assert all(path.startswith(f"{nvidia}{os.sep}") for path in loaded[:-1]) and loaded[-1] == "libcuda.so.1"
    assert not result.failures


def test_onnxruntime_installed_with_pip_loads_the_libraries_beside_it(tmp_path):
    site = tmp_path / "site-packages"  # no manifest: NVIDIA's wheels installed by pip beside onnxruntime-gpu
    standin_libraries(site)
    loaded = []
    load_cuda_libraries(standin_onnxruntime(site), loader=loaded.append, platform="linux_x86_64")
    assert all(path.startswith(f"{site / 'nvidia'}{os.sep}") for path in loaded[:-1])
