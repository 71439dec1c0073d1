"""A grey source's face in the original's colours.

A black-and-white source photo has no chroma for the colour transfer to fit: its a* and b* are neutral
everywhere, so the transfer gives the swapped face one flat tint, the original face's mean colour, from
forehead to chin. Cheeks, lips and the shadow under the brows all come out the same orange, and a viewer
sees a mask (docs/quality.md). So when the swapped crop is grey, it takes the original's own chroma
instead, blurred so that none of its features come along (its lips' edge, a glasses' rim, its eyes), and
keeps its own lightness: the source's face, the original's colouring.
"""

from __future__ import annotations

import cv2
import numpy as np

from facecache.swap.color import shrunk_for_statistics

# A crop is grey where, under the colour fit's weights, its a* and b* (8-bit, neutral 128) are within
# this of neutral on average and spread by less than the second: a colour photo of the palest skin
# reads a* and b* 8 and more from neutral.
_NEUTRAL_MEAN = 3.0
_NEUTRAL_SPREAD = 4.5
# The original's chroma is blurred by this share of the crop's side: at 0.03 a glasses' rims still came
# along as a coloured ring.
_CHROMA_BLUR = 0.06


def is_grey(crop: np.ndarray, weights: np.ndarray) -> bool:
    """Whether the swapped ``crop`` (BGR uint8) is grey where ``weights`` (the colour fit's, 0..1) hold. Read on
    the shrunk copies the colour fit reads (every face pays this: 0.4 ms at 256 pixels on the whole crop)."""
    inside = (shrunk_for_statistics(weights) > 0.5).astype(np.uint8)
    if cv2.countNonZero(inside) == 0:
        return False
    mean, spread = cv2.meanStdDev(cv2.cvtColor(shrunk_for_statistics(crop), cv2.COLOR_BGR2LAB), mask=inside)
    return bool(np.all(np.abs(mean[1:, 0] - 128.0) <= _NEUTRAL_MEAN) and np.all(spread[1:, 0] <= _NEUTRAL_SPREAD))


def with_original_chroma(crop: np.ndarray, original: np.ndarray) -> np.ndarray:
    """``crop``'s lightness with ``original``'s chroma (the target face in the same crop), blurred."""
    lab = cv2.cvtColor(crop, cv2.COLOR_BGR2LAB)
    chroma = cv2.cvtColor(original, cv2.COLOR_BGR2LAB)[..., 1:]
    sigma = _CHROMA_BLUR * crop.shape[0]
    lab[..., 1:] = cv2.GaussianBlur(chroma, (0, 0), sigma, borderType=cv2.BORDER_REPLICATE)
    return cv2.cvtColor(lab, cv2.COLOR_LAB2BGR)
