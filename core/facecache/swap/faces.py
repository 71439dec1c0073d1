"""Reading what a swapper needs from an analysed face (``store.records.Face`` or ``analysis.results.Detection``)."""

from __future__ import annotations

import numpy as np

from facecache.swap.errors import SwapInputError


def face_kps5(face, what: str = "face") -> np.ndarray:
    """The face's (5, 2) key points as float64; SwapInputError when missing or not finite."""
    kps5 = getattr(face, "kps5", None)
    if kps5 is None:
        raise SwapInputError(f"the {what} has no 5-point landmarks (kps5); pass an analysed Face or Detection")
    points = np.asarray(kps5, dtype=np.float64)
    if points.shape != (5, 2) or not np.all(np.isfinite(points)):
        raise SwapInputError(f"the {what}'s kps5 must be five finite (x, y) points, got shape {points.shape}; "
                             "re-run the analysis of that frame")
    return points


def face_landmarks68(face) -> np.ndarray | None:
    """The face's (68, 2) landmarks as float64, or None when it has none (or they are unusable)."""
    points = getattr(face, "landmarks68", None)
    if points is None:
        return None
    points = np.asarray(points, dtype=np.float64)
    if points.shape != (68, 2) or not np.all(np.isfinite(points)):
        return None
    return points


def face_embedding(face, what: str = "source face") -> np.ndarray:
    """The raw identity embedding of a face (or a bare array), as a float64 vector."""
    embedding = face if isinstance(face, np.ndarray) else getattr(face, "embedding", None)
    if embedding is None:
        raise SwapInputError(f"the {what} has no identity embedding; analyse it with a recognizer installed "
                             "(facecache models install arcface_w600k_r50)")
    vector = np.asarray(embedding, dtype=np.float64).reshape(-1)
    if vector.size == 0 or not np.all(np.isfinite(vector)) or float(np.linalg.norm(vector)) == 0.0:
        raise SwapInputError(f"the {what}'s embedding is empty, zero or not finite; analyse the source image again")
    return vector
