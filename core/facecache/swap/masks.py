"""Soft masks in crop coordinates: the faded box, feathered polygons, and their combination.

Every mask is a (height, width) float32 array in 0..1 (1 = take the swapped
crop). Feathering always fades *inwards*: a mask is exactly 0 outside its
shape, so pixels outside a face keep the original frame's values exactly.
"""

from __future__ import annotations

from typing import Sequence

import cv2
import numpy as np

_SMALL_SIGMA = 3.0


def smoothstep(t: np.ndarray) -> np.ndarray:
    """0 below 0, 1 above 1, smooth between (float32)."""
    t = np.clip(t, 0.0, 1.0)
    return (t * t * (3.0 - 2.0 * t)).astype(np.float32)


def smoothstep_between(values, edges: tuple[float, float]) -> np.ndarray:
    """``smoothstep`` from 0 at ``edges[0]`` to 1 at ``edges[1]`` (falling where the second edge is the lower)."""
    low, high = edges
    return smoothstep((values - low) / (high - low))


def check_padding(padding: Sequence[float]) -> tuple[float, float, float, float]:
    """Validate (top, right, bottom, left) padding in percent of the crop size."""
    values = tuple(float(v) for v in padding)
    if len(values) != 4:
        raise ValueError(f"mask padding needs four values (top, right, bottom, left) in percent, got {padding!r}")
    if not all(0.0 <= v <= 100.0 for v in values):
        raise ValueError(f"mask padding values are percentages of the crop size in 0..100, got {padding!r}")
    top, right, bottom, left = values
    if top + bottom >= 100.0 or left + right >= 100.0:
        raise ValueError(f"mask padding {padding!r} leaves nothing of the crop; opposite sides must add up to under 100")
    return values  # type: ignore[return-value]


def box_mask(size: int, blur: float = 0.3, padding: Sequence[float] = (0, 0, 0, 0)) -> np.ndarray:
    """A (size, size) box mask whose edges fade from 0 to 1.

    ``padding`` (top, right, bottom, left, in percent of ``size``) is cut off
    first (mask 0 there). Then the mask rises from 0 at the remaining box's
    edge to 1 over ``blur * size / 2`` pixels along a smoothstep curve, so the
    fade scales with the crop: the same ``blur`` looks the same on a 128 px
    and a 512 px swapper. ``blur = 0`` gives a hard-edged box.
    """
    size = int(size)
    if size < 2:
        raise ValueError(f"a box mask needs a size of at least 2 pixels, got {size}")
    if not 0.0 <= float(blur) <= 1.0:
        raise ValueError(f"mask blur must be in 0..1 (a fraction of the crop size), got {blur}")
    top, right, bottom, left = (v * size / 100.0 for v in check_padding(padding))
    fade = float(blur) * size / 2.0
    index = np.arange(size, dtype=np.float32)
    # Distance of each pixel centre from the first kept pixel on each side.
    along_y = np.minimum(index - np.ceil(top), (size - 1 - index) - np.ceil(bottom))
    along_x = np.minimum(index - np.ceil(left), (size - 1 - index) - np.ceil(right))
    distance = np.minimum(along_y[:, None], along_x[None, :])
    if fade < 1.0:
        return (distance >= 0).astype(np.float32)
    return smoothstep(distance / fade)


def combine_masks(masks: Sequence[np.ndarray | None]) -> np.ndarray:
    """The pixel-wise minimum of the masks (None entries are skipped)."""
    present = [np.asarray(m, dtype=np.float32) for m in masks if m is not None]
    if not present:
        raise ValueError("combine_masks needs at least one mask")
    shapes = {m.shape for m in present}
    if len(shapes) != 1:
        raise ValueError(f"masks to combine must share one shape, got {sorted(shapes)}")
    return np.minimum.reduce(present).astype(np.float32) if len(present) > 1 else present[0].copy()


def polygon_mask(points: np.ndarray, size: int, feather: float) -> np.ndarray:
    """A (size, size) mask of the convex hull of ``points`` (crop pixels), faded inwards.

    The mask is 0 on and outside the hull and rises to 1 over ``feather``
    pixels inside it (distance to the hull's edge, smoothstep shaped).
    """
    size = int(size)
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    if len(points) < 3 or not np.all(np.isfinite(points)):
        raise ValueError("a polygon mask needs three or more finite points")
    # Rasterise at 4x sub-pixel precision (shift=2) for smooth edges.
    hull = cv2.convexHull(np.round(points * 4.0).astype(np.int32))
    inside = np.zeros((size, size), dtype=np.uint8)
    cv2.fillConvexPoly(inside, hull, 255, lineType=cv2.LINE_8, shift=2)
    if feather < 1.0:
        return (inside > 0).astype(np.float32)
    # Distance (pixels) from each inside pixel to the nearest outside pixel; a
    # one-pixel frame of "outside" around the crop bounds the hull there too.
    padded = cv2.copyMakeBorder(inside, 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=0)
    distance = cv2.distanceTransform(padded, cv2.DIST_L2, cv2.DIST_MASK_PRECISE)[1:-1, 1:-1]
    return smoothstep((distance - 1.0) / float(feather))


def wide_blur(image: np.ndarray, sigma: float) -> np.ndarray:
    """``image`` (float32) blurred with a Gaussian of ``sigma`` pixels, worked out on a copy shrunk until the
    blur is _SMALL_SIGMA pixels wide: a wide blur is smooth (at full size a 512-pixel crop's took 100 ms)."""
    shrink = max(1.0, sigma / _SMALL_SIGMA)
    if shrink <= 1.0:
        return cv2.GaussianBlur(image, (0, 0), sigma)
    full = (image.shape[1], image.shape[0])
    small = (max(1, round(full[0] / shrink)), max(1, round(full[1] / shrink)))
    image = cv2.GaussianBlur(cv2.resize(image, small, interpolation=cv2.INTER_AREA), (0, 0), sigma / shrink)
    return cv2.resize(image, full, interpolation=cv2.INTER_LINEAR)
