"""The swapped face's edge in the lighting of the target's skin.

The colour transfer (``swap.color``) gives the swapped face the original face's colours as a
whole: one mean and spread for the face. But light falls unevenly: a source lit from above has a
brighter forehead than cheeks, the target may be lit from the side, and where the mask ends the
difference shows as a band (a pale forehead edge, a dark rim under the jaw). So along the inside
of the mask's edge, the difference between the target's local colour and the swapped face's is
measured (in L*a*b*, on a quarter-size copy: lighting is slow), spread smoothly inwards
(normalised convolution), and added to the swapped face with a weight that is full at the edge
and gone a short way in: the edge meets the target's skin as it is lit there, and the middle of
the face keeps the source's own shading, which carries its shape.

    crop = lit_edge(crop, frame, matrix, mask, transfer)   # in the swap stage, where the frame is

The correction is put into the crop itself, divided by the transfer's gain, so that the
composite's colour transfer (at full strength) turns it into exactly the wanted step; the
composite needs no frame pixels (a blend change decodes nothing). At a colour match below 1 the
edge keeps this correction while the rest of the face keeps more of its own colours.
"""

from __future__ import annotations

import cv2
import numpy as np

from facecache.analysis.align import shrunk_matrix, warp
from facecache.swap.color import ColorTransfer

# Fractions of the crop's side: the band inside the mask's edge where the difference is measured,
# how far smoothing spreads it, and how far in the correction fades to nothing.
BAND = 0.04
SPREAD = 0.04
REACH = 0.09
# The largest correction, in L*a*b* units (8-bit L* scale for lightness): a target's dark glasses
# rim or hair at the very edge moves the face's edge a little, never paints it.
_LIMIT = np.array([24.0, 10.0, 10.0], np.float32)
_SHRINK = 4
_MIN_SIDE = 16


def lit_edge(crop: np.ndarray, frame: np.ndarray, matrix: np.ndarray, mask: np.ndarray,
             transfer: ColorTransfer) -> np.ndarray:
    """``crop`` with ``edge_lighting``'s field (at full colour match) put into it, divided by the
    transfer's gain; the crop itself when there is nothing to correct."""
    field = edge_lighting(crop, frame, matrix, mask, transfer, 1.0)
    if field is None:
        return crop
    lab = cv2.cvtColor(crop, cv2.COLOR_BGR2LAB).astype(np.float32)
    lab += field / np.maximum(transfer.gain, 1e-3)
    return cv2.cvtColor(np.clip(np.rint(lab), 0, 255).astype(np.uint8), cv2.COLOR_LAB2BGR)


def edge_lighting(crop: np.ndarray, frame: np.ndarray, matrix: np.ndarray, mask: np.ndarray,
                  transfer: ColorTransfer, strength: float) -> np.ndarray | None:
    """(h, w, 3) float32 offsets in OpenCV's 8-bit L*a*b* units to add to ``crop`` (BGR uint8, the
    swapped face, square) once ``transfer`` gives it the target's colours at ``strength``, so that
    the inside of the edge of ``mask`` (float, 0..1) takes the local colour of ``frame`` (the
    original picture; ``matrix`` takes it to the crop); None when the mask has no inside."""
    height, width = mask.shape
    small = (max(_MIN_SIDE, width // _SHRINK), max(_MIN_SIDE, height // _SHRINK))
    weights = cv2.resize(mask, small, interpolation=cv2.INTER_AREA)
    inside = (weights >= 0.5 * float(weights.max())).astype(np.uint8)
    if not inside.any():
        return None
    side = float(max(small))
    distance = cv2.distanceTransform(cv2.copyMakeBorder(inside, 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=0),
                                     cv2.DIST_L2, 3)[1:-1, 1:-1]
    band = ((distance > 0) & (distance <= max(BAND * side, 1.0))).astype(np.float32)
    matched = transfer.apply(cv2.resize(crop, small, interpolation=cv2.INTER_AREA), strength)
    lab_crop = cv2.cvtColor(matched, cv2.COLOR_BGR2LAB)
    target = warp(frame, shrunk_matrix(matrix, small[0] / width), small)
    lab_target = cv2.cvtColor(target, cv2.COLOR_BGR2LAB)
    difference = np.clip(lab_target.astype(np.float32) - lab_crop.astype(np.float32), -_LIMIT, _LIMIT)
    sigma = max(SPREAD * side, 0.5)
    spread = cv2.GaussianBlur(difference * band[..., None], (0, 0), sigma)
    support = cv2.GaussianBlur(band, (0, 0), sigma)
    field = spread / np.maximum(support, 1e-3)[..., None]
    fade = np.clip(1.0 - (distance - 1.0) / max(REACH * side, 1.0), 0.0, 1.0)
    field *= (fade * fade * (3.0 - 2.0 * fade) * (support > 1e-3))[..., None]
    return cv2.resize(field, (width, height), interpolation=cv2.INTER_LINEAR)
