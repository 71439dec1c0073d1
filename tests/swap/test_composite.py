import json

import cv2
import numpy as np
import pytest

from facecache.swap.composite import CompositeParams, crop_mask, overlay, overlay_patches, paste_back
from facecache.swap.result import SwapResult

S = 128
COLOUR = (30, 200, 90)


def plain(**settings):
    """Blend settings without the colour match, so the crop's own colours show."""
    return CompositeParams(**{"color_match": 0.0, **settings})


def similarity(scale, angle_deg, tx, ty):
    a = np.deg2rad(angle_deg)
    return np.array([[scale * np.cos(a), -scale * np.sin(a), tx], [scale * np.sin(a), scale * np.cos(a), ty]])


def flat_result(matrix, colour=COLOUR, mask=None):
    return SwapResult(np.full((S, S, 3), colour, np.uint8), matrix, mask)


def frame_mask(result, params, shape):
    """The blend mask warped over the whole frame (independently of paste_back's regions)."""
    return cv2.warpAffine(crop_mask(result, params), result.matrix.astype(np.float64), (shape[1], shape[0]),
                          flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP, borderMode=cv2.BORDER_CONSTANT, borderValue=0)


def crop_coordinates(matrix, shape):
    ys, xs = np.mgrid[0:shape[0], 0:shape[1]].astype(np.float64)
    return matrix[0, 0] * xs + matrix[0, 1] * ys + matrix[0, 2], matrix[1, 0] * xs + matrix[1, 1] * ys + matrix[1, 2]


MATRICES = {
    "upright": similarity(0.5, 0, -100, -50),        # crop covers frame x 200..456, y 100..356
    "turned": similarity(0.6, 25, -150, -20),
}


@pytest.mark.parametrize("name", MATRICES)
def test_pixels_outside_the_mask_are_exactly_the_original(noise_frame, name):
    result = flat_result(MATRICES[name])
    params = plain()
    before = noise_frame.copy()
    out = paste_back(noise_frame, [result], params)
    assert np.array_equal(noise_frame, before)  # the input frame is never written
    m = frame_mask(result, params, noise_frame.shape)
    assert np.array_equal(out[m == 0], noise_frame[m == 0])
    u, v = crop_coordinates(result.matrix.astype(np.float64), noise_frame.shape)
    outside = (u < -1) | (u > S) | (v < -1) | (v > S)
    assert outside.sum() > 0.5 * outside.size and np.array_equal(out[outside], noise_frame[outside])
    # fully inside the mask: the crop exactly
    assert (m == 1).sum() > 1000 and np.all(out[m == 1] == COLOUR)
    # between: a blend of the two
    between = (m > 0.2) & (m < 0.8)
    assert between.sum() > 500
    expected = np.rint(noise_frame[between] * (1 - m[between, None]) + np.array(COLOUR) * m[between, None])
    assert np.abs(out[between].astype(int) - expected).max() <= 1


def test_the_edge_is_feathered_not_a_hard_rectangle(noise_frame):
    result = flat_result(MATRICES["upright"])
    bgra = overlay(noise_frame, [result], plain(mask_blur=0.3))
    alpha = bgra[..., 3]
    row = alpha[228, 150:330]  # a row through the face's middle, crossing its left edge
    rising = row[row > 0][:40]
    assert np.all(np.diff(rising.astype(int)) >= 0)
    assert np.count_nonzero((row > 0) & (row < 255)) >= 15  # ~19 px of fade at 0.5 px per crop px
    hard = overlay(noise_frame, [result], plain(mask_blur=0.0))[..., 3]
    assert np.count_nonzero((hard > 0) & (hard < 255)) < np.count_nonzero((alpha > 0) & (alpha < 255)) / 10


def test_overlay_laid_over_the_frame_gives_paste_back(noise_frame):
    results = [flat_result(MATRICES["upright"]), flat_result(MATRICES["turned"], colour=(250, 10, 10))]
    params = plain(mask_blur=0.4, opacity=0.8)
    out = paste_back(noise_frame, results, params)
    bgra = overlay(noise_frame, results, params)
    assert bgra.shape == (480, 640, 4) and bgra.dtype == np.uint8
    assert np.all(bgra[bgra[..., 3] == 0][:, :3] == 0)  # nothing but zeros where transparent
    a = bgra[..., 3:].astype(np.float64) / 255
    over = np.rint(noise_frame * (1 - a) + bgra[..., :3] * a)
    assert np.abs(over - out).max() <= 2
    assert np.array_equal(out[bgra[..., 3] == 0], noise_frame[bgra[..., 3] == 0])


