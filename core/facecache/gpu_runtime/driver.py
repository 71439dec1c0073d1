"""The NVIDIA driver and GPUs, as the driver itself reports them, and the CUDA major that fits.

The driver's own tool answers: `nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv`
(installed with the driver on Linux and Windows; its query fields are a documented, stable interface).
Drivers older than the `compute_cap` field are asked again without it. Where nvidia-smi is missing but
a Linux driver is loaded, /proc/driver/nvidia/version still gives the version.

CUDA 13 needs driver 580 or newer and compute capability 7.5 or higher (Turing and newer); CUDA 12
needs driver 525 or newer and runs on every GPU those drivers support (GTX 9xx and 10xx included).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

CUDA13_MIN_DRIVER = 580
CUDA12_MIN_DRIVER = 525
CUDA13_MIN_CAPABILITY = (7, 5)
_PROC_VERSION = "/proc/driver/nvidia/version"
_QUERY = ("name", "driver_version", "compute_cap")


@dataclass(frozen=True)
class Gpu:
    name: str
    compute_capability: str = ""  # "8.6"; "" where the driver cannot say

    def capability(self) -> tuple[int, int] | None:
        match = re.fullmatch(r"(\d+)\.(\d+)", self.compute_capability)
        return (int(match[1]), int(match[2])) if match else None


@dataclass(frozen=True)
class Driver:
    """What the NVIDIA driver says; `present` False with `problem` saying why where there is none."""

    present: bool
    version: str = ""  # "580.65.06"
    gpus: tuple[Gpu, ...] = field(default_factory=tuple)
    source: str = ""  # "nvidia-smi" or the /proc file
    problem: str = ""

    @property
    def major(self) -> int | None:
        match = re.match(r"(\d+)", self.version)
        return int(match[1]) if match else None

    def as_dict(self) -> dict:
        return {"present": self.present, "version": self.version, "source": self.source, "problem": self.problem,
                "gpus": [{"name": g.name, "compute_capability": g.compute_capability} for g in self.gpus]}


Runner = Callable[..., subprocess.CompletedProcess]


def read_driver(runner: Runner = subprocess.run, platform: str = sys.platform) -> Driver:
    """The driver of this machine (macOS: never an NVIDIA driver)."""
    if platform == "darwin":
        return Driver(False, problem="macOS has no NVIDIA driver (CUDA does not exist there)")
    tool = nvidia_smi(platform)
    if tool is not None:
        answer = _query(runner, tool, _QUERY) or _query(runner, tool, _QUERY[:2])
        if answer:
            gpus = tuple(Gpu(row[0], row[2] if len(row) > 2 else "") for row in answer)
            return Driver(True, answer[0][1], gpus, "nvidia-smi")
    if platform.startswith("linux") and os.path.exists(_PROC_VERSION):
        try:
            with open(_PROC_VERSION, encoding="utf-8", errors="replace") as handle:
                match = re.search(r"Kernel Module\s+(?:for \S+\s+)?(\d+\.\d+(?:\.\d+)?)", handle.read())
        except OSError:
            match = None
        if match:
            return Driver(True, match[1], (), _PROC_VERSION)
    if tool is None:
        return Driver(False, problem="no NVIDIA driver found (nvidia-smi is not installed); install NVIDIA's "
                                     f"driver {CUDA12_MIN_DRIVER} or newer to use an NVIDIA GPU")
    return Driver(False, problem=f"{tool} found no NVIDIA GPU (or its driver is not loaded); run it to see why")


def nvidia_smi(platform: str = sys.platform) -> str | None:
    found = shutil.which("nvidia-smi")
    if found or platform != "win32":
        return found
    for folder in (os.path.join(os.environ.get("SystemRoot", r"C:\Windows"), "System32"),
                   os.path.join(os.environ.get("ProgramFiles", r"C:\Program Files"), "NVIDIA Corporation", "NVSMI")):
        candidate = os.path.join(folder, "nvidia-smi.exe")
        if os.path.isfile(candidate):
            return candidate
    return None


def _query(runner: Runner, tool: str, fields: tuple[str, ...]) -> list[list[str]]:
    """Rows of nvidia-smi's CSV answer (one a GPU), or [] when it fails."""
    try:
        done = runner([tool, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"],
                      capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return []
    if done.returncode != 0:
        return []
    rows = [[cell.strip() for cell in line.split(",")] for line in done.stdout.splitlines() if line.strip()]
    return [row for row in rows if len(row) == len(fields)]


@dataclass(frozen=True)
class CudaChoice:
    cuda: str  # "12" or "13"
    reason: str


def choose_cuda(driver: Driver) -> CudaChoice:
    """CUDA 13 only where the driver is 580 or newer and every GPU is Turing or newer; else CUDA 12."""
    if not driver.present or driver.major is None:
        return CudaChoice("12", "no NVIDIA driver was found: CUDA 12, which works with driver "
                                f"{CUDA12_MIN_DRIVER} or newer on every GPU it supports")
    if driver.major < CUDA13_MIN_DRIVER:
        return CudaChoice("12", f"driver {driver.version} is older than {CUDA13_MIN_DRIVER}, which CUDA 13 needs")
    capabilities = [gpu.capability() for gpu in driver.gpus]
    if not capabilities or None in capabilities:
        return CudaChoice("12", f"driver {driver.version} does not say every GPU's compute capability")
    old = [gpu.name for gpu, cap in zip(driver.gpus, capabilities) if cap < CUDA13_MIN_CAPABILITY]
    if old:
        return CudaChoice("12", f"{', '.join(old)} predates Turing (compute capability below 7.5), "
                                "which CUDA 13 no longer supports")
    return CudaChoice("13", f"driver {driver.version} on {', '.join(g.name for g in driver.gpus)}")


def driver_problem(driver: Driver) -> str:
    """Why no CUDA runtime can work with this driver, or ""."""
    if not driver.present:
        return driver.problem
    if driver.major is not None and driver.major < CUDA12_MIN_DRIVER:
        return (f"NVIDIA driver {driver.version} is older than {CUDA12_MIN_DRIVER}, which CUDA 12 needs: "
                "update the driver")
    return ""
