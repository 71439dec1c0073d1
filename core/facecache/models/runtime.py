"""The one place that creates ONNX Runtime sessions.

    factory = SessionFactory("cuda")          # or "tensorrt", "cpu", "auto" (default)
    session = factory.session(store.path("scrfd_2.5g"))

- Providers come from a setting: `tensorrt` (TensorRT, then CUDA, then CPU), `cuda` (CUDA, then
  CPU), `coreml` (macOS), `directml` (Windows, with onnxruntime-directml), `cpu`, or `auto`: CUDA
  where it really runs (onnxruntime offers it, an NVIDIA driver is present and the CUDA libraries
  load), else CPU. `auto` does not pick TensorRT by itself: TensorRT builds an engine per model and
  input shape on first use (minutes), which is a choice to make on purpose; nor CoreML, which has not
  been measured faster than the CPU for these models (no Mac was at hand).
- Before the first CUDA session the CUDA libraries are loaded (`facecache.gpu_runtime.activate`: the NVIDIA
  runtime's, then onnxruntime's own `preload_dlls()`); the ones that fail are named in the warning.
- onnxruntime-gpu lists CUDA and TensorRT even where their libraries are missing; creating a
  session then fails or silently runs on CPU. The factory checks the providers the session really
  got; when a GPU provider was asked for and not obtained, it warns once (per factory) and uses
  CPU for every later session of that factory without trying the GPU again. A GPU session whose run
  fails (out of GPU memory, a CUDA error) is made again on the CPU, that run repeated there, and the
  same one warning given. `fallback` keeps it; `take_fallback_message()` hands it to a job's report
  once; `placements` says which provider each model file's session really runs on.
- DirectML: memory patterns off, one session per thread, and each session's runs one at a time (a
  preview shares its swapper's session across its threads).
- Sessions are reused per (model file, content digest, providers) within one factory.
- A session is made from the file's bytes read once into memory: those very bytes are hashed and,
  when the caller gives the digest the model was checked with (the one its cache namespace is named
  after), compared with it. A file changed in place (even with its size and mtime restored) raises
  `ModelChanged` before anything is computed with it. XXH3-128 over bytes in memory costs about
  0.1 s for a 500 MB model (docs/models.md).
- Threads: intra-op = the cores this process may use; inter-op 1 with sequential execution.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from facecache import choices
from facecache.errors import FaceCacheError, ModelChanged
from facecache.fingerprint import bytes_digest
from facecache.models.cpu_graphs import cpu_form
from facecache.models.runtime_import import RuntimeUnavailable, import_onnxruntime

log = logging.getLogger(__name__)

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"
TENSORRT = "TensorrtExecutionProvider"
COREML = "CoreMLExecutionProvider"
DIRECTML = "DmlExecutionProvider"
_CHAINS = {"tensorrt": (TENSORRT, CUDA, CPU), "cuda": (CUDA, CPU), "coreml": (COREML, CPU),
           "directml": (DIRECTML, CPU), "cpu": (CPU,)}
SETTINGS = choices.names(choices.PROVIDERS)  # "auto" and the keys of _CHAINS


def usable_cores() -> int:
    """Cores this process may run on (CPU affinity where the OS has it, else the core count)."""
    if hasattr(os, "sched_getaffinity"):
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except OSError:
            pass
    return max(1, os.cpu_count() or 1)


def nvidia_driver_present() -> bool:
    """True where an NVIDIA GPU driver is visible (Linux: its /proc or /dev entries; Windows:
    its system DLL). macOS has no CUDA."""
    if sys.platform.startswith("linux"):
        return os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidia0")
    if sys.platform == "win32":
        return os.path.exists(os.path.join(os.environ.get("SystemRoot", r"C:\Windows"), "System32", "nvcuda.dll"))
    return False


@dataclass(frozen=True)
class FallbackWarning:
    requested: tuple[str, ...]
    obtained: tuple[str, ...]
    message: str


class SessionFactory:
    """Creates and reuses ONNX Runtime sessions for one setting of providers and threads.

    `ort` is the onnxruntime module (injected in tests); `warn` receives the one fallback
    message (default: the `facecache.models.runtime` logger at WARNING level).
    """

    def __init__(self, providers: str = "auto", *, threads: int | None = None,
                 tensorrt_cache_dir: str | os.PathLike | None = None, device_id: int = 0,
                 ort: Any = None, warn: Callable[[str], None] | None = None):
        setting = (providers or "auto").strip().lower()
        if setting not in SETTINGS:
            raise FaceCacheError(f"unknown execution provider setting {providers!r}; use one of: {', '.join(SETTINGS)}")
        if ort is None:
            ort = import_onnxruntime()
        self.ort = ort
        self.setting = setting
        self.threads = threads or usable_cores()
        self.tensorrt_cache_dir = Path(tensorrt_cache_dir) if tensorrt_cache_dir else None
        self.device_id = device_id
        self._warn = warn or (lambda message: log.warning("%s", message))
        self._sessions: dict[tuple, Any] = {}
        self._lock = threading.RLock()
        self._degraded: tuple[str, ...] | None = None  # the chain in use after a provider failed
        self.fallback: FallbackWarning | None = None
        self._fallback_told = False
        self.cuda_load = None  # facecache.gpu_runtime.activate.CudaLoad, once CUDA was about to be used
        self.placements: dict[str, tuple[str, ...]] = {}  # model file name -> providers its session runs on

    # --- providers -------------------------------------------------------------------------------

    def requested_providers(self) -> tuple[str, ...]:
        """The provider chain to ask for now: the setting, limited to what onnxruntime offers,
        or the reduced chain in use since a provider failed."""
        if self._degraded is not None:
            return self._degraded
        available = set(self.ort.get_available_providers())
        if self.setting == "auto":
            # Without an NVIDIA driver CUDA cannot work: don't try it (trying prints
            # onnxruntime's own load errors before our single warning).
            chain = (CUDA, CPU) if nvidia_driver_present() and CUDA in available else (CPU,)
        else:
            chain = _CHAINS[self.setting]
        picked = tuple(p for p in chain if p in available or p == CPU)
        if self.setting != "auto" and chain[0] not in picked:
            self._fall_back(chain, picked, f"onnxruntime here does not offer {chain[0]} (it offers "
                                           f"{', '.join(sorted(available))})")
            return self._degraded
        if CUDA in picked and not self._cuda_libraries_load():
            problem = self.cuda_load.problem
            if self.setting == "auto":  # CUDA only where it really runs; `facecache gpu status` says why not
                log.info("auto: running on the CPU, not CUDA: %s", problem)
                self._degraded = (CPU,)
            else:
                self._fall_back(picked, (CPU,), f"{CUDA} cannot start: the CUDA libraries did not load: {problem}")
            return self._degraded
        return picked

    def _cuda_libraries_load(self) -> bool:
        """Load the CUDA libraries once per factory (before any CUDA session); True when all it needs did."""
        if self.cuda_load is None:
            from facecache.gpu_runtime.activate import load_cuda_libraries

            self.cuda_load = load_cuda_libraries(self.ort)
            for line in self.cuda_load.preload_said.splitlines():
                log.info("onnxruntime.preload_dlls: %s", line)
        return not self.cuda_load.failures

    def _provider_options(self, providers: Sequence[str]) -> list[dict]:
        options = []
        for name in providers:
            if name == TENSORRT:
                opts = {"device_id": self.device_id}
                if self.tensorrt_cache_dir:
                    self.tensorrt_cache_dir.mkdir(parents=True, exist_ok=True)
                    opts.update(trt_engine_cache_enable=True, trt_engine_cache_path=str(self.tensorrt_cache_dir))
                options.append(opts)
            elif name == CUDA:
                # cuDNN's exhaustive search (ONNX Runtime's default) times every convolution algorithm for each
                # new input shape, and the detector's shapes change every frame (pyramid levels, followed
                # regions, the number of faces R-Net and O-Net check): on an H200 it made MTCNN slower than the CPU
                options.append({"device_id": self.device_id, "cudnn_conv_algo_search": "HEURISTIC"})
            else:
                options.append({})
        return options

    def session_options(self) -> Any:
        so = self.ort.SessionOptions()
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        # Threads that spin while they wait burn the cores the frame decoder, OpenCV and the writers
        # need: measured cold analysis without spinning, 2 threads, 2 cores: 1.3-1.4x faster at 1080p
        # and 2.3x at 640x360, with a third less CPU (and a farm node's runners stop starving each other).
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        so.execution_mode = self.ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = self.ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if self.setting == "directml":
            so.enable_mem_pattern = False  # DirectML does not support memory patterns
        return so

    # --- sessions --------------------------------------------------------------------------------

    def session(self, model_path: str | os.PathLike, digest: str | None = None,
                cpu_graph: str = "") -> Any:
        """An InferenceSession for `model_path` (a `GuardedSession` around it), created once per (file,
        content, providers) in this factory (and per thread with DirectML). With `digest` (XXH3-128 of
        the file, as the model store checked it), the bytes loaded must have that digest, else
        `ModelChanged`. A session on the CPU alone runs the graph in the form `cpu_graph` names (`cpu_graphs`:
        faster kernels for its PRelu nodes; the catalog says for which files it pays)."""
        path = Path(model_path)
        with self._lock:
            if digest is not None:
                cached = self._sessions.get(self._key(path, digest, cpu_graph))
                if cached is not None:
                    return cached
            data = _read_model(path)
            actual = bytes_digest(data)
            if digest is not None and actual != digest:
                raise ModelChanged(f"{path} changed after it was checked (its content digest is {actual}, "
                                   f"expected {digest})")
            cached = self._sessions.get(self._key(path, actual, cpu_graph))
            if cached is not None:
                return cached
            inner = self._create(path, data, self.requested_providers(), cpu_graph)
            session = GuardedSession(inner, self, path, actual, serialize=self.setting == "directml",
                                     cpu_graph=cpu_graph)
            # after a fallback the chain in use is shorter; file the session under it
            self._sessions[self._key(path, actual, cpu_graph)] = session
            return session

    def _key(self, path: Path, digest: str, cpu_graph: str) -> tuple:
        thread = threading.get_ident() if self.setting == "directml" else None  # DirectML: a session per thread
        return str(path.absolute()), digest, self.requested_providers(), thread, cpu_graph

    def _create(self, path: Path, data: bytes, providers: tuple[str, ...], cpu_graph: str = "") -> Any:
        # a GPU provider gets the file as it is: its own PRelu kernels are not the CPU's slow one
        graph = cpu_form(data, cpu_graph) if providers == (CPU,) else data
        try:
            session = self.ort.InferenceSession(graph, sess_options=self.session_options(),
                                                providers=list(providers),
                                                provider_options=self._provider_options(providers))
        except Exception as exc:  # onnxruntime raises its own exception types
            if providers == (CPU,):
                raise RuntimeUnavailable(f"onnxruntime cannot load {path} ({exc}); the file may be damaged: "
                                         "check it with `facecache models list` and reinstall the model") from None
            self._fall_back(providers, providers[1:], f"creating a session with {providers[0]} failed ({exc})")
            return self._create(path, data, providers[1:], cpu_graph)
        obtained = tuple(session.get_providers())
        self.placements[path.name] = obtained
        if providers[0] not in obtained:
            self._fall_back(providers, obtained, f"onnxruntime could not start {providers[0]} (its libraries, "
                                                 "e.g. CUDA/cuDNN or TensorRT, are probably missing)")
        return session

    def _on_cpu_after_failed_run(self, path: Path, digest: str, providers: tuple[str, ...], error: Exception,
                                 cpu_graph: str = "") -> Any:
        """A CPU session for a file whose GPU session failed during a run (the one warning is given)."""
        with self._lock:
            data = _read_model(path)
            if bytes_digest(data) != digest:
                raise ModelChanged(f"{path} changed after it was checked; run the same command again")
            self._fall_back(providers, (CPU,), f"{path.name} failed on {providers[0]} during a run ({error})")
            return self._create(path, data, (CPU,), cpu_graph)

    def take_fallback_message(self) -> str | None:
        """The fallback warning the first time it is asked for after it happened, else None (a job's
        report carries it once)."""
        with self._lock:
            if self.fallback is None or self._fallback_told:
                return None
            self._fallback_told = True
            return self.fallback.message

    def _fall_back(self, requested: Sequence[str], obtained: Sequence[str], reason: str) -> None:
        obtained = tuple(obtained) or (CPU,)
        self._degraded = obtained
        if self.fallback is not None:
            return
        target = "the CPU instead (much slower)" if obtained[0] == CPU else f"{obtained[0]} instead"
        remedy = ("`facecache gpu status` says what is missing; `facecache gpu install` (or the add-on's Install "
                  "NVIDIA GPU Runtime) installs it" if requested[0] in (CUDA, TENSORRT) else
                  f"check that this onnxruntime offers {requested[0]}")
        message = (f"{reason}; running on {target}. {remedy}; to silence this warning, choose the cpu provider "
                   "setting")
        self.fallback = FallbackWarning(tuple(requested), obtained, message)
        self._warn(message)

    @property
    def active_providers(self) -> tuple[str, ...]:
        """What sessions created now would use (after any fallback)."""
        with self._lock:
            return self.requested_providers()

    def clear(self) -> None:
        """Drop every cached session (they are freed when no one else holds them)."""
        with self._lock:
            self._sessions.clear()


class GuardedSession:
    """An ONNX Runtime session as the factory hands it out: it runs as the session does, and when a
    run on a GPU provider fails it is made again on the CPU, the run repeated there and the fallback
    reported (once, by the factory). With `serialize` (DirectML) its runs go one at a time."""

    def __init__(self, session: Any, factory: SessionFactory, path: Path, digest: str, serialize: bool = False,
                 cpu_graph: str = ""):
        self.inner = session
        self._cpu_graph = cpu_graph
        self._factory = factory
        self._path = path
        self._digest = digest
        self._run_lock = threading.Lock() if serialize else None

    def run(self, output_names, input_feed, *args, **kwargs):
        with self._run_lock or contextlib.nullcontext():
            session = self.inner
            try:
                return session.run(output_names, input_feed, *args, **kwargs)
            except Exception as exc:  # onnxruntime raises its own exception types
                providers = tuple(session.get_providers())
                if not providers or providers[0] == CPU:
                    raise
                cpu = self._factory._on_cpu_after_failed_run(self._path, self._digest, providers, exc,
                                                             self._cpu_graph)
                self.inner = cpu
                return cpu.run(output_names, input_feed, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # get_inputs, get_outputs, get_providers, ...
        return getattr(self.inner, name)


def _read_model(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise RuntimeUnavailable(f"model file {path} does not exist; install the model "
                                 "(`facecache models list` shows what is installed)") from None


__all__ = ["SessionFactory", "GuardedSession", "RuntimeUnavailable", "FallbackWarning", "usable_cores", "SETTINGS"]