def test_overlay_patch_is_the_overlay_cut_to_the_faces(noise_frame):
    results = [flat_result(MATRICES["upright"])]
    ((x, y, patch),) = overlay_patches(noise_frame, results, plain())
    full = overlay(noise_frame, results, plain())
    assert np.array_equal(full[y:y + patch.shape[0], x:x + patch.shape[1]], patch)
    rest = full.copy()
    rest[y:y + patch.shape[0], x:x + patch.shape[1]] = 0
    assert not rest.any()
    assert 190 <= x <= 200 and 90 <= y <= 100 and patch.shape[0] <= 270 and patch.shape[1] <= 270


def test_separate_faces_give_separate_patches_and_overlapping_ones_one(noise_frame):
    left, right = flat_result(similarity(0.8, 0, -10, -60)), flat_result(similarity(0.8, 0, -420, -200))
    overlapping = flat_result(similarity(0.8, 10, -360, -180), colour=(250, 10, 10))
    params = plain(mask_blur=0.4, opacity=0.9)
    patches = overlay_patches(noise_frame, [left, right], params)
    assert len(patches) == 2  # 160 x 160 px each, 400 px apart: nothing between them is encoded
    assert sum(p.shape[0] * p.shape[1] for _, _, p in patches) < 0.3 * noise_frame.shape[0] * noise_frame.shape[1]
    assert len(overlay_patches(noise_frame, [left, right, overlapping], params)) == 2
    for results in ([left, right], [left, right, overlapping], [overlapping, right, left]):
        full = overlay(noise_frame, results, params)
        out = paste_back(noise_frame, results, params)
        a = full[..., 3:].astype(np.float64) / 255
        assert np.abs(np.rint(noise_frame * (1 - a) + full[..., :3] * a) - out).max() <= 2
        covered = np.zeros(noise_frame.shape[:2], int)
        for x, y, patch in overlay_patches(noise_frame, results, params):
            covered[y:y + patch.shape[0], x:x + patch.shape[1]] += 1
        assert covered.max() == 1 and not full[covered == 0].any()  # patches never overlap


def test_groups_composited_on_a_thread_pool_give_the_same_patches(noise_frame):
    from concurrent.futures import ThreadPoolExecutor

    left, right = flat_result(similarity(0.8, 0, -10, -60)), flat_result(similarity(0.8, 0, -420, -200))
    overlapping = flat_result(similarity(0.8, 10, -360, -180), colour=(250, 10, 10))
    params = plain(mask_blur=0.4, opacity=0.9)
    alone = overlay_patches(noise_frame, [left, overlapping, right], params)
    with ThreadPoolExecutor(2) as pool:
        pooled = overlay_patches(noise_frame, [left, overlapping, right], params, pool)
    assert len(alone) == len(pooled) == 2
    for (x, y, patch), (px, py, pooled_patch) in zip(alone, pooled):  # in the same order, byte for byte
        assert (x, y) == (px, py) and np.array_equal(patch, pooled_patch)


def test_groups_never_overlap_even_when_a_face_lies_inside_another_groups_box():
    from facecache.swap.composite import _overlapping_groups

    # A1 and A2 overlap and form an L whose box holds B, which touches neither of them.
    a1, a2, b = (None, None, (0, 0, 40, 200)), (None, None, (30, 160, 200, 200)), (None, None, (100, 20, 150, 80))
    c = (None, None, (300, 300, 340, 340))
    groups = _overlapping_groups([a1, b, a2, c])
    assert groups == [[a1, b, a2], [c]]  # list order kept inside a group


