"""A source's wide-open mouth onto a closed one (`swap.mouth_folds`): the folds below the mouth are the
target's own, in the swapped face's colours; on laid-out faces, and on a real photograph through the classic
swap."""

import cv2
import numpy as np
import pytest

from facecache.pipeline import Parts, Settings, build_analyzer
from facecache.swap import classic
from facecache.swap.classic import ClassicSwapper
from facecache.swap.mouth_folds import opening, with_own_mouth_folds
from facecache.swap.piecewise import layout_68

SIZE = 160
KPS5 = np.array([[56.0, 64.0], [104.0, 64.0], [80.0, 92.0], [62.0, 116.0], [98.0, 116.0]])


def _faces():
    """(crop, original, the target's 68 points with a closed mouth): the swapped face brown with a light crease
    from the mouth's image-right corner down towards the jaw, the target pale and smooth."""
    target = layout_68(KPS5, mouth_open=0.0)
    original = np.full((SIZE, SIZE, 3), (150, 170, 200), np.uint8)
    crop = np.full((SIZE, SIZE, 3), (70, 100, 140), np.uint8)
    corner = target[54]
    cv2.line(crop, tuple(np.round(corner + (-2, 8)).astype(int)), tuple(np.round(corner + (-6, 20)).astype(int)),
             (130, 160, 200), 2)
    return crop, original, target


def _crease(image, target):
    """The crease's contrast: the brightest pixel over the median, 3 pixels around its lower half (its
    ends lie where the target's folds fade in: at the lips and the jaw)."""
    x, y = np.round(target[54] + (-5, 17)).astype(int)
    patch = image[y - 3:y + 4, x - 3:x + 4].astype(np.float32).sum(axis=2)
    return float(patch.max() - np.median(patch))


def test_the_opening_is_the_inner_lips_gap_in_eye_distances():
    assert opening(layout_68(KPS5, mouth_open=0.3)) == pytest.approx(0.3, abs=0.01)
    assert opening(layout_68(KPS5, mouth_open=0.0)) < 0.01


def test_a_wide_open_source_mouth_leaves_the_targets_own_folds_in_the_swapped_colours():
    crop, original, target = _faces()
    out = with_own_mouth_folds(crop, original, target, layout_68(KPS5, mouth_open=0.35))
    assert _crease(crop, target) > 150 and _crease(out, target) < 0.1 * _crease(crop, target)
    chin = np.s_[int(target[57, 1]) + 8:int(target[8, 1]) - 8, int(target[57, 0]) - 4:int(target[57, 0]) + 4]
    assert np.abs(out[chin].astype(int) - (70, 100, 140)).max() <= 3  # the swapped face's colour, not the target's
    lips = cv2.fillConvexPoly(np.zeros((SIZE, SIZE), np.uint8),
                              cv2.convexHull(np.round(target[48:60]).astype(np.int32)), 1)
    assert np.array_equal(out[lips > 0], crop[lips > 0])  # the lips stay the source's
    above = int(target[[3, 13, 48, 54], 1].min())  # and everything above the mouth's corners and the jaw beside them
    assert np.array_equal(out[:above], crop[:above])


@pytest.mark.parametrize("source_open, target_open", [(0.05, 0.0), (0.16, 0.02), (0.35, 0.3)])
def test_a_smile_or_a_source_mouth_no_wider_open_than_the_targets_changes_nothing(source_open, target_open):
    crop, original, _ = _faces()
    out = with_own_mouth_folds(crop, original, layout_68(KPS5, mouth_open=target_open),
                               layout_68(KPS5, mouth_open=source_open))
    assert out is crop


def _lower_face_structure(picture, face):
    """The fine structure below the mouth's corners (lips left out): the 99th percentile of a band-pass of L*,
    at 1.5-6 % of the eyes' distance. Not a measure the swap uses."""
    points = face.landmarks68
    eyes = float(np.linalg.norm(points[36:42].mean(axis=0) - points[42:48].mean(axis=0)))
    region = cv2.fillConvexPoly(np.zeros(picture.shape[:2], np.uint8),
                                cv2.convexHull(np.round(points[np.r_[3:14, 48, 54]]).astype(np.int32)), 1)
    region = cv2.erode(region, np.ones((3, 3), np.uint8), iterations=max(1, int(0.08 * eyes)))
    lips = cv2.fillConvexPoly(np.zeros_like(region), cv2.convexHull(np.round(points[48:60]).astype(np.int32)), 1)
    lips = cv2.dilate(lips, np.ones((3, 3), np.uint8), iterations=max(1, int(0.06 * eyes)))
    lightness = cv2.cvtColor(picture, cv2.COLOR_BGR2LAB)[..., 0].astype(np.float32)
    band = cv2.GaussianBlur(lightness, (0, 0), 0.015 * eyes) - cv2.GaussianBlur(lightness, (0, 0), 0.06 * eyes)
    return float(np.percentile(np.abs(band[(region > 0) & (lips == 0)]), 99))


@pytest.mark.index
def test_obamas_open_mouth_onto_biden_leaves_no_crease(identity_photos, default_models_dir, tmp_path, monkeypatch):
    """Obama speaking, his mouth wide open, onto Biden's closed mouth: the fine structure below the mouth is
    Biden's own, not Obama's folds squeezed (measured: 1.88 times Biden's own without, 0.98 with)."""
    from facecache.swap.composite import paste_back

    settings = Settings(cache_dir=str(tmp_path), models_dir=str(default_models_dir), providers="cpu")
    analyzer = build_analyzer(settings, Parts())
    source, target = identity_photos["obama"], identity_photos["biden"]
    source_face, target_face = (analyzer.analyze_frame(image).faces[0] for image in (source, target))
    swapper = ClassicSwapper()
    prepared = swapper.prepare_source(source, source_face)
    kept = paste_back(target, [swapper.swap(target, target_face, prepared)])
    monkeypatch.setattr(classic, "with_own_mouth_folds", lambda crop, *_: crop)
    squeezed = paste_back(target, [swapper.swap(target, target_face, prepared)])
    own = _lower_face_structure(target, target_face)
    assert _lower_face_structure(squeezed, target_face) > 1.5 * own
    assert _lower_face_structure(kept, target_face) < 1.2 * own
