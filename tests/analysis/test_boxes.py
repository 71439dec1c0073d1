import numpy as np
import pytest

from facecache.analysis.boxes import box_areas, nms, overlaps, regress_boxes, square_boxes


def test_overlaps_union_and_min():
    box = np.array([0, 0, 10, 10])
    others = np.array([[0, 0, 10, 10], [5, 0, 15, 10], [20, 20, 30, 30], [2, 2, 4, 4]])
    np.testing.assert_allclose(overlaps(box, others, "union"), [1.0, 50 / 150, 0.0, 4 / 100])
    np.testing.assert_allclose(overlaps(box, others, "min"), [1.0, 0.5, 0.0, 1.0])
    with pytest.raises(ValueError, match="'union' or 'min'"):
        overlaps(box, others, "max")


def test_nms_keeps_best_and_drops_overlapping_boxes():
    boxes = np.array([[0, 0, 10, 10], [1, 0, 11, 10], [20, 20, 30, 30], [0, 1, 10, 11], [21, 20, 31, 30]])
    scores = np.array([0.6, 0.9, 0.5, 0.7, 0.8])
    np.testing.assert_array_equal(nms(boxes, scores, 0.5), [1, 4])
    # with a threshold above every overlap nothing is dropped, order is by score
    np.testing.assert_array_equal(nms(boxes, scores, 0.99), [1, 4, 3, 0, 2])


def test_nms_min_mode_drops_a_box_nested_in_a_better_one():
    boxes = np.array([[0, 0, 100, 100], [10, 10, 30, 30]])
    scores = np.array([0.9, 0.8])
    np.testing.assert_array_equal(nms(boxes, scores, 0.7, "union"), [0, 1])
    np.testing.assert_array_equal(nms(boxes, scores, 0.7, "min"), [0])


def test_nms_of_nothing_and_mismatched_input():
    assert nms(np.zeros((0, 4)), np.zeros(0), 0.5).shape == (0,)
    with pytest.raises(ValueError, match="one score per box"):
        nms(np.zeros((2, 4)), np.zeros(3), 0.5)


def test_square_boxes_keep_centres_and_take_the_longer_side():
    squared = square_boxes(np.array([[10, 20, 30, 60], [0, 0, 8, 4]]))
    np.testing.assert_allclose(squared, [[0, 20, 40, 60], [0, -2, 8, 6]])
    np.testing.assert_allclose(box_areas(squared), [1600, 64])


def test_regress_boxes_scales_deltas_by_width_and_height():
    moved = regress_boxes(np.array([[10, 20, 30, 60]]), np.array([[0.1, -0.25, 0.5, 0.0]]))
    np.testing.assert_allclose(moved, [[12, 10, 40, 60]])
