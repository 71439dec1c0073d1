"""A source turned the other way from the target is read mirrored (swap/far_side.py)."""

import cv2
import numpy as np
import pytest

from facecache.swap.face_region import with_forehead
from facecache.swap.far_side import flip_amount, half_widths, mirrored

from portrait_faces import synthetic_68

KPS5 = [[80, 100], [176, 100], [128, 150], [90, 190], [166, 190]]


def turned(points, squeeze):
    """``points`` of a face turned aside: its image-right half narrowed by ``squeeze`` (0..1) and
    its image-left half widened as much (a negative ``squeeze`` turns it the other way)."""
    points = np.array(points, np.float64)
    middle = points[27:31, 0].mean()
    offset = points[:, 0] - middle
    points[:, 0] = middle + offset * np.where(offset > 0, 1.0 - squeeze, 1.0 + squeeze)
    return points


def test_mirrored_points_are_the_same_landmarks_of_the_face_seen_in_a_mirror():
    face = turned(with_forehead(synthetic_68(KPS5)), 0.4)
    flipped = mirrored(face, 256)
    assert np.allclose(mirrored(flipped, 256), face)
    # the image-left eye's outer corner (36) is the flipped image-right eye's outer corner (45)
    assert np.allclose(flipped[36], [255 - face[45][0], face[45][1]])
    assert np.allclose(flipped[8], [255 - face[8][0], face[8][1]])  # the chin stays the chin
    assert half_widths(flipped) == pytest.approx(half_widths(face)[::-1])


def test_only_a_source_turned_the_other_way_is_mirrored():
    frontal = with_forehead(synthetic_68(KPS5))
    one_way, other_way = turned(frontal, 0.5), turned(frontal, -0.5)
    assert flip_amount(one_way, other_way) == pytest.approx(1.0)
    assert flip_amount(one_way, one_way) == 0.0
    assert flip_amount(frontal, other_way) == 0.0  # a frontal source looks the same mirrored
    assert flip_amount(one_way, frontal) == 0.0  # mirrored, its far side would stretch as much
    assert flip_amount(turned(frontal, 0.05), turned(frontal, -0.05)) == 0.0  # barely turned: left as it is


@pytest.mark.index
def test_a_face_swapped_onto_its_own_mirror_image_comes_out_as_that_image(default_models_dir, portrait_paths,
                                                                           monkeypatch, tmp_path):
    """The 112-pixel portrait (its head turned 18 degrees) onto its own mirror image: read
    mirrored, the warp has next to nothing to move and the result is the target's own face; read
    as it is, the far cheek is stretched across the near one (streaks) and everything moves."""
    from facecache.analysis.align import warp
    from facecache.analysis.analyzer import FaceAnalyzer
    from facecache.analysis.factory import build_model_set
    from facecache.models.runtime import SessionFactory
    from facecache.models.store import ModelStore
    from facecache.samples import sample_image
    from facecache.store.cache import FaceCache
    from facecache.swap import classic

    analyzer = FaceAnalyzer(FaceCache(tmp_path / "cache"), build_model_set(ModelStore(default_models_dir),
                                                                           SessionFactory("cpu")))
    source = cv2.imread(str(sample_image("portrait_112", portrait_paths["grace_hopper"].parent)))
    source = cv2.resize(source, None, fx=3, fy=3, interpolation=cv2.INTER_CUBIC)
    target = cv2.flip(source, 1)
    [source_face], [target_face] = analyzer.analyze_frame(source).faces, analyzer.analyze_frame(target).faces
    swapper = classic.ClassicSwapper()
    prepared = swapper.prepare_source(source, source_face)

    def difference():  # mean grey-level difference from the target's own face, where the face is swapped
        result = swapper.swap(target, target_face, prepared)
        inside = result.mask > 0.9
        return np.abs(result.crop.astype(int) - warp(target, result.matrix, result.size))[inside].mean()

    mirrored_reading = difference()
    monkeypatch.setattr(classic, "flip_amount", lambda source, target: 0.0)
    assert mirrored_reading < 15 and difference() > 3 * mirrored_reading
