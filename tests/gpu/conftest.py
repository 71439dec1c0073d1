"""Fixtures for the GPU runtime's tests. No GPU and no NVIDIA driver exist on these machines, and the real
runtime is a 2 GB download: the install tests use small stand-in wheels with the pinned wheels' names and
layout (`nvidia/<part>/lib/...`, `onnxruntime/...`), served by a local HTTP server on 127.0.0.1."""

from __future__ import annotations

import hashlib
import sys
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "models"))  # model_helpers: the asset server

from facecache.gpu import pins  # noqa: E402
from facecache.gpu.activate import cuda_libraries  # noqa: E402
from facecache.gpu.layout import this_platform, this_python  # noqa: E402
from model_helpers import asset_server  # noqa: E402,F401 - the local HTTP server fixture

# A stand-in onnxruntime package: what the engine reads of the module, with ONNX Runtime's names.
STANDIN_ONNXRUNTIME = '''"""A stand-in for onnxruntime-gpu (tests only): the names the GPU status reads."""
__version__ = "1.26.0"
cuda_version = "12.8"


def get_available_providers():
    return ["CUDAExecutionProvider", "CPUExecutionProvider"]


def preload_dlls():
    print("Failed to load libcudnn.so.9: stand-in")
'''


def _wheel(folder: Path, filename: str, files: dict[str, bytes]) -> bytes:
    path = folder / filename
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path.read_bytes()


@pytest.fixture
def standin_set(tmp_path, asset_server):
    """(RuntimeSet of CUDA 12 stand-ins served by `asset_server`, {file name: bytes}): one library wheel
    holding every library file the engine loads (not a loadable library: the loader says why), and an
    onnxruntime-gpu wheel for this Python and for one other."""
    if this_platform() is None:
        pytest.skip("the NVIDIA runtime exists for linux x86-64 and Windows x64 only")
    platform = this_platform()
    pinned = pins.runtime_set("12", platform)
    folder = tmp_path / "wheels"
    folder.mkdir()
    library = pinned.libraries[0].filename  # a pinned library wheel's name
    files = {"/".join(lib.folder + (lib.name,)): b"not a shared library: " + lib.name.encode()
             for lib in cuda_libraries("12", platform)}
    files["nvidia_standin-1.0.dist-info/METADATA"] = b"Name: nvidia-standin\n"
    served = {library: _wheel(folder, library, files)}
    other = "cp313" if this_python() != "cp313" else "cp311"
    for tag in (this_python(), other):
        name = pinned.onnxruntime[tag].filename
        served[name] = _wheel(folder, name, {"onnxruntime/__init__.py": STANDIN_ONNXRUNTIME.encode(),
                                             "onnxruntime_gpu-1.26.0.dist-info/METADATA": b"Name: onnxruntime-gpu\n",
                                             "onnxruntime_gpu-1.26.0.data/purelib/onnxruntime/tools.py": b"X = 1\n",
                                             "onnxruntime_gpu-1.26.0.data/headers/h.h": b""})
    for name, data in served.items():
        asset_server.files[f"/wheels/{name}"] = data
    wheels = {name: pins.Wheel("12", platform, "onnxruntime-gpu" if name.startswith("onnxruntime") else "nvidia-x",
                               f"{asset_server.base_url}/wheels/{name}", hashlib.sha256(data).hexdigest(), len(data))
              for name, data in served.items()}
    standin = pins.RuntimeSet("12", platform, (wheels[library],),
                              {w.python: w for w in wheels.values() if not w.is_library})
    return standin, served


@pytest.fixture(autouse=True)
def runtime_dir(tmp_path, monkeypatch):
    """Each test's own runtime folder (never the user's), and no wheel mirror."""
    folder = tmp_path / "gpu-runtime"
    monkeypatch.setenv("FACECACHE_GPU_RUNTIME", str(folder))
    monkeypatch.delenv("FACECACHE_GPU_WHEELS_URL", raising=False)
    return folder
