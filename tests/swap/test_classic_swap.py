"""The classic (model-free) swap on the real sample portraits.

Checked by eye on debug renders: Grace Hopper's face (with her glasses) on the
astronaut, and the astronaut's smile under Grace Hopper's cap, both blend into
the target's skin tone with no visible seam or rectangle.
"""

import json

import cv2
import numpy as np
import pytest

from facecache.analysis.align import alignment_matrix, transform_points, warp_face
from facecache.store.records import Face
from facecache.swap.classic import ClassicSettings, ClassicSwapper
from facecache.swap.composite import CompositeParams, crop_mask, overlay, paste_back
from facecache.swap.errors import SwapInputError
from facecache.swap.face_region import with_forehead

from portrait_faces import portrait_face

pytestmark = pytest.mark.index

PAIRS = [("grace_hopper", "astronaut"), ("astronaut", "grace_hopper")]


def swap(portraits, source, target, settings=ClassicSettings(), target_face=None):
    swapper = ClassicSwapper(settings)
    prepared = swapper.prepare_source(portraits[source], portrait_face(source))
    return swapper.swap(portraits[target], target_face or portrait_face(target), prepared)


def detail(frame, face):
    """Zero-mean, unit-spread fine detail of the aligned eyes-nose-mouth area (lighting removed)."""
    crop, _ = warp_face(frame, face.kps5, "arcface_112_v2", 112)
    grey = cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY).astype(np.float64)[40:100, 25:87]
    grey -= cv2.GaussianBlur(grey, (0, 0), 6)
    return (grey - grey.mean()) / grey.std()


def similarity(a, b):
    return float((a * b).mean())


