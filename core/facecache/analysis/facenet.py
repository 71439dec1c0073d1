"""FaceNet recognizer (the embedded default's, 512-d).

Contract of the converted graph (see the catalog's `facenet_512`): input `input`
(N, 3, 160, 160) float32 RGB, each face prewhitened over its own pixels:
`(x - mean) / max(std, 1 / sqrt(size))`; output `embedding` (N, 512), already L2-normalised.
The model was trained on faces cut out as their MTCNN box grown by a margin and resized to
160 x 160 (not aligned by key points), so the crop here is made the same way; all faces of
a frame go through one session run.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from facecache.analysis.frames import check_bgr_frame
from facecache.analysis.results import FaceLike
from facecache.analysis.session import OnnxSession, contract_error, require_inputs, require_outputs, run_model

CROP_SIZE = 160
EMBEDDING_SIZE = 512
# The box grows by this fraction of its width and height (half on each side). On the identity
# photographs (face_recognition's obama x3 + partial faces, biden) 0.2 separated same-person
# from different-person pairs most widely (cosine gap 0.19; 0.0: 0.06, 0.3: 0.14, 0.4: 0.17);
# crops aligned on the five key points separated them worse (gap -0.08..0.05).
MARGIN = 0.2


def crop_matrix(box: np.ndarray) -> np.ndarray:
    """(2, 3) matrix from frame pixels to the 160 x 160 crop of the box grown by MARGIN."""
    x1, y1, x2, y2 = np.asarray(box, dtype=np.float64).reshape(4)
    width, height = max(x2 - x1, 1.0) * (1 + MARGIN), max(y2 - y1, 1.0) * (1 + MARGIN)
    sx, sy = CROP_SIZE / width, CROP_SIZE / height
    cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    return np.array([[sx, 0.0, CROP_SIZE / 2 - sx * cx], [0.0, sy, CROP_SIZE / 2 - sy * cy]])


def prewhitened(crop_rgb: np.ndarray) -> np.ndarray:
    """(3, 160, 160) float32 of one RGB crop, standardised over its own pixels."""
    x = crop_rgb.astype(np.float32)
    std = max(float(x.std()), 1.0 / np.sqrt(x.size))
    return ((x - x.mean()) / np.float32(std)).transpose(2, 0, 1)


class FaceNetRecognizer:
    """Identity embeddings of detected faces, one session run per frame."""

    INPUT = "input"
    OUTPUT = "embedding"

    def __init__(self, session: OnnxSession, *, model: str = "facenet_512") -> None:
        self._session = session
        self.model = model
        require_inputs(session, model, [self.INPUT])
        require_outputs(session, model, [self.OUTPUT])

    def describe(self) -> dict:
        """The settings that change this recognizer's results (for cache namespaces)."""
        return {"model": self.model, "crop": CROP_SIZE, "margin": MARGIN}

    def embed_batch(self, frame: np.ndarray, faces: Sequence[FaceLike]) -> np.ndarray:
        """(N, 512) float32 embeddings of the faces (anything with a `box`), in one session run."""
        if not faces:
            return np.zeros((0, EMBEDDING_SIZE), np.float32)
        rgb = cv2.cvtColor(check_bgr_frame(frame), cv2.COLOR_BGR2RGB)
        blob = np.stack([prewhitened(cv2.warpAffine(rgb, crop_matrix(face.box), (CROP_SIZE, CROP_SIZE),
                                                    flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE))
                         for face in faces])
        (output,) = run_model(self._session, self.model, [self.OUTPUT], {self.INPUT: blob})
        if output.shape != (len(faces), EMBEDDING_SIZE):
            raise contract_error(self.model, f"expected embeddings of shape ({len(faces)}, {EMBEDDING_SIZE}), "
                                             f"got {tuple(output.shape)}")
        return output
