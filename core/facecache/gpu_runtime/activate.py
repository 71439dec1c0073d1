"""The engine process's side of the GPU runtime: its onnxruntime-gpu first on the path, its libraries loaded.

1. `use_runtime()`, at the start of the engine process (the CLI, the worker) and before anything imports
   onnxruntime: the installed runtime's folder for this Python goes first on `sys.path`, so `import
   onnxruntime` finds onnxruntime-gpu instead of the CPU wheel the extension (or the venv) carries. Only
   the path changes here; nothing is loaded, so a runtime not asked for costs nothing.
2. `load_cuda_libraries(ort)`, before the first CUDA session: NVIDIA's libraries are loaded by their full
   paths in the `nvidia/` folder of the runtime `ort` was imported from (the folder step 1 was given), in
   the order onnxruntime's own `preload_dlls()` uses (cuBLASLt before cuBLAS, ...); then `preload_dlls()`
   itself runs: it finds them loaded by name (its own search looks beside the onnxruntime package, where
   the shared libraries are not) and does the rest of its work (Windows: the MSVC runtime check). On
   Windows every cuDNN DLL is loaded, including `cudnn_engines_tensor_ir64_9.dll`, which 1.26.0's
   `preload_dlls()` leaves out. Each library that fails is reported by name with the loader's reason, and
   so is the driver's own library.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import os
import sys
from collections.abc import Callable, MutableMapping, MutableSequence
from dataclasses import dataclass, field
from pathlib import Path

from facecache.gpu_runtime.layout import RuntimeFolder
from facecache.gpu_runtime.pins import this_platform, this_python


@dataclass(frozen=True)
class PathSetup:
    site: Path | None  # the folder put first on sys.path; None when the runtime is not used
    problem: str = ""  # why an installed runtime is not used ("" when used, or when none is installed)


def use_runtime(runtime_dir: str | os.PathLike | None = None, path: MutableSequence[str] = sys.path,
                modules: MutableMapping = sys.modules) -> PathSetup:
    """Put the installed runtime's onnxruntime-gpu for this Python first on `path`."""
    location = RuntimeFolder.resolve(runtime_dir)
    site = location.usable_site()
    if site is None:
        installed = location.installed()
        if installed is not None and this_python() not in installed.pythons:
            return PathSetup(None, f"the NVIDIA runtime in {location.folder} has no onnxruntime-gpu for this "
                                   f"Python ({this_python()}; it has {', '.join(sorted(installed.pythons))}): run "
                                   "`facecache gpu install` with this Python, or press Install NVIDIA GPU Runtime")
        return PathSetup(None)
    loaded = modules.get("onnxruntime")
    if loaded is not None and site not in Path(getattr(loaded, "__file__", "") or "").parents:
        return PathSetup(None, f"onnxruntime was already imported from {Path(loaded.__file__).parent} before the "
                               f"NVIDIA runtime in {site} could be put first; it runs on that one")
    while str(site) in path:
        path.remove(str(site))
    path.insert(0, str(site))
    return PathSetup(site)


@dataclass(frozen=True)
class Library:
    name: str  # the file name, as the loader knows it
    folder: tuple[str, ...]  # its folder below the one holding `nvidia/`
    optional: bool = False  # onnxruntime runs without it (cuFFT, NVRTC: a few operators only)


def cuda_libraries(cuda: str, platform: str) -> tuple[Library, ...]:
    """NVIDIA's libraries of a CUDA major (12, 13) as onnxruntime needs them, in load order."""
    windows = platform.startswith("win")
    cufft = "11" if cuda == "12" else "12"
    if cuda == "12":
        where = {part: ("nvidia", part, "bin" if windows else "lib")
                 for part in ("cublas", "cuda_nvrtc", "curand", "cufft", "cuda_runtime")}
    else:  # CUDA 13 puts its toolkit libraries together in nvidia/cu13
        shared = ("nvidia", "cu13", "bin", "x86_64") if windows else ("nvidia", "cu13", "lib")
        where = dict.fromkeys(("cublas", "cuda_nvrtc", "curand", "cufft", "cuda_runtime"), shared)
    if windows:
        toolkit = [Library(f"cublasLt64_{cuda}.dll", where["cublas"]), Library(f"cublas64_{cuda}.dll", where["cublas"]),
                   Library(f"cufft64_{cufft}.dll", where["cufft"], True),
                   Library(f"cudart64_{cuda}.dll", where["cuda_runtime"])]
        cudnn_folder = ("nvidia", "cudnn", "bin")
        cudnn = [Library(f"cudnn{part}64_9.dll", cudnn_folder)
                 for part in ("_engines_runtime_compiled", "_engines_precompiled", "_heuristic", "_ops", "_adv",
                              "_graph", "", "_engines_tensor_ir")]
    else:
        toolkit = [Library(f"libcublasLt.so.{cuda}", where["cublas"]), Library(f"libcublas.so.{cuda}", where["cublas"]),
                   Library(f"libnvrtc.so.{cuda}", where["cuda_nvrtc"], True),
                   Library("libcurand.so.10", where["curand"]),
                   Library(f"libcufft.so.{cufft}", where["cufft"], True),
                   Library(f"libcudart.so.{cuda}", where["cuda_runtime"])]
        cudnn = [Library("libcudnn.so.9", ("nvidia", "cudnn", "lib"))]  # it loads its sub-libraries itself
    return tuple(toolkit + cudnn)


