"""A source's wide-open mouth onto a closed one: the target's own folds below the mouth.

A source that speaks or laughs with its mouth wide open has deep folds beside it: the smile folds from the
nose's wings past the mouth's corners, and the chin's. The warp moves its lips onto the target's closed ones,
so those folds come along, squeezed into light and dark lines from the mouth's corners down to the jaw:
creases a viewer stops at, on every face of a group photo, turned or not. A smoother warp does not remove
them (a thin-plate spline only bends them): they are the open mouth's folds, not the mesh's edges.

So where the source's mouth is open wider than the target's, the lower face below the mouth's corners, the
lips left out, takes the target's own folds: the target's detail finer than ``_DETAIL`` eye distances, on the
swapped face's colours and light (the swapped face less the target, blurred that wide, added to the target).
The lips, the smile folds above the mouth's corners, the nose, the eyes and everything above stay the
source's.

    crop = with_own_mouth_folds(crop, original, target_points, source_points)
"""

from __future__ import annotations

import cv2
import numpy as np

from facecache.swap.face_region import eye_distance
from facecache.swap.masks import smoothstep, smoothstep_between, wide_blur

# How much wider the source's inner lips part than the target's, in eye distances: from the first figure the
# target's own folds fade in, at the second they are whole. Open mouths read 0.2-0.4 (a speaking or laughing
# source: Obama in the samples 0.34-0.38), closed ones under 0.06, a smile showing teeth 0.1-0.18 (the astronaut:
# its folds squeeze into no crease, and taken from 0.1 on, an old target's chin brought its wrinkles).
_WIDER = (0.15, 0.25)
# The lower face below the mouth's corners (the hull of the jaw's lower two-thirds and the corners), where the
# creases run, faded in over this many eye distances from its edge: the jaw's own edge stays the swap's, where
# the mask meets the skin. Above the corners the source keeps its smile folds: they are much of its identity
# (taken there too, one face more of the bench's 23 frontal ones read closer to its target).
_LOWER_FACE = np.r_[3:14, 48, 54]
_EDGE_FADE = 0.15
# The lips keep the source's own: the folds are taken from this far off their outline, wholly from the second.
_OFF_LIPS = (0.06, 0.14)
_DETAIL = 0.12


def opening(points68: np.ndarray) -> float:
    """How far the inner lips part, in eye distances (68 landmarks, any frame)."""
    points = np.asarray(points68, np.float64)
    return float(np.linalg.norm(points[66] - points[62])) / eye_distance(points)


def with_own_mouth_folds(crop: np.ndarray, original: np.ndarray, target_points: np.ndarray,
                         source_points: np.ndarray) -> np.ndarray:
    """``crop`` (the swapped face, BGR uint8) with the target's own folds below its mouth where the source's
    mouth is open wider (``original``: the target in the same crop; ``target_points``: its 68 landmarks in the
    crop; ``source_points``: the source's 68, in any frame). A new image, or ``crop`` itself when the source's
    mouth is not open wider."""
    amount = float(smoothstep(np.float32((opening(source_points) - opening(target_points) - _WIDER[0])
                                         / (_WIDER[1] - _WIDER[0]))))
    if amount <= 0.0:
        return crop
    target_points = np.asarray(target_points, np.float64)
    eyes = eye_distance(target_points)
    sigma = max(1.0, _DETAIL * eyes)
    # Everything is worked out in the lower face's box, and as far around it as the blur reads.
    pad = int(np.ceil(3 * sigma))
    x0, y0 = np.maximum(np.floor(target_points[_LOWER_FACE].min(axis=0)).astype(int) - pad, 0)
    x1, y1 = np.minimum(np.ceil(target_points[_LOWER_FACE].max(axis=0)).astype(int) + pad + 1, crop.shape[:2][::-1])
    if x1 <= x0 or y1 <= y0:
        return crop
    shape, corner = (y1 - y0, x1 - x0), np.array([x0, y0])
    inside = _filled(target_points[_LOWER_FACE] - corner, shape)
    lips_out = 1 - _filled(target_points[48:60] - corner, shape)
    depth = cv2.distanceTransform(inside, cv2.DIST_L2, cv2.DIST_MASK_5) / eyes
    off_lips = cv2.distanceTransform(lips_out, cv2.DIST_L2, cv2.DIST_MASK_5) / eyes
    share = smoothstep(depth / _EDGE_FADE) * smoothstep_between(off_lips, _OFF_LIPS)
    rows, columns = np.nonzero(share)
    if len(rows) == 0:
        return crop
    taken = np.s_[rows.min():rows.max() + 1, columns.min():columns.max() + 1]  # the blur's margin stays as it is
    # The swapped face's colours and light, spread from the lower face alone (what lies beyond the jaw, the
    # source's neck or background, is no face's colour): a normalised blur over the hull.
    weights = inside.astype(np.float32)
    swapped = crop[y0:y1, x0:x1]
    difference = cv2.subtract(swapped, original[y0:y1, x0:x1], dtype=cv2.CV_32F)
    difference *= weights[..., None]
    between = wide_blur(difference, sigma) / np.maximum(wide_blur(weights, sigma), 1e-3)[..., None]
    changed = swapped[taken] + (share[taken] * amount)[..., None] * (between[taken] - difference[taken])
    out = crop.copy()
    out[y0:y1, x0:x1][taken] = np.clip(changed + 0.5, 0, 255).astype(np.uint8)
    return out


def _filled(points: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """A uint8 image of ``shape``: 1 inside the convex hull of ``points``, 0 outside."""
    image = np.zeros(shape, np.uint8)
    cv2.fillConvexPoly(image, cv2.convexHull(np.round(points).astype(np.int32)), 1)
    return image
