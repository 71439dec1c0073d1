"""Measures of one swapped face, as face-swap papers and an editor's eye judge it.

Every function takes frame-sized arrays: the original frame (``target``), the swapped frame
(``output``), the composite's alpha of the swapped face (float 0..1, 0 = the original's pixel),
and the source face resampled into the frame where the swapped face lies (``source_in_frame``).

- identity: is the swapped face's embedding closer to the source's than to the original face's?
- colour: pixels that a channel clips at 0 or 255 where neither the source nor the target did;
- sharpness: detail (variance of the Laplacian) of the swapped face against the source's own
  detail at that size, resampled well;
- expression: how far the swapped face's landmarks are from the target's, in eye distances;
- seam: the colour step across the mask's edge against the step across the same ring in the target.
"""

from __future__ import annotations

import cv2
import numpy as np

from facecache.analysis.align import estimate_similarity

# The face's inside for sharpness: fully swapped pixels, this far (px) from the mask's fade.
_INNER_MARGIN_PX = 3
# A target whose ring is flat (one skin tone) still has this much step (Lab units), so a seam
# ratio never divides by almost nothing.
_MIN_RING_STEP = 1.0
# An inner-lip gap above this many eye distances is an open mouth.
OPEN_MOUTH = 0.08


def source_in_frame(source: np.ndarray, source_kps5: np.ndarray, target_kps5: np.ndarray,
                    frame_shape: tuple[int, ...]) -> np.ndarray:
    """The source image moved onto the target face (similarity of the five key points), resampled
    the way that keeps the most detail: area-averaged when it shrinks, bicubic when it grows."""
    matrix = estimate_similarity(np.asarray(source_kps5, np.float64), np.asarray(target_kps5, np.float64))
    scale = float(np.sqrt(abs(np.linalg.det(matrix[:, :2]))))
    image = source
    if scale < 1.0:
        image = cv2.resize(source, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        shrink = np.array([[scale, 0.0, 0.0], [0.0, scale, 0.0]])
        matrix = matrix @ np.vstack([cv2.invertAffineTransform(shrink), [0.0, 0.0, 1.0]])
    height, width = frame_shape[:2]
    return cv2.warpAffine(image, matrix, (width, height), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_REFLECT)


def newly_clipped(output: np.ndarray, source: np.ndarray, target: np.ndarray,
                  region: np.ndarray) -> tuple[int, int]:
    """(pixels of ``region`` with a channel at 0 or 255 that neither the source nor the target has
    clipped there, pixels of ``region``)."""
    def clipped(image):
        return (image == 0) | (image == 255)

    new = clipped(output) & ~clipped(source) & ~clipped(target)
    return int(np.count_nonzero(np.any(new, axis=2) & region)), int(np.count_nonzero(region))


def inner_region(alpha: np.ndarray) -> np.ndarray:
    """Fully swapped pixels away from the mask's fade (where detail is the swap's own)."""
    full = (alpha >= 0.99).astype(np.uint8)
    kernel = np.ones((2 * _INNER_MARGIN_PX + 1,) * 2, np.uint8)
    return cv2.erode(full, kernel).astype(bool)


def laplacian_variance(image: np.ndarray, region: np.ndarray) -> float:
    grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).astype(np.float32)
    laplacian = cv2.Laplacian(grey, cv2.CV_32F, ksize=3)
    values = laplacian[region]
    return float(values.var()) if values.size else 0.0


def sharpness_ratio(output: np.ndarray, source_in_frame_: np.ndarray, alpha: np.ndarray) -> float | None:
    """Detail inside the swapped face over the source's detail at that size (1 = all kept)."""
    region = inner_region(alpha)
    reference = laplacian_variance(source_in_frame_, region)
    if reference <= 0.0:
        return None
    return laplacian_variance(output, region) / reference


def edge_step(image: np.ndarray, alpha: np.ndarray) -> float | None:
    """Mean colour step (CIE L*a*b* units) across the mask's edge: along the edge's middle, the
    local mean colour of the fully swapped side against that of the untouched side."""
    inside = alpha >= 0.99
    outside = alpha <= 0.0
    middle = _edge_middle(alpha)
    if not middle.any() or not inside.any() or not outside.any():
        return None
    # Half the fade's width: the distance from the edge's middle to the fully swapped side.
    to_inside = cv2.distanceTransform((~inside).astype(np.uint8), cv2.DIST_L2, 3)
    to_outside = cv2.distanceTransform((~outside).astype(np.uint8), cv2.DIST_L2, 3)
    reach = int(np.ceil(max(np.median(to_inside[middle]), np.median(to_outside[middle])))) + 4
    window = (2 * reach + 1, 2 * reach + 1)
    lab = cv2.cvtColor(image, cv2.COLOR_BGR2LAB).astype(np.float32)
    lab[..., 0] *= 100.0 / 255.0  # 8-bit L* back to 0..100
    lab[..., 1:] -= 128.0

    def local_mean(side: np.ndarray):
        weight = cv2.boxFilter(side.astype(np.float32), -1, window, normalize=False)
        total = cv2.boxFilter(lab * side[..., None], -1, window, normalize=False)
        return total / np.maximum(weight, 1.0)[..., None], weight

    inner_mean, inner_weight = local_mean(inside)
    outer_mean, outer_weight = local_mean(outside)
    both = middle & (inner_weight > 0) & (outer_weight > 0)
    if not both.any():
        return None
    return float(np.linalg.norm(inner_mean[both] - outer_mean[both], axis=1).mean())


def _edge_middle(alpha: np.ndarray) -> np.ndarray:
    """Pixels on the boundary of alpha >= 0.5 (the middle of the fade)."""
    half = (alpha >= 0.5).astype(np.uint8)
    return (half - cv2.erode(half, np.ones((3, 3), np.uint8))).astype(bool)


def seam_ratio(output: np.ndarray, target: np.ndarray, alpha: np.ndarray) -> float | None:
    """The step across the mask's edge in the swapped frame over the step across the same ring of
    the original frame (1 = no seam beyond what the picture has there)."""
    swapped, original = edge_step(output, alpha), edge_step(target, alpha)
    if swapped is None or original is None:
        return None
    return swapped / max(original, _MIN_RING_STEP)


def eye_distance(landmarks68: np.ndarray) -> float:
    points = np.asarray(landmarks68, np.float64)
    return float(np.linalg.norm(points[42:48].mean(axis=0) - points[36:42].mean(axis=0)))


def landmark_error(found: np.ndarray, reference: np.ndarray) -> float:
    """Mean distance between two sets of 68 landmarks, in the reference's eye distances."""
    found, reference = np.asarray(found, np.float64), np.asarray(reference, np.float64)
    return float(np.linalg.norm(found - reference, axis=1).mean() / max(eye_distance(reference), 1e-6))


def mouth_opening(landmarks68: np.ndarray) -> float:
    """The inner lips' gap (points 62 to 66) in eye distances."""
    points = np.asarray(landmarks68, np.float64)
    return float(np.linalg.norm(points[66] - points[62]) / max(eye_distance(points), 1e-6))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-12))


def identity_margin(swapped: np.ndarray, source: np.ndarray, target: np.ndarray) -> float:
    """cos(swapped, source) - cos(swapped, target): > 0 when the swapped face is nearer the source."""
    return cosine(swapped, source) - cosine(swapped, target)
