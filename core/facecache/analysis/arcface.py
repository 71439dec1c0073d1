"""ArcFace recognizer adapter (FaceFusion's ``arcface_w600k_r50``).

Contract: the face is aligned to the ``arcface_112_v2`` template at 112 x 112,
converted to RGB and scaled to ``pixel / 127.5 - 1``; input ``input``
(1, 3, 112, 112); output (1, 512), the raw identity embedding. A graph whose batch
axis is open takes all faces of a frame in one run (N, 3, 112, 112).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from facecache.analysis.align import warp_face
from facecache.analysis.frames import check_bgr_frame
from facecache.analysis.results import FaceLike
from facecache.analysis.session import (OnnxSession, contract_error, has_batch_axis, require_inputs,
                                        require_output_count, run_batched)

TEMPLATE = "arcface_112_v2"
CROP_SIZE = 112
EMBEDDING_SIZE = 512


def l2_normalised(embedding: np.ndarray) -> np.ndarray:
    """A float32 copy of ``embedding`` with unit length (all zeros stay zeros)."""
    vector = np.asarray(embedding, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(vector))
    return (vector / norm).astype(np.float32) if norm > 0 else vector.copy()


def face_blob(crop_bgr: np.ndarray) -> np.ndarray:
    """(1, 3, 112, 112) float32 RGB ``pixel / 127.5 - 1`` of an aligned BGR crop."""
    rgb = crop_bgr[:, :, ::-1].astype(np.float32)
    return np.ascontiguousarray((rgb / np.float32(127.5) - np.float32(1.0)).transpose(2, 0, 1)[None])


class ArcFaceRecognizer:
    """Identity embeddings of faces given their five key points."""

    INPUT = "input"

    def __init__(self, session: OnnxSession, *, model: str = "arcface_w600k_r50") -> None:
        self._session = session
        self.model = model
        require_inputs(session, model, [self.INPUT])
        self._outputs = require_output_count(session, model, 1)
        self._batched = has_batch_axis(session, self.INPUT)

    def describe(self) -> dict:
        """The settings that change this recognizer's results (for cache namespaces)."""
        return {"model": self.model, "template": TEMPLATE, "crop": CROP_SIZE}

    def embed(self, frame: np.ndarray, kps5: np.ndarray) -> np.ndarray:
        """The raw (512,) float32 embedding of the face at ``kps5``; see ``l2_normalised``."""
        return self.embed_points(frame, [kps5])[0]

    def embed_batch(self, frame: np.ndarray, faces: Sequence[FaceLike]) -> list[np.ndarray]:
        """The raw embeddings of every face of a frame (anything with kps5), in one session run when the
        graph allows."""
        return self.embed_points(frame, [face.kps5 for face in faces])

    def embed_points(self, frame: np.ndarray, kps5s) -> list[np.ndarray]:
        """The raw embeddings of the faces at `kps5s`."""
        frame = check_bgr_frame(frame)
        if not len(kps5s):
            return []
        blobs = np.concatenate([face_blob(warp_face(frame, kps5, TEMPLATE, CROP_SIZE)[0]) for kps5 in kps5s])
        (output,) = run_batched(self._session, self.model, self._outputs, self.INPUT, blobs, self._batched)
        if output.size != EMBEDDING_SIZE * len(blobs):
            raise contract_error(self.model, f"expected a ({len(blobs)}, {EMBEDDING_SIZE}) embedding, "
                                             f"got shape {tuple(output.shape)}")
        return list(output.reshape(len(blobs), EMBEDDING_SIZE).astype(np.float32))
