"""A black-and-white source photo swapped in the original's colouring, not one flat tint (swap/grey_source.py),
on the real sample portraits (Grace Hopper's made grey, as an old photo is)."""

import cv2
import numpy as np
import pytest

import facecache.swap.classic as classic
from facecache.store.records import Face
from facecache.swap.classic import ClassicSwapper
from facecache.swap.composite import CompositeParams, paste_back
from facecache.swap.grey_source import is_grey, with_original_chroma

from portrait_faces import portrait_face, synthetic_68

pytestmark = pytest.mark.index


def grey(image):
    return cv2.cvtColor(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), cv2.COLOR_GRAY2BGR)


def with_landmarks(name):
    face = portrait_face(name)
    return Face(box=face.box, score=face.score, kps5=face.kps5, landmarks68=synthetic_68(face.kps5))


def chroma(image):
    return cv2.cvtColor(image, cv2.COLOR_BGR2LAB)[..., 1:].astype(np.float32) - 128.0


def test_a_grey_crop_is_told_from_a_colour_one(portraits):
    photo = portraits["grace_hopper"][120:330, 180:350]
    everywhere = np.ones(photo.shape[:2], np.float32)
    assert is_grey(grey(photo), everywhere)
    assert not is_grey(photo, everywhere)
    assert not is_grey(grey(photo), np.zeros_like(everywhere))  # nothing weighed: nothing to say


def test_the_original_chroma_comes_blurred_and_the_crop_keeps_its_lightness(portraits):
    crop, original = grey(portraits["grace_hopper"][100:356, 150:406]), portraits["astronaut"][0:256, 100:356]
    out = with_original_chroma(crop, original)
    lightness = [cv2.cvtColor(image, cv2.COLOR_BGR2LAB)[..., 0].astype(int) for image in (crop, out)]
    assert np.abs(lightness[1] - lightness[0]).mean() < 1.0  # 8-bit L*a*b* round trips, clipped to sRGB
    # no feature of the original's comes along: its chroma, blurred by 0.06 of the side, not sharp
    blurred = cv2.GaussianBlur(chroma(original), (0, 0), 0.06 * 256)
    assert np.abs(chroma(out) - blurred).mean() < 2.5 < np.abs(chroma(out) - chroma(original)).mean()


def test_a_grey_source_takes_the_originals_colouring_not_one_tint(portraits, monkeypatch):
    """Grace Hopper, made grey, onto the astronaut: the swapped face's chroma follows the astronaut's own
    (redder lips and cheeks, paler forehead) instead of one tint (the transfer's mean alone)."""
    target = with_landmarks("astronaut")
    swapper = ClassicSwapper()
    source = swapper.prepare_source(grey(portraits["grace_hopper"]), with_landmarks("grace_hopper"))
    frame = portraits["astronaut"]

    def swapped():
        result = swapper.swap(frame, target, source)
        return paste_back(frame, [result], CompositeParams()), result

    coloured, result = swapped()
    monkeypatch.setattr(classic, "is_grey", lambda crop, weights: False)
    tinted, _ = swapped()
    # the face's middle, in the frame: where the mask takes the swapped face whole
    inverse = cv2.invertAffineTransform(result.matrix)
    inside = cv2.warpAffine((result.mask >= 1.0).astype(np.float32), inverse, frame.shape[1::-1]) > 0.99
    sigma = 0.06 * result.size / abs(float(np.linalg.det(result.matrix[:, :2]))) ** 0.5
    field = cv2.GaussianBlur(chroma(frame), (0, 0), sigma)

    def off_the_field(image):
        return float(np.abs(cv2.GaussianBlur(chroma(image), (0, 0), sigma) - field)[inside].mean())

    def correlation(image):
        ours = cv2.GaussianBlur(chroma(image), (0, 0), sigma)[inside]
        return [float(np.corrcoef(ours[:, c], field[inside][:, c])[0, 1]) for c in (0, 1)]

    # measured: 1.12 against 2.02 units off the field; correlations (a*, b*) 0.97, 0.65 against 0.66, 0.09
    assert off_the_field(coloured) < 0.65 * off_the_field(tinted)
    assert min(correlation(coloured)) > 0.5 > correlation(tinted)[1]
    # and the source's lightness: the face is still Grace Hopper's, not the astronaut's
    lightness = [cv2.cvtColor(image, cv2.COLOR_BGR2LAB)[..., 0].astype(int)[inside] for image in (coloured, tinted)]
    assert np.abs(lightness[0] - lightness[1]).mean() < 3.0
