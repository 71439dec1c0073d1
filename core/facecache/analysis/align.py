"""Face alignment: 5-point templates, similarity fits, warps and their inverses.

Templates are normalised to a unit square (multiply by the crop size); point
order is left eye, right eye, nose, left mouth corner, right mouth corner
(image-left first).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

import cv2
import numpy as np


def _template(points_px, crop_size: float) -> np.ndarray:
    array = np.asarray(points_px, dtype=np.float64) / crop_size
    array.setflags(write=False)
    return array


# The published ArcFace 112x112 reference points, in pixels.
_ARCFACE_112_PX = [[38.2946, 51.6963], [73.5318, 51.5014], [56.0252, 71.7366], [41.5493, 92.3655], [70.7299, 92.2041]]

TEMPLATES: Mapping[str, np.ndarray] = MappingProxyType(
    {
        "arcface_112_v2": _template(_ARCFACE_112_PX, 112.0),
        # The same points in a 128 crop, shifted 8 px right (centred horizontally).
        "arcface_128": _template(np.asarray(_ARCFACE_112_PX) + [8.0, 0.0], 128.0),
        # The FFHQ 512x512 reference points.
        "ffhq_512": _template(
            [[192.98138, 239.94708], [318.90277, 240.1936], [256.63416, 314.01935], [201.26117, 371.41043], [313.08905, 371.15118]],
            512.0,
        ),
    }
)


def _size_wh(size) -> tuple[int, int]:
    if np.ndim(size) == 0:
        return int(size), int(size)
    width, height = size
    return int(width), int(height)


def template_points(template: str, size) -> np.ndarray:
    """The template's five points in pixels of a crop of ``size`` (int or (width, height))."""
    try:
        points = TEMPLATES[template]
    except KeyError:
        raise ValueError(f"unknown alignment template {template!r}; choose one of {sorted(TEMPLATES)}") from None
    width, height = _size_wh(size)
    return points * np.array([width, height], dtype=np.float64)


def estimate_similarity(source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Least-squares similarity (rotation, uniform scale, translation; no reflection)
    taking ``source`` points onto ``target`` points. Returns a (2, 3) float64 matrix.

    With points as complex numbers z, the best map is z -> w z + t with
    w = sum(conj(s - s_mean) (d - d_mean)) / sum(|s - s_mean|^2), t = d_mean - w s_mean.
    Written out in real and imaginary parts: numpy 2's complex scalars call ucrtbase's cimag, which Wine
    (where the engine's Windows tests run) does not implement.
    """
    source = np.asarray(source, dtype=np.float64).reshape(-1, 2)
    target = np.asarray(target, dtype=np.float64).reshape(-1, 2)
    if len(source) != len(target) or len(source) < 2:
        raise ValueError(f"need two or more matching points, got {len(source)} and {len(target)}")
    source_mean, target_mean = source.mean(axis=0), target.mean(axis=0)
    (sx, sy), (dx, dy) = (source - source_mean).T, (target - target_mean).T
    spread = float(np.sum(sx * sx + sy * sy))
    if spread <= 1e-12:
        raise ValueError("the source points all coincide; no alignment can be estimated from them")
    w_re = float(np.sum(sx * dx + sy * dy)) / spread
    w_im = float(np.sum(sx * dy - sy * dx)) / spread
    t_re = target_mean[0] - (w_re * source_mean[0] - w_im * source_mean[1])
    t_im = target_mean[1] - (w_re * source_mean[1] + w_im * source_mean[0])
    return np.array([[w_re, -w_im, t_re], [w_im, w_re, t_im]], dtype=np.float64)


def alignment_matrix(kps5: np.ndarray, template: str, size) -> np.ndarray:
    """The (2, 3) matrix taking frame pixels onto the template's crop of ``size``."""
    return estimate_similarity(kps5, template_points(template, size))


def transform_points(points: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Apply a (2, 3) affine matrix to (N, 2) points."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    matrix = np.asarray(matrix, dtype=np.float64).reshape(2, 3)
    return points @ matrix[:, :2].T + matrix[:, 2]


# 2x2 determinants and inverses are written out: numpy's LAPACK calls for tiny matrices wake the BLAS
# threads, and while the output writers hold the other core they waited ~5 ms a call (measured in a
# warm six-face run: 0.2 ms on an idle machine).
def linear_det(matrix: np.ndarray) -> float:
    """The determinant of a (2, 3) affine matrix's linear part (its area scale, signed)."""
    (a, b), (c, d) = np.asarray(matrix, dtype=np.float64)[:2, :2]
    return float(a * d - b * c)


def invert_affine(matrix: np.ndarray) -> np.ndarray:
    """The inverse of a (2, 3) affine matrix."""
    matrix = np.asarray(matrix, dtype=np.float64).reshape(2, 3)
    det = linear_det(matrix)
    if abs(det) < 1e-12:
        raise ValueError("the affine matrix is singular and has no inverse")
    (a, b), (c, d) = matrix[:, :2]
    inverse = np.array([[d, -b], [-c, a]]) / det
    return np.hstack([inverse, -(inverse @ matrix[:, 2:3])])


def compose_affine(second: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The (2, 3) matrix applying ``first`` then ``second``."""
    a = np.vstack([np.asarray(second, dtype=np.float64).reshape(2, 3), [0.0, 0.0, 1.0]])
    b = np.vstack([np.asarray(first, dtype=np.float64).reshape(2, 3), [0.0, 0.0, 1.0]])
    return (a @ b)[:2]


def warp(frame: np.ndarray, matrix: np.ndarray, size, border: int = cv2.BORDER_REPLICATE) -> np.ndarray:
    """Warp ``frame`` by ``matrix`` into an image of ``size`` (int or (width, height))."""
    width, height = _size_wh(size)
    return cv2.warpAffine(frame, np.asarray(matrix, dtype=np.float64), (width, height), flags=cv2.INTER_LINEAR, borderMode=border)


def warp_face(frame: np.ndarray, kps5: np.ndarray, template: str, size) -> tuple[np.ndarray, np.ndarray]:
    """Crop the face aligned to ``template``; returns (crop, frame-to-crop matrix)."""
    matrix = alignment_matrix(kps5, template, size)
    return warp(frame, matrix, size), matrix


def warp_back(crop: np.ndarray, matrix: np.ndarray, frame_size) -> np.ndarray:
    """Warp a crop made with ``matrix`` back into frame coordinates.

    ``frame_size`` is (width, height); pixels outside the crop are zero.
    """
    return warp(crop, invert_affine(matrix), frame_size, border=cv2.BORDER_CONSTANT)
