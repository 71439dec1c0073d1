"""Fixtures for the GPU runtime's tests. No GPU and no NVIDIA driver exist on these machines, and the real
runtime is a 2 GB download: the install tests use small stand-in wheels with the pinned wheels' projects,
names and layout (`nvidia/<part>/lib/...`, `onnxruntime/...`), served as a package index (PEP 503 pages) by a
local HTTP server on 127.0.0.1, and fetched by the real pip, told to use that index and nothing else."""

from __future__ import annotations

import hashlib
import io
import os
import random
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "models"))  # model_helpers: the asset server

from facecache.gpu_runtime import pins  # noqa: E402
from facecache.gpu_runtime.activate import cuda_libraries  # noqa: E402
from facecache.gpu_runtime.pins import this_platform, this_python  # noqa: E402
from model_helpers import AssetServer, asset_server  # noqa: E402,F401 - the local HTTP server fixture

# A stand-in onnxruntime package: what the engine reads of the module, with ONNX Runtime's names.
STANDIN_ONNXRUNTIME = '''"""A stand-in for onnxruntime-gpu (tests only): the names the GPU status reads."""
__version__ = "1.26.0"
cuda_version = "12.8"


def get_available_providers():
    return ["CUDAExecutionProvider", "CPUExecutionProvider"]


def preload_dlls():
    print("Failed to load libcudnn.so.9: stand-in")
'''


@dataclass
class LocalIndex:
    """A package index on the asset server: `/simple/<project>/` pages listing `/wheels/<file>` (PEP 503)."""

    server: AssetServer
    projects: dict[str, dict[str, bytes]] = field(default_factory=dict)  # project -> {file name: bytes}

    @property
    def url(self) -> str:
        return f"{self.server.base_url}/simple/"

    def publish(self, project: str, filename: str, data: bytes) -> None:
        self.projects.setdefault(project, {})[filename] = data
        self.server.files[f"/wheels/{filename}"] = data
        self._page(project)

    def publish_standin(self, pinned: pins.Wheel, files: dict[str, bytes]) -> pins.Wheel:
        """A stand-in for the pinned wheel (its project, version and file name) holding `files`, published;
        returns its pin (the stand-in's own SHA-256 and size)."""
        data = standin_wheel(pinned, files)
        self.publish(pinned.project, pinned.filename, data)
        return pins.Wheel(pinned.cuda, pinned.platform, pinned.project, pinned.filename,
                          hashlib.sha256(data).hexdigest(), len(data))

    def withdraw(self, filename: str) -> None:
        """As if the index had lost the file: not listed, not served."""
        self.server.files.pop(f"/wheels/{filename}", None)
        for project, files in self.projects.items():
            if files.pop(filename, None) is not None:
                self._page(project)

    def _page(self, project: str) -> None:
        links = "".join(f'<a href="/wheels/{name}#sha256={hashlib.sha256(body).hexdigest()}">{name}</a>\n'
                        for name, body in self.projects[project].items())
        self.server.files[f"/simple/{project}/"] = f"<html><body>\n{links}</body></html>\n".encode()


@pytest.fixture
def pip_index(asset_server, monkeypatch) -> LocalIndex:
    """pip reads this local index and nothing else: no configuration file (this machine's global pip config
    adds other indexes and find-links) and no PIP_* variable but the index's."""
    for name in list(os.environ):
        if name.upper().startswith("PIP_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    index = LocalIndex(asset_server)
    monkeypatch.setenv("PIP_INDEX_URL", index.url)
    return index


def standin_wheel(wheel: pins.Wheel, files: dict[str, bytes]) -> bytes:
    """A wheel named and versioned as `wheel` (pip checks its metadata against the request) holding `files`."""
    dist_info = f"{wheel.project.replace('-', '_')}-{wheel.version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {wheel.project}\nVersion: {wheel.version}\n"
    files = {**files, f"{dist_info}/METADATA": metadata.encode(),
             f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: facecache tests\nRoot-Is-Purelib: false\n"}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


@pytest.fixture
def standin_set(pip_index):
    """(RuntimeSet of CUDA 12 stand-ins published on `pip_index`, {file name: bytes}): one library wheel (a
    pinned library's project, version and file name) holding every library file the engine loads (not a
    loadable library: the loader says why), and an onnxruntime-gpu wheel for this Python and for one other."""
    if this_platform() is None:
        pytest.skip("the NVIDIA runtime exists for linux x86-64 and Windows x64 only")
    platform = this_platform()
    pinned = pins.runtime_set("12", platform)
    library = pinned.libraries[0]
    files = {"/".join(lib.folder + (lib.name,)): b"not a shared library: " + lib.name.encode()
             for lib in cuda_libraries("12", platform)}
    files["nvidia/padding.bin"] = random.Random(24).randbytes(256 * 1024)  # pip writes it in many chunks
    wheels = {library.filename: pip_index.publish_standin(library, files)}
    other = "cp313" if this_python() != "cp313" else "cp311"
    for tag in (this_python(), other):
        wheel = pinned.onnxruntime[tag]
        wheels[wheel.filename] = pip_index.publish_standin(wheel, {
            "onnxruntime/__init__.py": STANDIN_ONNXRUNTIME.encode(),
            "onnxruntime_gpu-1.26.0.data/purelib/onnxruntime/tools.py": b"X = 1\n",
            "onnxruntime_gpu-1.26.0.data/headers/h.h": b""})
    standin = pins.RuntimeSet("12", platform, (wheels[library.filename],),
                              {w.python: w for w in wheels.values() if not w.is_library})
    served = {name: data for files in pip_index.projects.values() for name, data in files.items()}
    return standin, served


@pytest.fixture(autouse=True)
def runtime_dir(tmp_path, monkeypatch):
    """Each test's own runtime folder (never the user's)."""
    folder = tmp_path / "gpu-runtime"
    monkeypatch.setenv("FACECACHE_GPU_RUNTIME", str(folder))
    return folder
