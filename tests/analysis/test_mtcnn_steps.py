import math

import numpy as np

from facecache.analysis.mtcnn_steps import cell_candidates, crop_patches, first_scale, landmarks_in_boxes, level_size, net_batch, pyramid_scales, top_k


def test_pyramid_starts_where_the_smallest_face_fills_one_cell():
    scales = pyramid_scales(1080, 1920, 20.0, 0.709, 1_500_000)
    assert scales[0] == 0.6
    np.testing.assert_allclose(np.diff(np.log(scales)), math.log(0.709))
    assert 1080 * scales[-1] >= 12 > 1080 * scales[-1] * 0.709
    assert level_size(1080, 1920, 0.6) == (1152, 648)


def test_pyramid_of_a_huge_frame_is_capped():
    scales = pyramid_scales(4320, 7680, 20.0, 0.709, 1_500_000)
    width, height = level_size(4320, 7680, scales[0])
    assert width * height <= 1_500_000 + width + height + 1
    assert 12 / first_scale(4320, 7680, 20.0, 1_500_000) > 50  # faces under ~56 px are not searched in 8K


def test_tiny_frames_have_no_pyramid():
    assert pyramid_scales(8, 8, 20.0, 0.709, 1_500_000) == []
    assert pyramid_scales(19, 400, 20.0, 0.709, 1_500_000) == []
    assert len(pyramid_scales(20, 400, 20.0, 0.709, 1_500_000)) == 1


def test_cells_map_to_windows_in_the_frame():
    probs = np.zeros((3, 5))
    probs[1, 3] = 0.9
    probs[2, 0] = 0.5
    deltas = np.zeros((3, 5, 4))
    deltas[1, 3] = [0.1, 0.2, 0.3, 0.4]
    boxes, scores, cell_deltas = cell_candidates(probs, deltas, 0.6, 0.5, 0.25)
    np.testing.assert_allclose(boxes, [[3 * 2 / 0.5, 1 * 2 / 0.25, (6 + 12) / 0.5, (2 + 12) / 0.25]])
    np.testing.assert_allclose(scores, [0.9])
    np.testing.assert_allclose(cell_deltas, [[0.1, 0.2, 0.3, 0.4]])
    assert cell_candidates(probs, deltas, 0.95, 1, 1)[0].shape == (0, 4)


def test_top_k():
    scores = np.array([0.1, 0.9, 0.5, 0.7])
    assert sorted(top_k(scores, 2)) == [1, 3]
    assert list(top_k(scores, 10)) == [0, 1, 2, 3]


def test_landmarks_are_x_then_y_fractions_of_the_box():
    points = landmarks_in_boxes(np.array([[100, 200, 150, 300]]), np.array([[0.2, 0.8, 0.5, 0.3, 0.7, 0.4, 0.4, 0.6, 0.8, 0.8]]))
    np.testing.assert_allclose(points[0], [[110, 240], [140, 240], [125, 260], [115, 280], [135, 280]])


def test_crop_patches_read_pixels_exactly_and_pad_with_black():
    rng = np.random.default_rng(1)
    frame = rng.integers(1, 256, (100, 120, 3), dtype=np.uint8)
    patches = crop_patches([(frame, 1.0, 1.0)], np.array([[10.0, 20.0, 34.0, 44.0], [-12.0, -12.0, 12.0, 12.0]]), 24)
    np.testing.assert_array_equal(patches[0], frame[20:44, 10:34])
    np.testing.assert_array_equal(patches[1, 12:, 12:], frame[:12, :12])
    assert patches[1, :12].max() == 0 and patches[1, :, :12].max() == 0


def test_crop_patches_read_big_faces_from_small_levels():
    frame = np.full((400, 400, 3), 10, np.uint8)
    half = np.full((200, 200, 3), 20, np.uint8)
    quarter = np.full((100, 100, 3), 30, np.uint8)
    sources = [(frame, 1.0, 1.0), (half, 0.5, 0.5), (quarter, 0.25, 0.25)]
    boxes = np.array([[100.0, 100.0, 196.0, 196.0], [100.0, 100.0, 148.0, 148.0], [100.0, 100.0, 120.0, 120.0]])
    patches = crop_patches(sources, boxes, 24)
    assert [int(p[12, 12, 0]) for p in patches] == [30, 20, 10]  # 96 px -> quarter, 48 px -> half, 20 px -> frame


def test_net_batch_is_rgb_transposed_and_normalised():
    image = np.zeros((1, 2, 3, 3), np.uint8)
    image[0, 1, 2] = (0, 128, 255)  # BGR at row 1, column 2
    batch = net_batch(image)
    assert batch.shape == (1, 3, 2, 3) and batch.dtype == np.float32
    np.testing.assert_allclose(batch[0, 2, 1], [(255 - 127.5) / 128, 0.5 / 128, -127.5 / 128])
    np.testing.assert_allclose(net_batch(np.concatenate([image, image]))[1], batch[0])
