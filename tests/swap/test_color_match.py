import cv2
import numpy as np
import pytest

from facecache.swap.color import match_color


def lab_stats(image, weights):
    lab = cv2.cvtColor(image.astype(np.float32) / 255, cv2.COLOR_BGR2LAB).reshape(-1, 3)
    w = weights.reshape(-1)
    mean = (lab * w[:, None]).sum(0) / w.sum()
    std = np.sqrt((((lab - mean) ** 2) * w[:, None]).sum(0) / w.sum())
    return mean, std


@pytest.fixture
def images():
    rng = np.random.default_rng(3)
    base = cv2.GaussianBlur(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8), (7, 7), 0)
    bluish = np.clip(base.astype(np.int16) * [1.0, 0.6, 0.5] + [60, 10, 0], 0, 255).astype(np.uint8)
    warm = np.clip(base.astype(np.int16) * [0.5, 0.8, 1.0] + [0, 30, 70], 0, 255).astype(np.uint8)
    mask = np.zeros((64, 64), np.float32)
    mask[16:48, 16:48] = 1.0
    return bluish, warm, mask


def test_full_strength_moves_the_masked_statistics_onto_the_reference(images):
    image, reference, mask = images
    matched = match_color(image, reference, mask, 1.0)
    mean, std = lab_stats(matched, mask)
    ref_mean, ref_std = lab_stats(reference, mask)
    before, _ = lab_stats(image, mask)
    assert np.abs(before - ref_mean).max() > 10
    assert np.allclose(mean, ref_mean, atol=1.0)
    assert np.allclose(std, ref_std, rtol=0.1, atol=0.5)


def test_strength_blends_between_untouched_and_matched(images):
    image, reference, mask = images
    assert match_color(image, reference, mask, 0.0) is image
    half = lab_stats(match_color(image, reference, mask, 0.5), mask)[0]
    start, end = lab_stats(image, mask)[0], lab_stats(reference, mask)[0]
    assert np.allclose(half, (start + end) / 2, atol=1.0)


def test_empty_mask_and_bad_arguments(images):
    image, reference, mask = images
    assert match_color(image, reference, np.zeros_like(mask), 1.0) is image
    with pytest.raises(ValueError, match="0..1"):
        match_color(image, reference, mask, 1.5)
    with pytest.raises(ValueError, match="one size"):
        match_color(image, reference[:32], mask, 1.0)
    with pytest.raises(ValueError, match="mask"):
        match_color(image, reference, mask[:32], 1.0)


def test_flat_source_does_not_explode(images):
    _, reference, mask = images
    flat = np.full((64, 64, 3), 128, np.uint8)
    matched = match_color(flat, reference, mask, 1.0)
    assert matched.dtype == np.uint8 and len(np.unique(matched.reshape(-1, 3), axis=0)) == 1
