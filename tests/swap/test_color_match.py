from dataclasses import replace

import cv2
import numpy as np
import pytest

from facecache.swap import color
from facecache.swap.color import ColorTransfer, match_color


def lab_stats(image, weights):
    lab = cv2.cvtColor(image.astype(np.float32) / 255, cv2.COLOR_BGR2LAB).reshape(-1, 3)
    w = weights.reshape(-1)
    mean = (lab * w[:, None]).sum(0) / w.sum()
    std = np.sqrt((((lab - mean) ** 2) * w[:, None]).sum(0) / w.sum())
    return mean, std


def lab_of(image):
    """Float L*a*b* of a BGR uint8 image (L 0..100)."""
    return cv2.cvtColor(image.astype(np.float32) / 255, cv2.COLOR_BGR2LAB)


@pytest.fixture
def images():
    rng = np.random.default_rng(3)
    base = cv2.GaussianBlur(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8), (7, 7), 0)
    # Skin-bright pictures: dark pixels keep their own hue by design (see the test below).
    bluish = np.clip(base.astype(np.int16) * [0.6, 0.4, 0.3] + [150, 110, 90], 0, 255).astype(np.uint8)
    warm = np.clip(base.astype(np.int16) * [0.3, 0.5, 0.6] + [70, 120, 160], 0, 255).astype(np.uint8)
    mask = np.zeros((64, 64), np.float32)
    mask[16:48, 16:48] = 1.0
    return bluish, warm, mask


