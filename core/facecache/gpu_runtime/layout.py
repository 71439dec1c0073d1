"""Where the NVIDIA GPU runtime lives, and what is installed there.

    <runtime folder>/                 $FACECACHE_GPU_RUNTIME, else <user data>/gpu-runtime (facecache.locations)
      linux_x86_64/                   one folder a platform (a NAS may serve Linux and Windows nodes)
        installed.json                the manifest, written last: what is here, checked against which pins
        nvidia/...                    NVIDIA's CUDA and cuDNN libraries (their wheels, unpacked): one copy
        cp311/onnxruntime/...         onnxruntime-gpu for Python 3.11 (Blender 4.2-5.0)
        cp313/onnxruntime/...         ... for Python 3.13 (Blender 5.1 and later), when asked for
      downloads/                      wheels pip fetched, kept until the install is complete (facecache.gpu.wheels)
      locks/install.lock              held by the one install or removal at work (facecache.gpu.install)
      logs/pip-linux_x86_64.log       what pip said during the last install for that platform

Nothing here is used without its manifest, so a half-done install or removal is never used.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from facecache.files import folder_bytes, write_atomic
from facecache.gpu_runtime.pins import this_platform, this_python
from facecache.locations import resolve_gpu_runtime_dir

MANIFEST = "installed.json"
FORMAT = 1


@dataclass
class Installed:
    """The manifest of one platform's folder."""

    cuda: str
    onnxruntime: str  # onnxruntime-gpu's version
    libraries: dict[str, str] = field(default_factory=dict)  # wheel file name -> SHA-256 checked at install
    pythons: dict[str, str] = field(default_factory=dict)  # Python tag -> onnxruntime-gpu wheel file name
    format: int = FORMAT

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class RuntimeFolder:
    root: Path
    platform: str

    @classmethod
    def resolve(cls, explicit: str | os.PathLike | None = None, platform: str | None = None) -> "RuntimeFolder":
        return cls(resolve_gpu_runtime_dir(explicit).expanduser().absolute(), platform or this_platform() or "")

    @classmethod
    def holding(cls, package: Path) -> "RuntimeFolder | None":
        """The installed runtime whose site folder holds `package` (an onnxruntime package folder:
        <root>/<platform>/<python>/onnxruntime), or None when `package` is not in one."""
        folder = Path(package).absolute().parent.parent
        runtime = cls(folder.parent, folder.name)
        return runtime if runtime.installed() is not None else None

    @property
    def folder(self) -> Path:
        return self.root / self.platform

    @property
    def nvidia(self) -> Path:
        return self.folder / "nvidia"

    @property
    def downloads(self) -> Path:
        return self.root / "downloads"

    @property
    def pip_log(self) -> Path:
        """pip's commands and output during this platform's last install (named in its failures)."""
        return self.root / "logs" / f"pip-{self.platform}.log"

    def site(self, python: str) -> Path:
        """The folder holding the `onnxruntime` package for Python tag `python`."""
        return self.folder / python

    def disk_bytes(self) -> int:
        """Bytes of the installed runtime itself: not the staging or set-aside folders (`.cp311.partial-…`)
        an install or removal that died left in it."""
        if not self.platform or not self.folder.is_dir():
            return 0
        return sum(folder_bytes(p) if p.is_dir() else p.stat().st_size
                   for p in self.folder.iterdir() if not p.name.startswith("."))

    def installed(self) -> Installed | None:
        """The manifest, or None when nothing (complete) is installed; an unreadable manifest counts as none."""
        if not self.platform:
            return None
        try:
            data = json.loads((self.folder / MANIFEST).read_text(encoding="utf-8"))
            installed = Installed(**data)
        except (OSError, ValueError, TypeError):
            return None
        return installed if installed.format == FORMAT else None

    def usable_site(self, python: str | None = None) -> Path | None:
        """The onnxruntime folder for this Python when the manifest lists it and it is there, else None."""
        installed = self.installed()
        python = python or this_python()
        if installed is None or python not in installed.pythons:
            return None
        site = self.site(python)
        return site if (site / "onnxruntime").is_dir() else None


def write_manifest(folder: Path, installed: Installed) -> None:
    write_atomic(folder / MANIFEST, (json.dumps(installed.as_dict(), indent=1, sort_keys=True) + "\n").encode())
