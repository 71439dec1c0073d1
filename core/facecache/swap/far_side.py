"""A source face turned the other way from the target is read mirrored.

A head turned aside shows its far cheek foreshortened: few pixels between the nose and the jaw.
Warped onto a target turned the other way, whose same cheek is the wide, near one, those few
pixels are stretched across it and come out as streaks: the face is smeared, and a detector
finds its landmarks elsewhere. The source flipped left to right is turned the same way as the
target, and its near cheek has the pixels the target's near cheek needs. So when flipping the
source makes the most stretched side of the face stretch markedly less (``flip_amount``), the
source is read mirrored (its landmarks mirrored and renumbered with it, ``mirrored``). The
whole face is flipped, not one side: half of a face mirrored onto the other half is a
symmetric face, which looks like nobody; a flipped face is the same person, as in a mirror.

    amount = flip_amount(source_mesh, target_mesh)        # 0: as it is ... 1: mirrored
    map_x, map_y = piecewise_map(mirrored(source_mesh, size), target_mesh, TRIANGLES, size)
    map_x = (size - 1) - map_x                            # back into the unmirrored crop
"""

from __future__ import annotations

import numpy as np

# The 78 points (iBUG 68 and the ten forehead points of ``face_region.with_forehead``) mirrored:
# the point each one becomes when the face is flipped left to right.
_MIRROR = np.array(
    list(range(16, -1, -1))                             # jaw
    + list(range(26, 16, -1))                           # brows
    + [27, 28, 29, 30, 35, 34, 33, 32, 31]              # nose bridge, nostrils
    + [45, 44, 43, 42, 47, 46, 39, 38, 37, 36, 41, 40]  # eyes (outer corner <-> outer corner)
    + [54, 53, 52, 51, 50, 49, 48, 59, 58, 57, 56, 55]  # outer lips
    + [64, 63, 62, 61, 60, 67, 66, 65]                  # inner lips
    + list(range(77, 67, -1)))                          # forehead points (above the brows)
# Points on the face's midline (nose, lips, chin), and the jaw points on each side down to the
# mouth: their distance from the midline is that side's width.
_MIDLINE = (27, 28, 29, 30, 33, 51, 62, 66, 57, 8)
_LEFT_JAW, _RIGHT_JAW = tuple(range(0, 6)), tuple(range(11, 17))
# The source is read mirrored when that stretches the face's worst side this many times less,
# fading in over _RAMP beyond it: a head turning across it in a shot cross-fades over a few frames.
_FLIP_GAIN = 1.2
_RAMP = 0.2


def mirrored(points: np.ndarray, size: int) -> np.ndarray:
    """The 78 points (crop pixels) of the face flipped left to right within a crop of ``size``,
    renumbered so each point is again the landmark its number says (the left eye's outer corner
    is the flipped right eye's)."""
    points = np.asarray(points, np.float64).reshape(78, 2)[_MIRROR]
    return np.stack([(size - 1.0) - points[:, 0], points[:, 1]], axis=1)


def half_widths(points: np.ndarray) -> tuple[float, float]:
    """(image-left, image-right) widths of the face from its midline to the jaw, in pixels of an
    aligned crop (eyes level)."""
    points = np.asarray(points, np.float64).reshape(-1, 2)
    middle = float(points[list(_MIDLINE), 0].mean())
    return (max(middle - float(points[list(_LEFT_JAW), 0].mean()), 1e-3),
            max(float(points[list(_RIGHT_JAW), 0].mean()) - middle, 1e-3))


def flip_amount(source: np.ndarray, target: np.ndarray) -> float:
    """0..1: how much of the source to read mirrored onto the target (their 78 points in aligned
    crops): 1 when mirrored it stretches its more enlarged side at least _FLIP_GAIN + _RAMP times
    less than as it is (each side's enlargement from the source's width to the target's)."""
    (sl, sr), (tl, tr) = half_widths(source), half_widths(target)
    gain = max(tl / sl, tr / sr) / max(tl / sr, tr / sl)  # mirrored, the source's sides swap
    t = float(np.clip((gain - _FLIP_GAIN) / _RAMP, 0.0, 1.0))
    return t * t * (3.0 - 2.0 * t)