def driver_library(platform: str) -> str:
    return "nvcuda.dll" if platform.startswith("win") else "libcuda.so.1"


@dataclass(frozen=True)
class LibraryLoad:
    name: str
    path: str  # the full path tried, or the bare name given to the system's loader
    loaded: bool
    error: str = ""
    optional: bool = False

    def as_dict(self) -> dict:
        return {"name": self.name, "path": self.path, "loaded": self.loaded, "error": self.error,
                "optional": self.optional}


@dataclass
class CudaLoad:
    """What loading the CUDA libraries did."""

    cuda: str  # the CUDA major onnxruntime was built with ("" when it is not a CUDA build)
    libraries: list[LibraryLoad] = field(default_factory=list)
    driver: LibraryLoad | None = None
    preload_said: str = ""  # what onnxruntime.preload_dlls() printed
    _dll_folders: list = field(default_factory=list, repr=False)  # Windows: keeps the added DLL folders

    @property
    def failures(self) -> list[LibraryLoad]:
        wanted = [lib for lib in self.libraries if not lib.optional] + ([self.driver] if self.driver else [])
        return [lib for lib in wanted if not lib.loaded]

    @property
    def problem(self) -> str:
        """Every required library that did not load, with the loader's reason; "" when all did."""
        if not self.cuda:
            return "this onnxruntime is not a CUDA build"
        return "; ".join(f"{lib.name} did not load ({lib.error})" for lib in self.failures)

    def as_dict(self) -> dict:
        return {"cuda": self.cuda, "libraries": [lib.as_dict() for lib in self.libraries],
                "driver_library": self.driver.as_dict() if self.driver else None,
                "preload_dlls_said": self.preload_said, "problem": self.problem}


Loader = Callable[[str], object]


def load_cuda_libraries(ort, loader: Loader = ctypes.CDLL, platform: str | None = None) -> CudaLoad:
    """Load the libraries `ort` (the onnxruntime module) needs for CUDA, from the folder `ort` came from;
    never raises."""
    platform = platform or this_platform() or sys.platform
    cuda = str(getattr(ort, "cuda_version", "") or "").split(".")[0]
    result = CudaLoad(cuda)
    if not cuda:
        return result
    base = _nvidia_base(ort)
    if platform.startswith("win") and hasattr(os, "add_dll_directory"):
        # cuDNN loads its engine DLLs by name at run time: its folder must be on the DLL search path
        for folder in {lib.folder for lib in cuda_libraries(cuda, platform)}:
            if base.joinpath(*folder).is_dir():
                result._dll_folders.append(os.add_dll_directory(str(base.joinpath(*folder))))
    for library in cuda_libraries(cuda, platform):
        full = base.joinpath(*library.folder, library.name)
        result.libraries.append(_load(loader, str(full) if full.is_file() else library.name, library))
    result.driver = _load(loader, driver_library(platform), Library(driver_library(platform), ()))
    preload = getattr(ort, "preload_dlls", None)
    if preload is not None:
        said = io.StringIO()
        with contextlib.redirect_stdout(said):
            try:
                preload()
            except Exception as exc:  # noqa: BLE001 - documented never to raise; report if it does
                print(f"preload_dlls failed: {exc}")
        result.preload_said = said.getvalue().strip()
    return result


def _nvidia_base(ort) -> Path:
    """The folder holding `nvidia/`: that of the runtime `ort` was imported from (the one `use_runtime` put
    first, whichever folder its caller chose), or (onnxruntime-gpu installed with pip and NVIDIA's wheels)
    the site-packages folder beside the onnxruntime package."""
    package = Path(getattr(ort, "__file__", "") or ".").parent
    runtime = RuntimeFolder.holding(package)
    return runtime.folder if runtime is not None else package.parent


def _load(loader: Loader, target: str, library: Library) -> LibraryLoad:
    try:
        loader(target)
    except OSError as exc:
        return LibraryLoad(library.name, target, False, str(exc) or type(exc).__name__, library.optional)
    return LibraryLoad(library.name, target, True, optional=library.optional)
