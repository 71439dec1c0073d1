"""The original's lighting faded in at the top of the mask's edge (``swap.edge_light``), on made-up
crops whose colours are known: a swapped face of one skin tone over an original whose forehead is
washed out (lighter and greyer), or covered by dark hair."""

import cv2
import numpy as np

from facecache.swap.color import ColorTransfer
from facecache.swap.edge_light import edge_lighting

SIZE = 128
SKIN = (110, 140, 190)  # BGR
IDENTITY = ColorTransfer(np.ones(3, np.float32), np.zeros(3, np.float32))
FRAME_TO_CROP = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # the frame is the crop itself


def face_mask():
    """An ellipse of a face that fades over 16 pixels at its edge (its top edge at row 14)."""
    inside = np.zeros((SIZE, SIZE), np.uint8)
    cv2.ellipse(inside, (SIZE // 2, 70), (44, 56), 0, 0, 360, 1, -1)
    distance = cv2.distanceTransform(inside, cv2.DIST_L2, 3)
    t = np.clip(distance / 16.0, 0.0, 1.0)
    return (t * t * (3.0 - 2.0 * t)).astype(np.float32)


def lab(image, rows):
    return cv2.cvtColor(image, cv2.COLOR_BGR2LAB)[rows, 40:88].reshape(-1, 3).astype(float).mean(axis=0)


def pictures(forehead_bgr):
    crop = np.full((SIZE, SIZE, 3), SKIN, np.uint8)
    original = crop.copy()
    original[:40] = forehead_bgr  # above the brows (a third of the crop)
    return crop, original


def test_a_washed_out_forehead_is_taken_in_at_the_top_edge_and_nothing_below_the_brows_changes():
    crop, original = pictures((215, 222, 228))  # almost white, hardly any chroma
    mask = face_mask()
    out = edge_lighting(crop, original, FRAME_TO_CROP, mask, IDENTITY)
    before, after, target = lab(crop, slice(22, 30)), lab(out, slice(22, 30)), lab(original, slice(22, 30))
    assert after[0] > before[0] + 2  # lighter...
    assert np.hypot(*(after[1:] - 128)) < np.hypot(*(before[1:] - 128)) - 3  # ...and greyer, towards the original
    assert np.linalg.norm(after - before) <= np.linalg.norm(target - before)  # bounded: never past it
    assert np.array_equal(out[64:], crop[64:])  # the face below the eyes keeps its pixels exactly


def test_the_change_is_bounded_tighter_away_from_the_fade():
    """A forehead lit far lighter than the swapped face: at the mask's fade the change goes up to four times the
    bounds of 12 levels of 8-bit L* and 8 of chroma (at 12 a washed-out forehead kept a step there; the original
    shows half at the fade anyway), towards the original and never past it; a little further in, at the brows'
    height, within those bounds (more cost the swapped forehead its likeness)."""
    crop, original = pictures((215, 222, 228))  # 67 levels lighter, 14 and 19 less a* and b*
    out = edge_lighting(crop, original, FRAME_TO_CROP, face_mask(), IDENTITY)
    at_fade = lab(out, slice(22, 28)) - lab(crop, slice(22, 28))  # the mask 0.56-0.97 here
    assert 30.0 <= at_fade[0] <= 48.5
    assert np.all(at_fade[1:] <= -7.0)  # greyer, as the original is...
    assert np.all(at_fade[1:] >= (lab(original, slice(22, 28)) - lab(crop, slice(22, 28)))[1:] - 0.5)  # ...not past it
    further_in = lab(out, slice(40, 46)) - lab(crop, slice(40, 46))  # 10-16 rows inside the fade's end
    assert 0.0 < further_in[0] <= 12.5 and np.all(np.abs(further_in[1:]) <= 8.5)


def test_dark_hair_over_the_edge_is_not_read_as_lighting():
    crop, original = pictures((30, 45, 70))  # dark brown hair down to the brows
    out = edge_lighting(crop, original, FRAME_TO_CROP, face_mask(), IDENTITY)
    assert np.array_equal(out, crop)


def test_the_change_passes_through_the_colour_transfer():
    """The crop is changed before its colour transfer (the composite applies that): the change is the
    difference divided by the transfer's gains, so that the transfer makes it the difference again.
    Here the transfer spreads the chroma 1.5 times about the skin's own colour (which it keeps)."""
    crop, original = pictures((215, 222, 228))
    mask = face_mask()
    plain = edge_lighting(crop, original, FRAME_TO_CROP, mask, IDENTITY)
    skin_chroma = cv2.cvtColor(crop[:1, :1], cv2.COLOR_BGR2LAB)[0, 0, 1:].astype(np.float32) - 128.0
    spread = ColorTransfer(np.array([1.0, 1.5, 1.5], np.float32), np.array([0.0, *(-0.5 * skin_chroma)], np.float32))
    assert np.abs(spread.apply(crop).astype(int) - crop).max() <= 1
    shown = spread.apply(edge_lighting(crop, original, FRAME_TO_CROP, mask, spread))
    assert np.abs(lab(shown, slice(22, 30)) - lab(plain, slice(22, 30))).max() <= 1.5  # 8-bit rounding


def test_nothing_changes_without_a_fade_above_the_brows():
    crop, original = pictures((215, 222, 228))
    mask = np.zeros((SIZE, SIZE), np.float32)
    mask[60:120, 20:108] = 1.0  # a hard-edged mask from the eyes down
    assert edge_lighting(crop, original, FRAME_TO_CROP, mask, IDENTITY) is crop
    assert edge_lighting(crop, original, FRAME_TO_CROP, np.zeros_like(mask), IDENTITY) is crop
