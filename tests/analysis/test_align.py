import cv2
import numpy as np
import pytest

from facecache.analysis.align import (
    TEMPLATES,
    alignment_matrix,
    compose_affine,
    estimate_similarity,
    invert_affine,
    template_points,
    transform_points,
    warp_back,
    warp_face,
)


def test_templates_match_the_published_points():
    np.testing.assert_allclose(TEMPLATES["arcface_112_v2"][0], [0.34191607, 0.46157411], atol=1e-7)
    np.testing.assert_allclose(template_points("arcface_112_v2", 112)[2], [56.0252, 71.7366], atol=1e-6)
    np.testing.assert_allclose(
        TEMPLATES["arcface_128"], [[0.36167656, 0.40387734], [0.63696719, 0.40235469], [0.50019687, 0.56044219], [0.38710391, 0.72160547], [0.61507734, 0.72034453]], atol=1e-7
    )
    np.testing.assert_allclose(
        TEMPLATES["ffhq_512"], [[0.37691676, 0.46864664], [0.62285697, 0.46912813], [0.50123859, 0.61331904], [0.39308822, 0.72541100], [0.61150205, 0.72490465]], atol=1e-7
    )
    assert not TEMPLATES["ffhq_512"].flags.writeable
    np.testing.assert_allclose(template_points("ffhq_512", (512, 256))[0], [192.98138, 119.97354], atol=1e-4)
    with pytest.raises(ValueError, match="choose one of"):
        template_points("arcface_96", 96)


def _similarity(scale, degrees, tx, ty):
    a = np.radians(degrees)
    return np.array([[scale * np.cos(a), -scale * np.sin(a), tx], [scale * np.sin(a), scale * np.cos(a), ty]])


def test_estimate_similarity_recovers_an_exact_similarity():
    source = np.array([[10.0, 20.0], [40.0, 22.0], [25.0, 40.0], [12.0, 55.0], [38.0, 56.0]])
    truth = _similarity(1.7, 23.0, -5.0, 12.5)
    np.testing.assert_allclose(estimate_similarity(source, transform_points(source, truth)), truth, atol=1e-9)


def test_estimate_similarity_is_the_least_squares_fit_opencv_also_finds():
    rng = np.random.default_rng(3)
    source = rng.uniform(0, 200, (5, 2))
    target = transform_points(source, _similarity(0.6, -40.0, 30.0, 7.0)) + rng.normal(0, 2.0, (5, 2))
    ours = estimate_similarity(source, target)
    theirs, _ = cv2.estimateAffinePartial2D(source, target, method=cv2.LMEDS)
    refined, _ = cv2.estimateAffinePartial2D(source, target, method=cv2.RANSAC, ransacReprojThreshold=1000)
    np.testing.assert_allclose(ours, refined, atol=1e-3)
    # least squares: no other similarity nearby has a smaller error
    error = np.sum((transform_points(source, ours) - target) ** 2)
    for matrix in (theirs, ours + [[0.001, 0, 0], [0, 0.001, 0]], ours + [[0, 0, 0.1], [0, 0, 0]]):
        assert error <= np.sum((transform_points(source, matrix) - target) ** 2) + 1e-9


def test_estimate_similarity_never_reflects_and_rejects_degenerate_points():
    source = np.array([[0.0, 0.0], [10.0, 0.0], [5.0, 8.0]])
    mirrored = source * [-1, 1]
    assert np.linalg.det(estimate_similarity(source, mirrored)[:, :2]) > 0
    with pytest.raises(ValueError, match="coincide"):
        estimate_similarity(np.ones((5, 2)), source[[0, 1, 2, 0, 1]])
    with pytest.raises(ValueError, match="two or more"):
        estimate_similarity(source, source[:2])


def test_warp_face_puts_the_key_points_on_the_template():
    frame = np.zeros((400, 500, 3), np.uint8)
    truth = _similarity(2.5, 15.0, 120.0, 40.0)  # crop -> frame
    kps = transform_points(template_points("arcface_112_v2", 112), truth)
    for x, y in kps:
        cv2.circle(frame, (int(round(x)), int(round(y))), 4, (255, 255, 255), -1)
    crop, matrix = warp_face(frame, kps, "arcface_112_v2", 112)
    assert crop.shape == (112, 112, 3)
    np.testing.assert_allclose(transform_points(kps, matrix), template_points("arcface_112_v2", 112), atol=1e-6)
    np.testing.assert_allclose(matrix, invert_affine(truth), atol=1e-9)
    for x, y in template_points("arcface_112_v2", 112):  # the dots land on the template
        assert crop[int(round(y)), int(round(x))].min() > 100
    np.testing.assert_allclose(alignment_matrix(kps, "arcface_112_v2", 112), matrix)


def test_warp_back_returns_the_crop_to_its_place():
    frame = np.full((240, 320, 3), 0, np.uint8)
    cv2.rectangle(frame, (100, 60), (220, 180), (40, 160, 250), -1)
    kps = np.array([[130.0, 100.0], [190.0, 100.0], [160.0, 130.0], [135.0, 160.0], [185.0, 160.0]])
    crop, matrix = warp_face(frame, kps, "arcface_128", 256)
    back = warp_back(crop, matrix, (320, 240))
    assert back.shape == frame.shape
    inner = (slice(70, 170), slice(110, 210))
    assert np.abs(back[inner].astype(int) - frame[inner]).max() <= 2


def test_invert_and_compose_affine():
    m = _similarity(1.3, 70.0, 4.0, -9.0)
    identity = compose_affine(invert_affine(m), m)
    np.testing.assert_allclose(identity, [[1, 0, 0], [0, 1, 0]], atol=1e-12)
    with pytest.raises(ValueError, match="singular"):
        invert_affine(np.zeros((2, 3)))
