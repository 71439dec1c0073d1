"""Models: the catalog (what exists), the store (install, import, verify, locate) and the
runtime (ONNX Runtime sessions).

    from facecache.models import ModelStore, SessionFactory
    store = ModelStore()                     # --models-dir / $FACECACHE_MODELS / per-user folder
    paths = store.paths("mtcnn")             # {"pnet": ..., "rnet": ..., "onet": ...}
    session = SessionFactory("auto").session(paths["pnet"])
"""

from facecache.models.catalog import DEFAULT_CATALOG, Catalog, Contract, ModelFile, ModelSpec
from facecache.models.download import Progress
from facecache.models.runtime import SessionFactory
from facecache.models.facefusion_import import ImportReport
from facecache.models.install import InstallResult
from facecache.models.installed import InstalledModel, ModelStatus
from facecache.models.store import ModelStore

__all__ = ["DEFAULT_CATALOG", "Catalog", "Contract", "ModelFile", "ModelSpec", "Progress", "SessionFactory",
           "ModelStore", "InstalledModel", "InstallResult", "ImportReport", "ModelStatus"]
