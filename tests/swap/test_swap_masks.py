import numpy as np
import pytest

from facecache.swap.face_region import outline, outline_from_kps5, with_forehead
from facecache.swap.masks import box_mask, combine_masks, polygon_mask

FRONTAL_KPS = np.array([[90.0, 100.0], [166.0, 100.0], [128.0, 140.0], [96.0, 185.0], [160.0, 185.0]])


def test_box_mask_is_zero_at_the_edges_one_inside_and_feathered_between():
    mask = box_mask(256, blur=0.3)
    assert mask.shape == (256, 256) and mask.dtype == np.float32
    assert mask[0].max() == 0 and mask[-1].max() == 0 and mask[:, 0].max() == 0 and mask[:, -1].max() == 0
    assert mask[128, 128] == 1.0
    row = mask[128]
    fade = row[:128]
    assert np.all(np.diff(fade) >= 0)  # rises monotonically from the edge
    intermediate = np.count_nonzero((fade > 0) & (fade < 1))
    # 0.3 * 256 / 2 = 38.4 px of fade, not a hard step
    assert 36 <= intermediate <= 39
    assert np.array_equal(row, row[::-1]) and np.array_equal(mask, mask.T)


def test_box_mask_fade_scales_with_the_crop_size():
    small, large = box_mask(128, 0.3), box_mask(512, 0.3)
    fade_small = np.count_nonzero(small[64] < 1) / 2
    fade_large = np.count_nonzero(large[256] < 1) / 2
    assert fade_large == pytest.approx(4 * fade_small, abs=4)


def test_box_mask_padding_and_hard_edges():
    mask = box_mask(100, blur=0.0, padding=(10, 0, 20, 5))
    assert np.all(mask[:10] == 0) and np.all(mask[80:] == 0) and np.all(mask[:, :5] == 0)
    assert np.all(mask[10:80, 5:] == 1)
    padded = box_mask(100, blur=0.2, padding=(50, 0, 0, 0))
    assert np.all(padded[:50] == 0) and padded[50].max() == 0 and padded[75, 50] == 1.0


@pytest.mark.parametrize("kwargs", [dict(blur=-0.1), dict(blur=1.5), dict(padding=(0, 0, 0)),
                                    dict(padding=(60, 0, 40, 0)), dict(padding=(0, 0, -1, 0))])
def test_box_mask_refuses_bad_settings(kwargs):
    with pytest.raises(ValueError):
        box_mask(64, **kwargs)


def test_masks_combine_by_minimum():
    a = np.linspace(0, 1, 16, dtype=np.float32).reshape(4, 4)
    b = a[::-1].copy()
    combined = combine_masks([a, None, b])
    assert np.array_equal(combined, np.minimum(a, b))
    assert np.array_equal(combine_masks([a]), a)
    with pytest.raises(ValueError):
        combine_masks([a, np.zeros((2, 2), np.float32)])
    with pytest.raises(ValueError):
        combine_masks([None])


def test_polygon_mask_is_zero_outside_and_fades_inwards():
    square = np.array([[20, 20], [80, 20], [80, 80], [20, 80]], dtype=np.float64)
    mask = polygon_mask(square, 100, feather=10)
    assert mask[:19].max() == 0 and mask[82:].max() == 0 and mask[:, :19].max() == 0 and mask[:, 82:].max() == 0
    assert mask[50, 50] == 1.0
    row = mask[50, 15:51]
    assert np.all(np.diff(row) >= 0)
    assert np.count_nonzero((row > 0) & (row < 1)) >= 8


def test_kps5_outline_covers_the_features_and_follows_the_face():
    points = outline_from_kps5(FRONTAL_KPS)
    mask = polygon_mask(points, 256, feather=8)
    for x, y in FRONTAL_KPS:
        assert mask[int(y), int(x)] == 1.0  # eyes, nose and mouth well inside
    ys, xs = np.nonzero(mask)
    interocular = 76.0
    # brows and chin inside; no more than about a face wide
    assert ys.min() < 100 - 0.4 * interocular and ys.max() > 185 + 0.3 * interocular
    assert xs.max() - xs.min() < 2.0 * interocular
    # turning the key points turns the outline the same way
    angle = np.deg2rad(30)
    rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    centre = np.array([128.0, 128.0])
    turned = outline_from_kps5((FRONTAL_KPS - centre) @ rotation.T + centre)
    assert np.allclose(turned, (points - centre) @ rotation.T + centre, atol=1e-6)


def test_kps5_outline_narrows_the_side_a_turned_head_hides():
    turned = FRONTAL_KPS.copy()
    turned[2, 0] += 20  # nose towards image-right: head turned, right side foreshortened
    points = outline_from_kps5(turned)
    centre_x = FRONTAL_KPS[:2, 0].mean()
    assert centre_x - points[:, 0].min() > points[:, 0].max() - centre_x


def test_outline_prefers_68_landmarks_when_usable():
    landmarks = np.random.default_rng(0).uniform(50, 200, (68, 2))
    assert np.array_equal(outline(FRONTAL_KPS, landmarks), with_forehead(landmarks))  # jaw to forehead
    assert outline(FRONTAL_KPS, landmarks).shape == (78, 2)
    assert outline(FRONTAL_KPS, None).shape == outline_from_kps5(FRONTAL_KPS).shape
    broken = landmarks.copy()
    broken[3] = np.nan
    assert np.array_equal(outline(FRONTAL_KPS, broken), outline_from_kps5(FRONTAL_KPS))
