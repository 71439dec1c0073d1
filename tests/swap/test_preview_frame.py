"""The "sequencer" form's preview picture: the frame with the overlay's patches laid over it, opaque."""

import cv2
import numpy as np

from facecache import output_layout
from facecache.swap import preview_frame


def test_patches_are_laid_over_the_frame_as_alpha_over_shows_them():
    rng = np.random.default_rng(7)
    frame = rng.integers(0, 256, (40, 60, 3), dtype=np.uint8)
    before = frame.copy()
    colour = np.full((10, 20, 3), (200, 40, 10), np.uint8)
    alpha = np.zeros((10, 20, 1), np.uint8)
    alpha[:, :5], alpha[:, 5:10], alpha[:, 10:] = 0, 255, 128
    patch = np.concatenate([colour, alpha], axis=2)
    picture = preview_frame.composited(frame, [(30, 12, patch)])
    assert np.array_equal(frame, before)  # the frame is left as it is
    outside = np.ones((40, 60), bool)
    outside[12:22, 35:50] = False
    assert np.array_equal(picture[outside], frame[outside])  # transparent and outside: the frame
    assert np.array_equal(picture[12:22, 35:40], np.broadcast_to(colour[:, :5], (10, 5, 3)))  # opaque: the face
    expected = np.rint(frame[12:22, 40:50] + (colour[:, 10:].astype(np.float32) - frame[12:22, 40:50]) * (128 / 255))
    assert np.abs(picture[12:22, 40:50].astype(int) - expected.astype(int)).max() <= 1


def test_the_preview_is_an_opaque_jpeg_close_to_the_picture():
    picture = np.zeros((64, 96, 3), np.uint8)
    picture[:, :48] = (30, 120, 220)
    decoded = cv2.imdecode(np.frombuffer(preview_frame.encode(picture), np.uint8), cv2.IMREAD_UNCHANGED)
    assert decoded.shape == picture.shape  # three channels: no alpha, so the strip above hides the movie
    assert np.abs(decoded.astype(int) - picture).mean() < 2


def test_the_preview_sits_where_blender_looks_for_the_strip_elements_proxy(tmp_path):
    overlay = tmp_path / "clip" / output_layout.frame_name(12)
    assert output_layout.preview_path(overlay) == str(tmp_path / "clip" / "BL_proxy" / "images" / "100"
                                                      / "000012.png_proxy.jpg")
    assert output_layout.preview_path(overlay, 50) == str(tmp_path / "clip" / "BL_proxy" / "images" / "50"
                                                          / "000012.png_proxy.jpg")


def test_a_smaller_proxy_size_gets_the_picture_at_blenders_proxy_size_averaged():
    """Blender makes a strip's proxy at size P (percent) P x each side / 100, rounded down (proxy.cc); the
    picture there is the whole picture averaged, so a fine pattern turns grey instead of aliasing."""
    picture = np.zeros((101, 203, 3), np.uint8)
    picture[:, ::2] = 255  # one-pixel stripes
    assert preview_frame.at_size(picture, 100) is picture
    half = preview_frame.at_size(picture, 50)
    assert half.shape == (50, 101, 3)
    assert np.abs(half[:, 1:-1].astype(int) - 128).max() <= 2
