"""The original's lighting faded in across the top of the mask's edge (the forehead's seam).

The colour transfer (``swap.color``) matches the swapped face to the original face as a whole; where
the original's forehead is lit otherwise than its cheeks (washed out almost to white by a flash, in
a shadow under a fringe), the swapped forehead still meets it with a step. So near the mask's top
edge the swapped crop takes the original's low frequencies, the crop keeps its own detail:

- the difference original - swapped (CIE L*a*b*, the swapped face as the colour transfer will
  show it) is read where the mask fades (``4 m (1 - m)``), in the upper part of the aligned crop
  only (the forehead and the temples' top: lower down the fade crosses the original's brows, eyes
  and lips, which are no lighting), and only where the original is not darker than the swapped
  face (hair and brows are darker than the skin beside them; a washed-out forehead is lighter);
- it is spread by a normalised blur (the weighted mean of the nearby differences) that fades out
  away from the edge, and bounded (``_MAX_CHANGE``; four times that at the fade itself, where the original
  shows half anyway), so a fringe half over the fade moves the forehead's colour a little, never to the hair's;
- all of it is worked out on a quarter-size crop (it is smooth) and added to the crop's L*a*b*
  in the swap stage (as ``seamless`` is), divided by the colour transfer's gains at each pixel
  (``ColorTransfer.local_gains``), so that the composite's transfer makes it the difference
  again: the composite of a cached swap reads no pixel of the frame. (Chroma added to a pixel
  the transfer will lighten much is partly lost to 8-bit rounding: made in the composite, the
  change took the face below to 1.41.)

Measured with `facecache bench quality` (docs/quality.md): the worst seam of the second check
1.85 -> 1.44 (a washed-out forehead between hair of the skin's hue), the bench 1.44 -> 1.42, the
held-out pairs 1.49 -> 1.47, no face's seam up by more than 0.06; about +22 % CPU per face. Its
lightness bound raised from 8 to 12 (classic 11): the worst top-edge step 1.61 / 1.56 / 0.94 ->
1.44 / 1.41 / 0.87 (bench, held-out, second check), the worst seam 1.83 / 1.84 -> 1.67 / 1.77. The bound
four times higher at the fade (classic 15): the worst seam 1.62 / 1.76 / 1.38 -> 1.43 / 1.48 / 1.38, the top edge
1.44 / 1.41 / 0.87 -> 0.77 / 1.16 / 0.86.
"""

from __future__ import annotations

import cv2
import numpy as np

from facecache.analysis.align import warp
from facecache.swap.color import ColorTransfer

# The fields are worked out on a crop this many times smaller (at least _MIN_SIDE pixels).
_SHRINK = 4
_MIN_SIDE = 32
# The spread of the differences, as a fraction of the crop's side.
_SPREAD = 0.03
# The normalised blur's weights are floored at this share of their largest: away from the edge the
# change fades out instead of carrying the nearest difference across the face.
_FLOOR = 0.05
# The largest change, in 8-bit L*a*b* units (L* 0..255: 12 is 4.7 L* units; a*, b* 8). Lightness is what a
# forehead lit otherwise needs: at 8, one face of the quality sets' 62 kept a band (1.61 against 1.6). Beyond
# these, the seams fall further but the swapped forehead loses the source's likeness (docs/quality.md).
_MAX_CHANGE = np.array([12.0, 8.0, 8.0], np.float32)
_MAX_CHANGE.setflags(write=False)
# At the fade itself the bound is this many times higher, falling back to _MAX_CHANGE away from it (the blurred
# weights, as a share of their largest, say how near the fade a pixel is). The original shows there half anyway:
# a forehead washed out 25 levels lighter than the face below it (the group photo's ginger woman) kept a step at
# 12 (the held-out worst seam, 1.76); deeper in, the bound keeps the source's forehead its own (classic 15).
_EDGE_GAIN = 3.0
# The edge is read above this row of the aligned crop (fraction of its side), fading out until the
# second: in the arcface template's crop the eyes lie at 0.40 of the side, the brows at about 0.3.
_TOP_ROWS = (0.30, 0.40)
# Where the original is darker than the swapped face by this much (8-bit L*), the difference is
# not read (half read at half of it).
_DARKER = 8.0