def face_like(skin_bgr, size=128, seed=5):
    """A smooth skin patch with fine texture, two dark pupils and a dark glasses rim."""
    rng = np.random.default_rng(seed)
    texture = cv2.GaussianBlur(rng.normal(0, 6, (size, size)), (0, 0), 0.8)
    shading = np.linspace(-15, 15, size)[None, :]
    image = np.clip(np.array(skin_bgr, float) + (texture + shading)[..., None], 0, 255)
    for x in (40, 88):
        cv2.circle(image, (x, 56), 6, (26, 34, 80), -1)  # the pupils of the issue: reddish-brown, dark
    cv2.rectangle(image, (20, 42), (108, 44), (18, 20, 24), -1)  # a black glasses rim
    mask = np.zeros((size, size), np.float32)
    cv2.ellipse(mask, (size // 2, size // 2), (50, 60), 0, 0, 360, 1.0, -1)
    return image.astype(np.uint8), mask


def test_full_strength_moves_the_masked_means_and_chroma_spread_onto_the_reference(images):
    image, reference, mask = images
    matched = match_color(image, reference, mask, 1.0)
    mean, std = lab_stats(matched, mask)
    ref_mean, ref_std = lab_stats(reference, mask)
    before, _ = lab_stats(image, mask)
    assert np.abs(before - ref_mean).max() > 10
    assert np.allclose(mean, ref_mean, atol=1.5)
    assert np.allclose(std[1:], ref_std[1:], rtol=0.15, atol=0.5)


def test_strength_blends_between_untouched_and_matched(images):
    image, reference, mask = images
    assert match_color(image, reference, mask, 0.0) is image
    half = lab_stats(match_color(image, reference, mask, 0.5), mask)[0]
    start, end = lab_stats(image, mask)[0], lab_stats(reference, mask)[0]
    assert np.allclose(half, (start + end) / 2, atol=1.5)


def test_empty_mask_and_bad_arguments(images):
    image, reference, mask = images
    assert match_color(image, reference, np.zeros_like(mask), 1.0) is image
    assert ColorTransfer.fit(image, reference, np.zeros_like(mask)) is None
    with pytest.raises(ValueError, match="0..1"):
        match_color(image, reference, mask, 1.5)
    with pytest.raises(ValueError, match="one size"):
        match_color(image, reference[:32], mask, 1.0)
    with pytest.raises(ValueError, match="mask"):
        match_color(image, reference, mask[:32], 1.0)
    with pytest.raises(ValueError, match="4, 3"):
        ColorTransfer.from_array(np.zeros((2, 3), np.float32))


def test_flat_source_does_not_explode(images):
    _, reference, mask = images
    flat = np.full((64, 64, 3), 128, np.uint8)
    matched = match_color(flat, reference, mask, 1.0)
    # no texture is made up: at most the reference's light direction, a gentle plane, is added
    def detail(image):
        return cv2.Laplacian(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).astype(np.float32), cv2.CV_32F).var()

    grey = cv2.cvtColor(matched, cv2.COLOR_BGR2GRAY).astype(np.float32)
    assert matched.dtype == np.uint8 and detail(matched) < 0.1 * detail(reference)  # rounding steps alone
    assert np.ptp(grey) < 20


def test_dark_features_keep_their_hue_and_no_channel_is_clipped():
    """The issue's case: a saturated reddish source onto a lighter, less red target turned pupils teal
    ([119, 93, 0]: red clipped to 0); now they stay dark reddish-brown and nothing new clips."""
    source, mask = face_like((80, 100, 210))         # ruddy skin
    target, _ = face_like((200, 190, 180), seed=6)   # a lighter, cooler picture (the old transfer: [81, 64, 10])
    matched = match_color(source, target, mask, 1.0)
    pupil = matched[56, 40].astype(int)
    assert pupil.min() > 0 and pupil[2] > pupil[0] + 10 and pupil[2] >= pupil[1]  # red leads: still warm
    assert np.abs(pupil - [26, 34, 80]).max() < 40
    rim = matched[43, 64].astype(int)
    assert rim.max() < 70 and rim.min() > 0  # still a black rim, not tinted
    clipped = ((matched == 0) | (matched == 255)) & ~((source == 0) | (source == 255))
    assert not clipped.any()
    # and the skin did move: lighter and less red, like the target
    skin = mask > 0
    assert lab_stats(matched, skin)[0][0] > lab_stats(source, skin)[0][0] + 5


def test_extreme_transfers_stay_off_the_limits():
    source, mask = face_like((60, 90, 210))
    for reference_colour in ((250, 250, 252), (2, 4, 3), (10, 240, 20)):
        target, _ = face_like(reference_colour, seed=7)
        matched = match_color(source, target, mask, 1.0)
        assert not ((matched == 0) | (matched == 255)).any(), reference_colour


def test_lighting_moves_but_fine_detail_keeps_its_contrast():
    """A flatter-lit target lowers the lighting's spread, not the texture's (a sharp face stays sharp)."""
    source, mask = face_like((120, 140, 190))
    # lit flat, with a skin's texture of its own (a target without any bounds the source's by its brightest)
    texture = cv2.GaussianBlur(np.random.default_rng(1).normal(0, 6, source.shape[:2]), (0, 0), 0.8)
    flat_target = np.clip(np.array((120, 140, 190), float) + texture[..., None], 0, 255)
    matched = match_color(source, flat_target.astype(np.uint8), mask, 1.0)

    def detail(image):
        grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).astype(np.float32)
        return cv2.Laplacian(grey, cv2.CV_32F)[mask > 0].var()

    assert detail(matched) > 0.8 * detail(source)
    transfer = ColorTransfer.fit(source, flat_target.astype(np.uint8), mask)
    assert transfer.gain[0] < 0.9  # the lighting's spread was lowered


def test_a_transfer_survives_as_a_small_array():
    rng = np.random.default_rng(2)
    image = rng.integers(40, 200, (32, 32, 3), dtype=np.uint8)
    reference = rng.integers(60, 220, (32, 32, 3), dtype=np.uint8)
    transfer = ColorTransfer.fit(image, reference, np.ones((32, 32), np.float32))
    again = ColorTransfer.from_array(transfer.as_array())
    assert transfer.as_array().shape == (4, 3)
    assert np.array_equal(transfer.apply(image, 0.7), again.apply(image, 0.7))


