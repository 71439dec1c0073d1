"""Source identity vectors for the embedding-driven swappers.

- inswapper: ``raw embedding @ emap / |raw embedding|``, where ``emap`` is the
  512 x 512 matrix stored as the ONNX graph's last initializer (extracted once
  when the model is installed or imported: ``ModelStore.derived(name, EMAP)``);
- hyperswap: the L2-normalised embedding.

Several source images make one identity by averaging their raw embeddings.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from facecache.analysis.errors import ModelContractError
from facecache.swap.errors import SwapInputError
from facecache.swap.faces import face_embedding

EMBEDDING_SIZE = 512


def average_embedding(embeddings: Iterable) -> np.ndarray:
    """The mean raw embedding (float32) of several source faces (``Face``s or arrays)."""
    vectors = [face_embedding(item) for item in embeddings]
    if not vectors:
        raise ValueError("no source faces to average; give at least one analysed source face")
    if len({v.shape for v in vectors}) != 1:
        raise ValueError(f"source embeddings differ in length: {sorted({v.size for v in vectors})}; "
                         "analyse every source image with the same recognizer")
    return np.mean(vectors, axis=0).astype(np.float32)


def normalised_source(embedding) -> np.ndarray:
    """(1, 512) float32 unit-length copy of a raw embedding (hyperswap's ``source``)."""
    vector = face_embedding(embedding)
    _check_size(vector)
    return (vector / np.linalg.norm(vector)).astype(np.float32)[None]


def inswapper_source(embedding, emap: np.ndarray) -> np.ndarray:
    """(1, 512) float32 ``embedding @ emap / |embedding|`` (inswapper's ``source``)."""
    return project_source(embedding, check_emap(emap))


def project_source(embedding, emap64: np.ndarray) -> np.ndarray:
    """``inswapper_source`` for an emap already checked by ``check_emap`` (float64, 512 x 512)."""
    vector = face_embedding(embedding)
    _check_size(vector)
    return ((vector @ emap64) / np.linalg.norm(vector)).astype(np.float32)[None]


def check_emap(emap: np.ndarray) -> np.ndarray:
    """A finite float64 (512, 512) copy of ``emap``, or ModelContractError."""
    matrix = np.array(emap, dtype=np.float64)
    if matrix.shape != (EMBEDDING_SIZE, EMBEDDING_SIZE) or not np.all(np.isfinite(matrix)):
        raise ModelContractError(
            f"inswapper: the emap must be a finite {EMBEDDING_SIZE}x{EMBEDDING_SIZE} matrix, got shape {matrix.shape}; "
            "reinstall the inswapper_128 model (its emap is read from the model file)")
    return matrix


def _check_size(vector: np.ndarray) -> None:
    if vector.size != EMBEDDING_SIZE:
        raise SwapInputError(f"swapper sources are {EMBEDDING_SIZE}-d ArcFace embeddings, got {vector.size} values; "
                                 "analyse the source with arcface_w600k_r50")