@pytest.mark.parametrize("source, target", PAIRS)
def test_result_is_an_aligned_crop_with_a_soft_face_mask(portraits, source, target):
    result = swap(portraits, source, target)
    side = result.size
    assert result.crop.shape == (side, side, 3) and result.mask.shape == (side, side)
    assert np.allclose(result.matrix, alignment_matrix(portrait_face(target).kps5, "arcface_128", side), atol=1e-4)
    mask = result.mask
    assert 0.15 < (mask > 0).mean() < 0.4  # the face, not the whole crop
    assert (mask == 1.0).mean() > 0.08
    assert ((mask > 0) & (mask < 1)).mean() > 0.05  # a real fade, ~8 % of the crop wide
    edge = side // 12
    assert mask[:, :edge].max() == 0 and mask[:, -edge:].max() == 0 and mask[-edge // 2:].max() == 0  # no ears, no neck


def test_the_crop_is_as_large_as_the_target_face_but_no_larger_than_the_source(portraits):
    swapper = ClassicSwapper()
    hopper = swapper.prepare_source(portraits["grace_hopper"], portrait_face("grace_hopper"))
    # the astronaut's face (43 px between the eyes) is smaller than Grace Hopper's (85 px): its own size
    small = swapper.crop_side(portrait_face("astronaut").kps5, hopper)
    assert small == 160  # 128 * 43.4 / 35.2 (the template's eye distance), rounded up to 16
    # enlarged three times, the target outgrows the source: the crop stops at the source's size
    big = swapper.crop_side(portrait_face("astronaut").kps5 * 3, hopper)
    assert big == swapper.crop_side(portrait_face("grace_hopper").kps5, hopper) == 288  # 287.4 rounded up
    # and a huge source onto a huge face is capped (bytes in the cache)
    huge = swapper.prepare_source(cv2.resize(portraits["grace_hopper"], None, fx=4, fy=4),
                                  Face(box=portrait_face("grace_hopper").box * 4, score=1.0,
                                       kps5=portrait_face("grace_hopper").kps5 * 4))
    assert swapper.crop_side(portrait_face("grace_hopper").kps5 * 4, huge) == ClassicSettings().max_crop == 512
    result = swapper.swap(cv2.resize(portraits["astronaut"], None, fx=3, fy=3), Face(
        box=portrait_face("astronaut").box * 3, score=1.0, kps5=portrait_face("astronaut").kps5 * 3), hopper)
    assert result.size == 288


@pytest.mark.parametrize("source, target", PAIRS)
def test_swapped_frame_changes_only_the_face(portraits, source, target):
    frame = portraits[target]
    result = swap(portraits, source, target)
    params = CompositeParams()
    out = paste_back(frame, [result], params)
    # equal wherever the blend mask is zero
    m = cv2.warpAffine(crop_mask(result, params), result.matrix.astype(np.float64), (frame.shape[1], frame.shape[0]),
                       flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP, borderValue=0)
    assert np.array_equal(out[m == 0], frame[m == 0])
    # and everywhere outside the detected face box
    x1, y1, x2, y2 = portrait_face(target).box
    outside = np.ones(frame.shape[:2], bool)
    outside[int(y1):int(np.ceil(y2)), int(x1):int(np.ceil(x2))] = False
    assert np.array_equal(out[outside], frame[outside])
    # clearly different in the middle of the face
    w, h = x2 - x1, y2 - y1
    middle = (slice(int(y1 + 0.3 * h), int(y1 + 0.75 * h)), slice(int(x1 + 0.3 * w), int(x1 + 0.7 * w)))
    assert np.abs(out[middle].astype(int) - frame[middle]).max(axis=2).mean() > 20


@pytest.mark.parametrize("source, target", PAIRS)
def test_the_new_face_is_the_sources_and_not_a_pasted_rectangle(portraits, source, target):
    frame = portraits[target]
    out = paste_back(frame, [swap(portraits, source, target)], CompositeParams())
    face = portrait_face(target)
    result_detail, source_detail = detail(out, face), detail(portraits[source], portrait_face(source))
    target_detail = detail(frame, face)
    assert similarity(result_detail, source_detail) > 0.75
    assert similarity(result_detail, source_detail) > similarity(result_detail, target_detail) + 0.25
    # the changed area is rounded (an ellipse fills ~79 % of its box, a rectangle 100 %)
    changed = np.any(out != frame, axis=2)
    ys, xs = np.nonzero(changed)
    fill = changed.sum() / ((xs.max() - xs.min() + 1) * (ys.max() - ys.min() + 1))
    assert 0.6 < fill < 0.9
    # and its edge fades in over several pixels
    alpha = overlay(frame, [swap(portraits, source, target)], CompositeParams())[..., 3]
    assert np.count_nonzero((alpha > 0) & (alpha < 255)) > 0.2 * np.count_nonzero(alpha == 255)


def test_skin_tone_is_matched_to_the_target_by_the_one_colour_setting(portraits):
    frame = portraits["astronaut"]
    result = swap(portraits, "grace_hopper", "astronaut")
    inside = cv2.warpAffine((result.mask > 0.5).astype(np.uint8), result.matrix.astype(np.float64),
                            (frame.shape[1], frame.shape[0]), flags=cv2.INTER_NEAREST | cv2.WARP_INVERSE_MAP) > 0

    def mean_lab(image):
        return cv2.cvtColor(image, cv2.COLOR_BGR2LAB)[inside].astype(float).mean(axis=0)

    matched = paste_back(frame, [result], CompositeParams(color_match=1.0))
    raw = paste_back(frame, [result], CompositeParams(color_match=0.0))
    assert np.abs(mean_lab(matched) - mean_lab(frame)).max() < 3
    assert np.abs(mean_lab(raw) - mean_lab(frame)).max() > 5
    assert np.array_equal(raw[inside], np.clip(paste_back(frame, [result], CompositeParams(color_match=0.0))[inside], 0, 255))


def test_seamless_blending_also_keeps_the_outside(portraits):
    frame = portraits["astronaut"]
    result = swap(portraits, "grace_hopper", "astronaut", ClassicSettings(seamless=True))
    out = paste_back(frame, [result], CompositeParams())
    x1, y1, x2, y2 = portrait_face("astronaut").box
    assert np.array_equal(out[:int(y1)], frame[:int(y1)]) and np.array_equal(out[int(np.ceil(y2)):], frame[int(np.ceil(y2)):])
    assert similarity(detail(out, portrait_face("astronaut")), detail(portraits["grace_hopper"], portrait_face("grace_hopper"))) > 0.7


def synthetic_68(face: Face) -> np.ndarray:
    """68 points whose hull is a jaw line and brows around the face (only the hull matters here)."""
    k = face.kps5.astype(np.float64)
    eyes, mouth = k[:2].mean(axis=0), k[3:].mean(axis=0)
    half_width, drop = 0.75 * np.linalg.norm(k[1] - k[0]), np.linalg.norm(mouth - eyes)
    angles = np.linspace(0, np.pi, 17)
    jaw = np.stack([eyes[0] - half_width * np.cos(angles), eyes[1] + 1.5 * drop * np.sin(angles)], axis=1)
    brows = np.stack([np.linspace(k[0, 0] - 0.3 * half_width, k[1, 0] + 0.3 * half_width, 10),
                      np.full(10, eyes[1] - 0.35 * drop)], axis=1)
    rest = np.repeat(k, 9, axis=0)[:41]
    return np.concatenate([jaw, brows, rest]).astype(np.float32)


def test_68_landmarks_shape_the_mask_when_present(portraits):
    target = portrait_face("astronaut")
    with_68 = Face(box=target.box, score=target.score, kps5=target.kps5, landmarks68=synthetic_68(target))
    result = swap(portraits, "grace_hopper", "astronaut", target_face=with_68)
    plain = swap(portraits, "grace_hopper", "astronaut")
    hull = transform_points(with_forehead(with_68.landmarks68), result.matrix)  # jaw to forehead
    inside = np.zeros((result.size, result.size), np.uint8)
    cv2.fillConvexPoly(inside, cv2.convexHull(np.round(hull).astype(np.int32)), 1)
    grown = cv2.dilate(inside, np.ones((3, 3), np.uint8))
    assert result.mask[grown == 0].max() == 0
    assert not np.array_equal(result.mask, plain.mask)


def test_settings_describe_and_validate():
    described = ClassicSwapper().describe()
    assert described["swapper"] == "classic" and described["version"] == 15 and described["template"] == "arcface_128"
    assert (described["min_crop"], described["max_crop"]) == (128, 512) and "color_match" not in described
    assert json.loads(json.dumps(described)) == described
    assert ClassicSwapper(ClassicSettings(seamless=True)).describe() != described
    for bad in (dict(min_crop=8), dict(min_crop=256, max_crop=128), dict(template="nope"), dict(feather=0.9)):
        with pytest.raises(ValueError):
            ClassicSettings(**bad)


def test_faces_without_key_points(portraits):
    swapper = ClassicSwapper()
    with pytest.raises(SwapInputError, match="kps5"):
        swapper.prepare_source(portraits["grace_hopper"], object())
    prepared = swapper.prepare_source(portraits["grace_hopper"], portrait_face("grace_hopper"))
    with pytest.raises(SwapInputError, match="kps5"):
        swapper.swap(portraits["astronaut"], object(), prepared)


@pytest.mark.parametrize("seamless", [False, True])
def test_swapping_a_face_onto_itself_changes_almost_nothing(portraits, seamless):
    frame = portraits["astronaut"]
    face = portrait_face("astronaut")
    swapper = ClassicSwapper(ClassicSettings(seamless=seamless))
    result = swapper.swap(frame, face, swapper.prepare_source(frame, face))
    target_crop = cv2.warpAffine(frame, result.matrix.astype(np.float64), (result.size, result.size),
                                 flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_REPLICATE)  # as the swap samples
    inside = result.mask > 0
    assert np.abs(result.crop[inside].astype(int) - target_crop[inside]).mean() < 1.5
    out = paste_back(frame, [result], CompositeParams())
    assert np.abs(out.astype(int) - frame).max(axis=2).mean() < 0.2
