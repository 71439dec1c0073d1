"""The target's glasses' rims and arms are taken in with its skin (swap/face_region.py,
``thin_dark_lines``; swap/classic.py): left half blended at the mask's edge, they show."""

import cv2
import numpy as np
import pytest

from facecache.analysis.align import transform_points
from facecache.store.records import Face
from facecache.swap import classic
from facecache.swap.classic import ClassicSwapper
from facecache.swap.composite import CompositeParams, paste_back
from facecache.swap.face_region import thin_dark_lines

from portrait_faces import portrait_face, synthetic_68

KPS5 = np.array([[80, 100], [176, 100], [128, 150], [90, 190], [166, 190]], np.float64)


def with_68(name: str) -> Face:
    face = portrait_face(name)
    return Face(box=face.box, score=face.score, kps5=face.kps5, landmarks68=synthetic_68(face.kps5))


def skin_crop(size: int = 256) -> np.ndarray:
    return np.full((size, size, 3), (150, 170, 210), np.uint8)  # a light skin tone (BGR)


@pytest.mark.parametrize("size", [256, 512])  # 512: found on a smaller copy of the band
def test_a_thin_dark_line_above_the_brows_is_found_and_nothing_outside_the_band(size):
    scale = size // 256
    points = synthetic_68(KPS5 * scale)
    brows_top, chin = int(points[17:27, 1].min()), int(points[8, 1])
    image = skin_crop(size)
    image[brows_top - 6 * scale:brows_top - 2 * scale] = (40, 40, 50)  # a rim's top: 1.6 % of the side
    image[chin - 8 * scale:chin - 4 * scale] = (40, 40, 50)            # the same line at the chin
    lines = thin_dark_lines(image, points)
    assert lines.dtype == np.float32 and lines.shape == (size, size)
    assert lines[brows_top - 4 * scale, 40 * scale] > 0.75 and lines.max() <= 0.95 + 1e-6  # nearly skin
    assert lines[chin - 6 * scale].max() == 0.0  # below the eyes' band: not a glasses' line
    assert lines[brows_top - 40 * scale, 40 * scale] < 0.05  # it spreads a little, not across the forehead


def test_wide_or_faint_dark_structures_are_no_lines():
    points = synthetic_68(KPS5)
    brows_top = int(points[17:27, 1].min())
    wide, faint = skin_crop(), skin_crop()
    wide[:brows_top - 2, 90:170] = (40, 40, 50)          # a fringe down to the brows: far wider than a line
    faint[brows_top - 6:brows_top - 2] = (135, 155, 195)  # a wrinkle's shade, a few levels darker
    assert thin_dark_lines(wide, points)[brows_top - 8, 110:150].max() < 0.05
    assert thin_dark_lines(faint, points).max() == 0.0
    assert thin_dark_lines(skin_crop(), points).max() == 0.0


@pytest.mark.index
def test_the_rim_of_grace_hoppers_glasses_is_covered(portraits, monkeypatch):
    """Grace Hopper's own glasses: with the lines taken in, the mask over their dark rim and arms
    (above the eyes' middle, outside the landmarks' fade) is higher and the swapped picture is lighter
    there; without them it is as before."""
    target, face = portraits["grace_hopper"], with_68("grace_hopper")
    swapper = ClassicSwapper()
    source = swapper.prepare_source(portraits["astronaut"], with_68("astronaut"))
    taken = swapper.swap(target, face, source)
    monkeypatch.setattr(classic, "thin_dark_lines", lambda image, points: np.zeros(image.shape[:2], np.float32))
    left = swapper.swap(target, face, source)
    size = taken.size
    original = cv2.warpAffine(target, taken.matrix, (size, size), flags=cv2.INTER_LINEAR)
    points = transform_points(face.landmarks68, taken.matrix)
    eyes_middle = float(points[36:48, 1].mean())
    dark = cv2.cvtColor(original, cv2.COLOR_BGR2LAB)[..., 0] < 80
    dark[int(eyes_middle):] = False
    rim = dark & (left.mask > 0.2) & (left.mask < 0.9)  # where the rim was left half blended
    assert rim.sum() > 50
    assert taken.mask[rim].mean() > left.mask[rim].mean() + 0.1
    assert np.all(taken.mask >= left.mask - 1e-6)  # the lines only add to the mask
    shown, before = (cv2.warpAffine(paste_back(target, [r], CompositeParams()), taken.matrix, (size, size))
                     for r in (taken, left))
    lightness = [cv2.cvtColor(x, cv2.COLOR_BGR2LAB)[..., 0][rim].astype(float).mean() for x in (shown, before)]
    assert lightness[0] > lightness[1] + 5
