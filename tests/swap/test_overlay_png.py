import os

import cv2
import numpy as np
import pytest

from facecache.errors import FaceCacheError
from facecache.swap.composite import CompositeParams, overlay
from facecache.swap.overlay_png import PNG_PARAMS, encode_overlay, write_overlay
from facecache.swap.result import SwapResult

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_overlay_round_trips_exactly_through_png(tmp_path, noise_frame):
    result = SwapResult(np.full((64, 64, 3), (10, 20, 30), np.uint8), [[0.5, 0, -50], [0, 0.5, -40]])
    bgra = overlay(noise_frame, [result], CompositeParams())
    path = write_overlay(tmp_path / "sub" / "frame_0001.png", bgra)
    assert path.read_bytes()[:8] == PNG_MAGIC
    back = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    assert back.shape == (480, 640, 4) and np.array_equal(back, bgra)
    assert [p.name for p in path.parent.iterdir()] == ["frame_0001.png"]  # no temporary file left
    assert os.stat(path).st_mode & 0o777 == 0o644


def test_png_is_stored_as_rgba_in_file_order():
    bgra = np.zeros((2, 2, 4), np.uint8)
    bgra[0, 0] = (255, 0, 0, 128)  # blue, half transparent
    data = np.frombuffer(encode_overlay(bgra), np.uint8)
    rgba = cv2.cvtColor(cv2.imdecode(data, cv2.IMREAD_UNCHANGED), cv2.COLOR_BGRA2RGBA)
    assert tuple(rgba[0, 0]) == (0, 0, 255, 128)


def test_encoder_uses_the_measured_setting():
    # zlib RLE without an explicit level: OpenCV's fast path (see overlay_png's docstring)
    assert PNG_PARAMS == (cv2.IMWRITE_PNG_STRATEGY, cv2.IMWRITE_PNG_STRATEGY_RLE)
    assert cv2.IMWRITE_PNG_COMPRESSION not in PNG_PARAMS[::2]


def test_bad_overlays_and_unwritable_paths(tmp_path):
    with pytest.raises(ValueError, match="BGRA"):
        encode_overlay(np.zeros((4, 4, 3), np.uint8))
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    with pytest.raises(FaceCacheError, match="cannot write the overlay"):
        write_overlay(blocker / "frame.png", np.zeros((4, 4, 4), np.uint8))
