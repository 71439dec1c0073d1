"""Colour matching in CIE L*a*b*: mean and standard-deviation transfer inside a soft mask.

Each L*, a*, b* channel of the image is shifted and scaled so that, weighted
by the mask, its mean and spread equal the reference's (Reinhard et al. 2001,
"Color Transfer between Images"). ``strength`` blends between the untouched
image (0) and the full transfer (1).
"""

from __future__ import annotations

import cv2
import numpy as np

# A channel's spread is never scaled by more than this factor either way, so a
# nearly flat region (a synthetic image, a blown-out face) cannot explode.
MAX_SPREAD_RATIO = 3.0
_MIN_WEIGHT = 1e-3
# Statistics are measured on copies shrunk to this side: means and spreads barely move, and the
# two L*a*b* conversions they need cost a sixteenth (the float conversion dominates a classic swap).
_STATS_SIDE = 64


def _lab(image_bgr: np.ndarray) -> np.ndarray:
    # OpenCV's 8-bit L*a*b* (L scaled to 0..255, a and b offset by 128) goes through lookup tables,
    # several times faster than the float conversion; the transfer is affine per channel, so the
    # scaling does not change the result beyond 8-bit rounding.
    return cv2.cvtColor(image_bgr, cv2.COLOR_BGR2LAB).astype(np.float32)


def _shrink(image: np.ndarray) -> np.ndarray:
    height, width = image.shape[:2]
    if max(height, width) <= _STATS_SIDE:
        return image
    scale = _STATS_SIDE / max(height, width)
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    return cv2.resize(image, size, interpolation=cv2.INTER_AREA)


def _weighted_stats(lab: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    total = float(weights.sum())
    mean = np.einsum("hw,hwc->c", weights, lab, dtype=np.float64) / total
    var = np.einsum("hw,hwc->c", weights, (lab - mean) ** 2, dtype=np.float64) / total
    return mean, np.sqrt(np.maximum(var, 0.0))


def match_color(image: np.ndarray, reference: np.ndarray, mask: np.ndarray, strength: float = 1.0) -> np.ndarray:
    """``image`` (BGR uint8) with its colours inside ``mask`` moved towards ``reference``'s.

    ``image`` and ``reference`` are the same size (e.g. the swapped crop and the
    original frame's crop at the same matrix); ``mask`` (float 0..1, same height
    and width) weights the pixels whose statistics are compared. The whole
    image is adjusted; where it is used is the compositor's business. Returns
    a new BGR uint8 image (``image`` itself when strength is 0 or the mask is empty).
    """
    if not 0.0 <= float(strength) <= 1.0:
        raise ValueError(f"colour match strength must be in 0..1, got {strength}")
    if image.shape != reference.shape or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"colour matching needs two BGR images of one size, got {image.shape} and {reference.shape}")
    weights = np.asarray(mask, dtype=np.float32)
    if weights.shape != image.shape[:2]:
        raise ValueError(f"colour matching mask must be {image.shape[:2]}, got {weights.shape}")
    if strength == 0.0 or float(weights.sum()) < _MIN_WEIGHT:
        return image
    small_image, small_reference, small_weights = _shrink(image), _shrink(reference), _shrink(weights)
    if float(small_weights.sum()) < _MIN_WEIGHT:
        small_image, small_reference, small_weights = image, reference, weights
    mean_src, std_src = _weighted_stats(_lab(small_image), small_weights)
    mean_ref, std_ref = _weighted_stats(_lab(small_reference), small_weights)
    lab = _lab(image)
    ratio = np.where(std_src > 1e-6, std_ref / np.maximum(std_src, 1e-6), 1.0)
    ratio = np.clip(ratio, 1.0 / MAX_SPREAD_RATIO, MAX_SPREAD_RATIO)
    moved = (lab - mean_src) * ratio + mean_ref
    if strength < 1.0:
        moved = lab + np.float32(strength) * (moved - lab)
    return cv2.cvtColor(np.clip(np.rint(moved), 0, 255).astype(np.uint8), cv2.COLOR_LAB2BGR)