def test_the_face_takes_the_targets_light_direction_and_keeps_its_shading_detail():
    """A source lit from the right onto a target lit from above: the swapped face's lightness
    slopes become the target's (half of the change at half strength), its average lightness is
    the target's, and the texture on top keeps its contrast. Changing a box of the image alone
    gives those pixels the same plane as the whole image."""
    size = 128
    rng = np.random.default_rng(4)
    texture = cv2.GaussianBlur(rng.normal(0, 5, (size, size)), (0, 0), 0.8)
    ramp = np.linspace(-25, 25, size)
    lit_from_the_right = texture + ramp[None, :]
    lit_from_above = np.broadcast_to(ramp[::-1][:, None], (size, size))
    source = np.clip(np.array([120.0, 140, 180]) + lit_from_the_right[..., None], 0, 255).astype(np.uint8)
    target = np.clip(np.array([115.0, 135, 175]) + lit_from_above[..., None], 0, 255).astype(np.uint8)
    mask = np.zeros((size, size), np.float32)
    cv2.ellipse(mask, (size // 2, size // 2), (44, 54), 0, 0, 360, 1.0, -1)

    def slopes(image):  # of L* across and down, in L* per image side, by least squares over the mask
        lightness = cv2.cvtColor(image, cv2.COLOR_BGR2LAB)[..., 0].astype(float) * 100 / 255
        ys, xs = np.nonzero(mask > 0)
        design = np.stack([np.ones_like(xs), xs / size, ys / size], 1).astype(float)
        return np.linalg.lstsq(design, lightness[ys, xs], rcond=None)[0][1:]

    transfer = ColorTransfer.fit(source, target, mask)
    matched = transfer.apply(source, 1.0)
    assert np.allclose(slopes(matched), slopes(target), atol=2.5)  # lit from above now, not from the right
    half = slopes(transfer.apply(source, 0.5))
    assert np.allclose(half, (slopes(source) + slopes(matched)) / 2, atol=2.5)
    assert abs(lab_stats(matched, mask)[0][0] - lab_stats(target, mask)[0][0]) < 2

    def detail(image):
        grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).astype(np.float32)
        return cv2.Laplacian(grey, cv2.CV_32F)[mask > 0].var()

    assert detail(matched) > 0.8 * detail(source)
    boxed = transfer.apply(source, 0.8, (30, 20, 100, 110))
    inner = (slice(30, 100), slice(40, 90))  # (the lighting blur sees less near the box's border)
    difference = np.abs(boxed[inner].astype(int) - transfer.apply(source, 0.8)[inner])
    assert difference.max() <= 2 and difference.mean() < 0.2  # (a plane read at the wrong place: ~10)
    assert np.array_equal(boxed[:20], source[:20])


def test_the_fit_is_the_weighted_statistics_and_least_squares_plane_written_plainly():
    """The fit's figures, worked out from one weighted moment matrix and a written-out 2x2 solve, are
    the textbook ones: each channel's weighted mean and spread, and each face's lightness plane by
    weighted least squares (on the 64-pixel copies the fit measures)."""
    rng = np.random.default_rng(7)
    size = 64
    yy, xx = np.mgrid[:size, :size] / size
    source = np.clip(rng.normal(0, 12, (size, size, 3)) + [110, 130, 170] + 40 * xx[..., None], 0, 255)
    target = np.clip(rng.normal(0, 8, (size, size, 3)) + [100, 120, 150] + 30 * yy[..., None], 0, 255)
    source, target = source.astype(np.uint8), target.astype(np.uint8)
    weights = np.clip(1.3 - np.hypot(xx - 0.5, yy - 0.5) * 3, 0, 1).astype(np.float32)

    def lab(image):  # the fit's own reading: OpenCV's 8-bit L*a*b*, L scaled to 0..100
        values = cv2.cvtColor(image, cv2.COLOR_BGR2LAB).astype(float)
        return np.dstack([values[..., 0] * 100 / 255, values[..., 1] - 128, values[..., 2] - 128])

    def plane_slopes(lightness):
        root = np.sqrt(weights.reshape(-1))
        design = np.stack([np.ones(size * size), (xx + 0.5 / size).reshape(-1), (yy + 0.5 / size).reshape(-1)], 1)
        return np.linalg.lstsq(design * root[:, None], lightness.reshape(-1) * root, rcond=None)[0][1:]

    transfer = ColorTransfer.fit(source, target, weights)
    (mean_src, std_src), (mean_ref, std_ref) = (
        (np.average(lab(image).reshape(-1, 3), axis=0, weights=weights.reshape(-1)),
         np.sqrt(np.cov(lab(image).reshape(-1, 3).T, aweights=weights.reshape(-1), bias=True).diagonal()))
        for image in (source, target))
    gain = np.clip(std_ref / std_src, 1 / color.MAX_GAIN, color.MAX_GAIN)
    assert np.allclose(transfer.gain, gain, rtol=1e-4)
    assert np.allclose(transfer.offset, mean_ref - gain * mean_src, atol=1e-3)
    slopes = plane_slopes(lab(target)[..., 0]) - gain[0] * plane_slopes(lab(source)[..., 0])
    assert np.allclose(transfer.light[:2], slopes, atol=1e-3)
    assert abs(slopes[0]) > 5 and abs(slopes[1]) > 5  # both slopes are there to be found


def test_local_gains_are_the_lightness_gain_and_the_chroma_gains_faded_on_dark_pixels():
    transfer = ColorTransfer(np.array([0.8, 1.4, 0.6], np.float32), np.zeros(3, np.float32))
    gains = transfer.local_gains(np.array([[0, 60, 255]], np.uint8))  # black, dark, bright (8-bit L*)
    assert np.allclose(gains[0, :, 0], 0.8)
    assert np.allclose(gains[0, 0, 1:], 1.0) and np.allclose(gains[0, 2, 1:], [1.4, 0.6])
    assert 1.0 < gains[0, 1, 1] < 1.4 and 0.6 < gains[0, 1, 2] < 1.0


def test_the_range_check_takes_colours_strictly_inside_the_limits():
    """``_into_range`` checks its candidates with OpenCV's inRange, whose bounds are inclusive: its bounds are
    the next float32 values inside the limits, so a channel exactly at a limit fails, one step inside fits
    (as a strict comparison of the float32 values does)."""
    edges = []
    for limit in (np.float32(color._LOW), np.float32(color._HIGH)):
        steps = [limit]
        for _ in range(3):
            steps = [np.nextafter(steps[0], np.float32(-1)), *steps, np.nextafter(steps[-1], np.float32(2))]
        edges += steps
    values = np.array(edges, np.float32)
    pixels = np.stack([values, np.full_like(values, 0.5), np.full_like(values, 0.5)], axis=1).reshape(-1, 1, 3)
    checked = cv2.inRange(pixels, (color._LOW_IN,) * 3, (color._HIGH_IN,) * 3).ravel() > 0
    strict = (values > color._LOW) & (values < color._HIGH)
    assert np.array_equal(checked, strict) and strict.sum() == 6  # three steps inside each limit


def test_a_highlight_the_source_brings_stays_skin_not_white_with_specks():
    """Dark skin with a broad highlight and fine creases in it (a forehead's shine) onto paler skin:
    the transfer lifts the highlight past anything on the original's skin, where its colour leaves
    sRGB. Bent towards the original's brightest skin, it keeps the skin's colour; lit up to 100 as
    before, its pixels came out white, and the creases, a little darker, kept a yellow tint."""
    size = 128
    yy, xx = np.mgrid[0:size, 0:size]
    highlight = np.exp(-(((xx - 64) / 30.0) ** 2 + ((yy - 40) / 14.0) ** 2))
    creases = ((yy % 7) == 0) & (highlight > 0.5)

    def skin(bgr, seed):
        texture = cv2.GaussianBlur(np.random.default_rng(seed).normal(0, 6, (size, size)), (0, 0), 0.8)
        return np.array(bgr, float) + texture[..., None]

    source = skin((70, 100, 150), 1) + (150 * highlight)[..., None]
    source[creases] -= 12
    source = np.clip(source, 0, 255).astype(np.uint8)
    target = np.clip(skin((110, 160, 235), 2), 0, 255).astype(np.uint8)
    mask = np.zeros((size, size), np.float32)
    cv2.ellipse(mask, (size // 2, size // 2), (54, 60), 0, 0, 360, 1.0, -1)
    transfer = ColorTransfer.fit(source, target, mask)
    brightest = np.percentile(lab_of(target)[..., 0][mask > 0.5], 99)
    assert transfer.top == pytest.approx(brightest, abs=1.0)

    def chroma_in_highlight_and_elsewhere(matched):
        lab = lab_of(matched)
        chroma = np.hypot(lab[..., 1], lab[..., 2])
        elsewhere = chroma[(mask > 0.5) & (highlight < 0.05)].mean()
        return lab, chroma[highlight > 0.5], elsewhere

    lab, shine, elsewhere = chroma_in_highlight_and_elsewhere(transfer.apply(source))
    assert lab[..., 0][highlight > 0.5].max() <= transfer.top + 2.0 + 0.5
    assert shine.mean() >= 0.8 * elsewhere and shine.min() >= 0.6 * elsewhere
    # as before, lit up to 100: white pixels
    _, shine, elsewhere = chroma_in_highlight_and_elsewhere(replace(transfer, top=100.0).apply(source))
    assert shine.min() < 0.3 * elsewhere
    # the colour-match slider at a twentieth moves the shine a twentieth of the way, not to the bend at once
    lightness = [lab_of(image)[..., 0][highlight > 0.5] for image in (source, transfer.apply(source, 0.05))]
    assert np.abs(lightness[1] - lightness[0]).mean() < 3.0


def test_a_white_glint_in_a_ruddy_face_stays_neutral_not_cyan():
    """Grace Hopper's glasses onto a paler, less red face: the transfer widens the chroma's spread about the
    source face's mean and lowers it, so the rim's white glints (a* and b* near 0, far below the skin's) were
    carried past neutral: light cyan specks (a* -16, b* -8 on the quality bench's group photo). Now no a* or b*
    falls below the lower of its own value and neutral; the skin moves as before."""
    size = 128
    rng = np.random.default_rng(9)
    texture = cv2.GaussianBlur(rng.normal(0, 12, (size, size, 3)), (0, 0), 1.0)
    source = np.clip(np.array((95, 120, 190), float) + texture / 2, 0, 255).astype(np.uint8)
    glints = (slice(40, 42), slice(40, 80))
    source[glints] = (246, 246, 247)  # white, a touch cool
    # paler and less red, its chroma spread wider than the source's
    target = np.clip(np.array((185, 195, 225), float) + texture * 1.5, 0, 255).astype(np.uint8)
    mask = np.zeros((size, size), np.float32)
    cv2.ellipse(mask, (size // 2, size // 2), (54, 60), 0, 0, 360, 1.0, -1)
    transfer = ColorTransfer.fit(source, target, mask)
    assert transfer.gain[1:].max() > 1.0  # the spread is widened: what carried glints past neutral
    before, after = lab_of(source), lab_of(transfer.apply(source))
    floor = np.minimum(before[..., 1:], 0.0)
    assert (after[glints][..., 1:] >= floor[glints] - 1.0).all()  # within 8-bit rounding
    # the uncapped transfer turns them cyan: the case this guards
    change = cv2.transform(cv2.cvtColor(source, cv2.COLOR_BGR2LAB).astype(np.float32), transfer._chroma_change(1.0))
    assert (change[glints][..., 1:] + before[glints][..., 1:] < -5).any()
    skin = (mask > 0.5) & (before[..., 1] > 5) & (before[..., 2] > 5)
    skin[glints] = False
    assert np.abs(lab_stats(transfer.apply(source), skin.astype(np.float32))[0]
                  - lab_stats(target, skin.astype(np.float32))[0]).max() < 3.0
