"""Which analysed faces a job works on: `one`, `many` or `reference`.

- one: the largest face, or the face nearest a point (x, y as fractions of the frame);
- many: every face;
- reference: faces whose identity distance to any reference embedding is below a
  threshold. Distance = (1 - cosine similarity) / 2, so 0 is identical and 1 opposite.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from facecache import choices
from facecache.errors import FaceCacheError
from facecache.fingerprint import bytes_digest
from facecache.store.records import Face

MODES = choices.names(choices.SELECTORS)
DEFAULT_REFERENCE_THRESHOLD = 0.3  # FaceFusion's, for ArcFace
# Each recognizer spreads identities differently. FaceNet (the embedded default), on the test
# photographs (three of Barack Obama; Joe Biden, Grace Hopper, Eileen Collins): same person
# 0.11-0.19, different people 0.295-0.49; 0.25 lies between with room on both sides.
DEFAULT_REFERENCE_THRESHOLDS = {"arcface_w600k_r50": DEFAULT_REFERENCE_THRESHOLD, "facenet_512": 0.25}


def reference_threshold(recognizer: str | None) -> float:
    """The default match threshold for embeddings made by `recognizer`."""
    return DEFAULT_REFERENCE_THRESHOLDS.get(recognizer or "", DEFAULT_REFERENCE_THRESHOLD)


class SelectionError(FaceCacheError):
    """The selection settings cannot work (e.g. reference mode without a recognizer)."""


@dataclass(frozen=True)
class Selector:
    mode: str = "one"
    position: tuple[float, float] | None = None  # for `one`: fractions of width and height
    references: tuple[np.ndarray, ...] = ()       # for `reference`: raw or normalised embeddings
    threshold: float = DEFAULT_REFERENCE_THRESHOLD

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise SelectionError(f"unknown selector {self.mode!r}: choose one of {', '.join(MODES)}")
        if self.mode == "reference" and not self.references:
            raise SelectionError("the reference selector needs at least one reference face image")

    def describe(self) -> dict:
        """What changes the selection (part of the swap stage's cache key)."""
        return {
            "mode": self.mode,
            "position": list(self.position) if self.position and self.mode == "one" else None,
            "references": [bytes_digest(np.asarray(r, np.float32).tobytes()) for r in self.references]
            if self.mode == "reference" else [],
            "threshold": round(float(self.threshold), 6) if self.mode == "reference" else None,
        }

    @property
    def needs_embeddings(self) -> bool:
        return self.mode == "reference"

    def select(self, faces: list[Face], width: int, height: int) -> list[Face]:
        if not faces or self.mode == "many":
            return list(faces)
        if self.mode == "one":
            return [self._one(faces, width, height)]
        if any(face.embedding is None for face in faces):
            raise SelectionError("the reference selector needs face embeddings: install the default models, which "
                                 "include a recognizer (`facecache models install default`), and keep --recognizer "
                                 "auto; or use --selector one or many")
        return [face for face in faces if min(identity_distance(face.embedding, r) for r in self.references)
                < self.threshold]

    def _one(self, faces: list[Face], width: int, height: int) -> Face:
        if self.position is None:
            return max(faces, key=lambda f: float((f.box[2] - f.box[0]) * (f.box[3] - f.box[1])))
        point = np.array([self.position[0] * width, self.position[1] * height], dtype=np.float32)
        return min(faces, key=lambda f: float(np.linalg.norm((f.box[:2] + f.box[2:]) / 2 - point)))


def identity_distance(a: np.ndarray, b: np.ndarray) -> float:
    """(1 - cosine similarity) / 2 between two embeddings, in 0..1."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    denominator = np.linalg.norm(a) * np.linalg.norm(b)
    if denominator == 0:
        return 1.0
    return float((1.0 - np.dot(a, b) / denominator) / 2.0)