def edge_lighting(crop: np.ndarray, frame: np.ndarray, matrix: np.ndarray, mask: np.ndarray,
                  transfer: ColorTransfer) -> np.ndarray:
    """``crop`` (BGR uint8, the swapped face in the crop of ``matrix``, frame to crop, before its
    colour ``transfer``) changed so that, once the composite applies the transfer, it takes the
    original ``frame``'s low-frequency colour at the top of ``mask``'s edge; a new image, or
    ``crop`` itself when nothing changes. ``mask`` is the blend mask in crop pixels (its fade tells
    where the swapped face meets the original). The change is made here, in the swap stage, so the
    composite of a cached swap reads no pixel of the frame."""
    size = crop.shape[0]
    side = max(_MIN_SIDE, size // _SHRINK)
    small_mask = cv2.resize(mask, (side, side), interpolation=cv2.INTER_AREA)
    peak = float(small_mask.max())
    if peak <= 0.0:
        return crop
    small_mask /= peak  # the fade's shape, whatever the opacity
    rows = (np.arange(side, dtype=np.float32) + 0.5) / side
    top = np.clip((_TOP_ROWS[1] - rows) / (_TOP_ROWS[1] - _TOP_ROWS[0]), 0.0, 1.0)
    weight = 4.0 * small_mask * (1.0 - small_mask) * top[:, None]
    if float(weight.max()) <= 0.0:
        return crop
    # The swapped face as the composite will show it, where it is read: the transfer applied to the shrunk
    # crop, a sixteenth of the pixels (its lighting and its light's plane scale with the picture). On skin,
    # where the edge is read, the transfer is all but linear: on the quality bench's 52 faces the crops moved
    # by 0.09 of a level on average against the transfer before shrinking, and every figure by its noise.
    read_rows = min(side, int(np.ceil(_TOP_ROWS[1] * side)) + 2)
    small = cv2.resize(crop, (side, side), interpolation=cv2.INTER_AREA)
    shown = transfer.apply(small, 1.0, (0, 0, side, read_rows), used=weight > 0.0)
    swapped = cv2.cvtColor(shown, cv2.COLOR_BGR2LAB)
    original = cv2.cvtColor(warp(frame, np.asarray(matrix, np.float64) * (side / size), side), cv2.COLOR_BGR2LAB)
    difference = original.astype(np.float32) - swapped.astype(np.float32)
    weight *= np.clip((difference[..., 0] + _DARKER) / _DARKER, 0.0, 1.0)
    sigma = max(0.5, _SPREAD * side)
    spread = cv2.GaussianBlur(weight, (0, 0), sigma)
    change = cv2.GaussianBlur(difference * weight[..., None], (0, 0), sigma)
    largest = float(spread.max())
    change /= (spread + _FLOOR * largest + 1e-6)[..., None]
    bound = _MAX_CHANGE * (1.0 + (_EDGE_GAIN / max(largest, 1e-6)) * spread)[..., None]
    np.clip(change, -bound, bound, out=change)
    # Only the rows the change reaches are converted back and forth (the forehead's part of the crop).
    reach = np.abs(change).max(axis=2)
    moved = np.nonzero(reach.max(axis=1) >= 0.5)[0]
    if len(moved) == 0:
        return crop
    last = min(size, int(np.ceil((moved[-1] + 1) * size / side)) + 1)
    full = cv2.resize(change, (size, size), interpolation=cv2.INTER_LINEAR)[:last]
    reached = cv2.resize(reach, (size, size), interpolation=cv2.INTER_LINEAR)[:last] >= 0.5
    out = crop.copy()
    lab8 = cv2.cvtColor(crop[:last], cv2.COLOR_BGR2LAB)
    # added before the transfer, which scales it by its gains: divided by them first
    lab = lab8.astype(np.float32) + full / np.maximum(transfer.local_gains(lab8[..., 0]), 1e-3)
    # Pixels the change does not reach keep their values exactly (the round trip through 8-bit
    # L*a*b* alone moves a level or two).
    out[:last][reached] = cv2.cvtColor(cv2.convertScaleAbs(lab), cv2.COLOR_LAB2BGR)[reached]
    return out