def test_later_faces_are_laid_over_earlier_ones(noise_frame):
    red, blue = flat_result(MATRICES["upright"], (1, 1, 254)), flat_result(MATRICES["upright"], (254, 1, 1))
    out = paste_back(noise_frame, [red, blue], plain())
    assert np.array_equal(out[228, 328], [254, 1, 1])
    assert np.array_equal(paste_back(noise_frame, [blue, red], plain())[228, 328], [1, 1, 254])


def test_opacity_and_padding(noise_frame):
    result = flat_result(MATRICES["upright"])
    assert np.array_equal(paste_back(noise_frame, [result], plain(opacity=0.0)), noise_frame)
    assert overlay_patches(noise_frame, [result], plain(opacity=0.0)) == []
    half = paste_back(noise_frame, [result], plain(opacity=0.5))
    centre = np.rint((noise_frame[228, 328].astype(float) + COLOUR) / 2)
    assert np.abs(half[228, 328] - centre).max() <= 1
    # top 50 % padded away: the upper half of the face region keeps the frame
    padded = paste_back(noise_frame, [result], plain(mask_padding=(50, 0, 0, 0)))
    assert np.array_equal(padded[:228], noise_frame[:228]) and not np.array_equal(padded[240:], noise_frame[240:])


def test_the_swappers_own_mask_combines_with_the_box_by_minimum(noise_frame):
    own = np.zeros((S, S), np.float32)
    own[:, : S // 2] = 1.0  # the swapper keeps only the crop's left half
    result = flat_result(MATRICES["upright"], mask=own)
    out = paste_back(noise_frame, [result], plain())
    assert np.all(out[228, 260:320] == COLOUR)
    assert np.array_equal(out[:, 330:], noise_frame[:, 330:])


def test_faces_cut_by_the_frame_edge(noise_frame):
    result = flat_result(similarity(0.5, 0, 30, -50))  # crop starts 60 px left of the frame
    out = paste_back(noise_frame, [result], plain())
    assert np.all(out[228, 5:150] == COLOUR)
    assert np.array_equal(out[:, 260:], noise_frame[:, 260:])
    off = flat_result(similarity(0.5, 0, 500, 500))  # entirely outside
    assert np.array_equal(paste_back(noise_frame, [off], plain()), noise_frame)
    assert not overlay(noise_frame, [off], plain()).any()


def test_color_match_moves_the_face_towards_the_frames_colours():
    frame = np.full((480, 640, 3), (40, 90, 180), np.uint8)
    result = flat_result(MATRICES["upright"], colour=(200, 200, 200))
    plain = paste_back(frame, [result], CompositeParams(color_match=0.0))[228, 328]
    matched = paste_back(frame, [result], CompositeParams(color_match=1.0))[228, 328]
    assert np.array_equal(plain, [200, 200, 200])
    assert np.abs(matched.astype(int) - [40, 90, 180]).max() <= 2


def test_params_validate_and_describe_stably():
    params = CompositeParams(mask_blur=0.1 + 0.2, mask_padding=[1, 2, 3, 4], color_match=0.5)
    same = CompositeParams(mask_blur=0.3, mask_padding=(1.0, 2.0, 3.0, 4.0), color_match=0.5)
    assert params.describe() == same.describe()
    assert json.loads(json.dumps(params.describe())) == params.describe()
    assert params.describe()["format"] == "composite/4"
    assert CompositeParams(opacity=0.9).describe() != CompositeParams().describe()
    assert CompositeParams().describe() == {"format": "composite/4", "mask_blur": 0.3, "mask_padding": [0.0] * 4,
                                            "color_match": 1.0, "opacity": 1.0}
    for bad in (dict(mask_blur=2), dict(opacity=-0.1), dict(color_match=1.1), dict(mask_padding=(0, 0, 0))):
        with pytest.raises(ValueError):
            CompositeParams(**bad)


def test_only_swap_results_and_bgr_frames_are_accepted(noise_frame):
    with pytest.raises(TypeError, match="SwapResult"):
        paste_back(noise_frame, [np.zeros((S, S, 3), np.uint8)], CompositeParams())
    with pytest.raises(ValueError, match="BGR"):
        paste_back(noise_frame[..., 0], [], CompositeParams())
    assert np.array_equal(paste_back(noise_frame, [], CompositeParams()), noise_frame)
