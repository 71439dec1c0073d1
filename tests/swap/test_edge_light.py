"""The swapped face's edge takes the target's local lighting; the middle keeps the source's shading."""

import cv2
import numpy as np

from facecache.swap.color import ColorTransfer
from facecache.swap.edge_light import lit_edge

IDENTITY = ColorTransfer(np.ones(3, np.float32), np.zeros(3, np.float32))


def face_mask(size=128, radius=44, fade=10):
    mask = np.zeros((size, size), np.float32)
    cv2.circle(mask, (size // 2, size // 2), radius, 1.0, -1)
    distance = cv2.distanceTransform((mask > 0).astype(np.uint8), cv2.DIST_L2, 3)
    return np.clip(distance / fade, 0, 1).astype(np.float32)


def test_a_pale_band_at_the_top_edge_is_brought_to_the_targets_lighting():
    size = 128
    target = np.full((size, size, 3), 120, np.uint8)
    crop = target.copy()
    crop[:40] = 160  # the source's forehead: lit brighter than the target's
    mask = face_mask(size)
    matrix = np.array([[1, 0, 0], [0, 1, 0]], np.float32)
    corrected = IDENTITY.apply(lit_edge(crop, target, matrix, mask, IDENTITY))
    top_edge, middle = (size // 2, 25), (size // 2, size // 2)
    assert abs(int(corrected[top_edge[1], top_edge[0], 0]) - 120) < abs(160 - 120) / 2
    assert abs(int(corrected[middle[1], middle[0], 0]) - int(crop[middle[1], middle[0], 0])) <= 1
    # where the edge already matches, nothing changes
    assert np.abs(lit_edge(target, target, matrix, mask, IDENTITY).astype(int) - target).max() <= 1
