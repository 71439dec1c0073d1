"""Files derived from a model once, when it is installed or imported, so that running it needs nothing
beyond ONNX Runtime: today InSwapper's source projection matrix ("emap", its graph's last initializer).

A derived file lives in the models folder (imported FaceFusion folders are never written to), named by
the model's content digest, so a replaced model file never meets a stale matrix. It is a facecache pack
(`store/packfile`): checksummed, plain numeric arrays, never a pickle. A missing or damaged one is made
again from the model file.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from facecache.errors import CorruptPack, ModelCorrupt
from facecache.files import write_atomic
from facecache.models.onnx_tensors import last_initializer
from facecache.store import packfile

EMAP = "emap"
EMAP_SHAPE = (512, 512)
FOLDER = "derived"
log = logging.getLogger(__name__)


def path_for(root: Path, model_name: str, model_digest: str, kind: str) -> Path:
    return Path(root) / FOLDER / f"{model_name}-{model_digest}.{kind}.fcp"


def extract_emap(model_path: Path) -> np.ndarray:
    """InSwapper's emap from its model file: a finite 512 x 512 float32 matrix, or ModelCorrupt."""
    emap = last_initializer(model_path).astype(np.float32)
    if emap.shape != EMAP_SHAPE or not np.all(np.isfinite(emap)):
        raise ModelCorrupt(f"{model_path}: the last initializer is not a finite 512x512 matrix (shape "
                           f"{emap.shape}), so this is not an inswapper_128 model; reinstall it")
    return emap


EXTRACTORS = {EMAP: extract_emap}


def write(path: Path, model_name: str, model_digest: str, kind: str, array: np.ndarray) -> None:
    _, data = packfile.encode({"model": model_name, "model_digest": model_digest, "kind": kind}, {kind: array}, 1)
    write_atomic(path, data)


def read(path: Path, model_name: str, model_digest: str, kind: str) -> np.ndarray | None:
    """The derived array, or None when the file is missing or fails a check (a damaged one is removed)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        pack = packfile.decode(data)
        if pack.meta != {"model": model_name, "model_digest": model_digest, "kind": kind} or kind not in pack.arrays:
            raise CorruptPack("it describes another model")
    except CorruptPack as exc:
        log.warning("%s is damaged (%s); it is made again from the model file", path, exc)
        path.unlink(missing_ok=True)
        return None
    return pack.arrays[kind]
