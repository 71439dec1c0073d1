"""Install and remove the remote cache support (layout: facecache.remote_support.layout).

    installer = RemoteSupportInstaller()      # $FACECACHE_REMOTE_SUPPORT (the add-on's engine environment)
    installer.install(progress=cb)            # the pinned wheels, downloaded by pip, checked, unpacked
    installer.install(cancel=event)           # event.set() from another thread stops it (Cancelled)
    installer.uninstall()

The GPU runtime's machinery does the work (facecache.gpu): pip fetches each pinned wheel with the user's
pip settings and its size and SHA-256 are checked before it is kept (`fetch_wheels`); the wheels are
unpacked into a staging folder that is renamed into place (`unpack_wheel`, `swap_in`), the manifest
written last; one install or removal at a time holds the folder's lock (`install_lock`). A cancel stops
pip at once and leaves what was installed before; the wheels that arrived whole stay in downloads/.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

from facecache.errors import BadValue, Cancelled, FaceCacheError
from facecache.files import folder_bytes, write_atomic
from facecache.gpu.install import install_lock, swap_in, unpack_wheel
from facecache.gpu.wheels import fetch_wheels, stall_seconds
from facecache.gpu_runtime.pins import Wheel
from facecache.models.download import ProgressCallback
from facecache.models.pypi_fetch import PackageFetcher
from facecache.remote_support import layout, pins

WHAT = "remote cache support"


class RemoteSupportError(FaceCacheError):
    """The remote cache support cannot be installed or removed as asked; the message says what to do."""


def as_wheel(pin: tuple[str, str, str, int]) -> Wheel:
    """A pinned pure-Python wheel in the form `fetch_wheels` takes (no CUDA set, any platform)."""
    project, filename, sha256, size = pin
    return Wheel("", "any", project, filename, sha256, size)


class RemoteSupportInstaller:
    """`folder`: where to install (default $FACECACHE_REMOTE_SUPPORT); `wheels`: the pins (tests pass stand-ins
    of the same form); `fetcher`: runs pip (default: this Python's pip, its output in logs/pip.log)."""

    def __init__(self, folder: str | os.PathLike | None = None, *, wheels=pins.WHEELS,
                 fetcher: PackageFetcher | None = None, stall: float | None = None):
        found = layout.support_folder(folder)
        if found is None:
            raise BadValue(f"no folder for the remote cache support: set {layout.SUPPORT_DIR_ENV} (the add-on sets "
                           "it); the command line needs none: pip install 'facecache[remote]'")
        self.folder = found
        self.wheels = tuple(wheels)
        self.stall = stall
        # pip is asked for wheels of any Python 3 (`fetch_wheels`), which it reads as 3.0 against each wheel's
        # Requires-Python (3.10 and later): the pinned hash already fixes the file, so that check is skipped.
        self.fetcher = fetcher or PackageFetcher(pip_args=("--no-cache-dir", "--ignore-requires-python"), timeout=None,
                                                 log_file=self.folder / "logs" / "pip.log")

    @property
    def installed(self) -> bool:
        return layout.is_installed(self.folder, self.wheels)

    def install(self, progress: ProgressCallback | None = None, cancel: threading.Event | None = None) -> dict:
        """Install the pinned wheels unless they are already; returns what was done (the engine job's summary)."""
        stall = stall_seconds(self.stall)
        self.folder.mkdir(parents=True, exist_ok=True)
        with self._exclusive() as lock:
            downloaded = not self.installed
            if downloaded:
                try:
                    files = fetch_wheels([as_wheel(pin) for pin in self.wheels], self.folder / "downloads",
                                         self.fetcher, progress, lock.keep_alive, cancel, stall)
                except Cancelled:
                    raise Cancelled(f"cancelled: {self._left()}") from None
                self._unpack(files.values())
                for path in files.values():
                    path.unlink(missing_ok=True)
        return {"folder": str(self.folder), "downloaded": downloaded,
                "download_bytes": pins.download_bytes(self.wheels),
                "wheels": [filename for _project, filename, *_ in self.wheels], "disk_bytes": folder_bytes(self.folder)}

    def uninstall(self) -> int:
        """Remove the support and its downloads; returns the bytes freed."""
        if not self.folder.is_dir():
            return 0
        with self._exclusive():
            freed = folder_bytes(self.folder)
            (self.folder / layout.MANIFEST).unlink(missing_ok=True)  # first: nothing half-removed is ever used
            for name in (layout.SITE, "downloads", "logs"):
                shutil.rmtree(self.folder / name, ignore_errors=True)
        shutil.rmtree(self.folder / "locks", ignore_errors=True)
        freed -= folder_bytes(self.folder)
        try:
            self.folder.rmdir()
        except OSError:
            pass  # something else of the user's is there
        return freed

    def _unpack(self, files) -> None:
        """Every wheel into a staging folder that replaces site/; the manifest is removed before and written after."""
        staging = self.folder / f".{layout.SITE}.partial-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        try:
            for path in files:
                unpack_wheel(Path(path), staging)
        except BaseException:  # a failure or Ctrl-C: no staging folder is left
            shutil.rmtree(staging, ignore_errors=True)
            raise
        (self.folder / layout.MANIFEST).unlink(missing_ok=True)
        swap_in(staging, self.folder / layout.SITE, self.folder / f".{layout.SITE}.old-{os.getpid()}")
        write_atomic(self.folder / layout.MANIFEST, json.dumps(layout.manifest(self.wheels), indent=1).encode())

    def _exclusive(self):
        return install_lock(self.folder, WHAT, "Blender's preferences",
                            f"choose another folder ({layout.SUPPORT_DIR_ENV})", RemoteSupportError)

    def _left(self) -> str:
        state = "the remote cache support installed before is unchanged" if self.installed else "nothing was installed"
        return (f"{state}; the wheels downloaded whole are kept in {self.folder / 'downloads'}, so installing again "
                "fetches only the rest")
