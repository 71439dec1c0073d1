"""Planar YUV to Blender 5's picture (media.yuv_to_bgr): each pixel takes the chroma sample swscale's point
filter gives it (the one it lies in, at even sizes) and the stream's matrix, converted a block of rows at a time;
the blocks' edges change no pixel."""

from concurrent.futures import ThreadPoolExecutor

import av
import numpy as np
import pytest

from facecache.media import yuv_to_bgr
from facecache.media.picture_rules import RULES

# (pixel format, bits, horizontal and vertical chroma subsampling)
LAYOUTS = [("yuv420p", 8, 2, 2), ("yuv422p10le", 10, 2, 1), ("yuv440p", 8, 1, 2), ("yuv444p12le", 12, 1, 1)]


def random_frame(pix_fmt: str, bits: int, width: int, height: int, seed: int) -> av.VideoFrame:
    frame = av.VideoFrame(width, height, pix_fmt)
    rng = np.random.default_rng(seed)
    dtype = np.uint8 if bits == 8 else np.uint16
    for plane in frame.planes:
        samples = np.frombuffer(plane, dtype)
        samples[:] = rng.integers(0, 1 << bits, samples.size, dtype)
    frame.colorspace, frame.color_range = 1, 1  # BT.709, limited range
    return frame


def point_sample(pixel: int, samples: int, size: int) -> int:
    """The chroma sample of `pixel` by swscale's point filter: ((step >> 1) + pixel x step) >> 16, where the
    16.16 step is (samples << 16) / size rounded (32768 at an even size: pixel // 2)."""
    step = ((samples << 16) + size // 2) // size
    return ((step >> 1) + pixel * step) >> 16


def reference(frame: av.VideoFrame, bits: int, step_x: int, step_y: int) -> np.ndarray:
    """BGR in double precision: each pixel's chroma sample looked up, then the BT.709 matrix."""
    dtype = np.uint8 if bits == 8 else np.uint16
    width, height = frame.width, frame.height
    chroma_width, chroma_height = -(-width // step_x), -(-height // step_y)
    rows = [point_sample(row, chroma_height, height) for row in range(height)]
    columns = [point_sample(column, chroma_width, width) for column in range(width)]
    planes = []
    for number, plane in enumerate(frame.planes[:3]):
        samples = np.frombuffer(plane, dtype).reshape(-1, plane.line_size // dtype().itemsize)
        planes.append((samples[rows][:, columns] if number else samples[:height, :width]).astype(np.float64))
    scale = 1 << (bits - 8)
    y, cb, cr = (planes[0] / scale - 16) / 219, (planes[1] / scale - 128) / 224, (planes[2] / scale - 128) / 224
    red, blue = y + 2 * (1 - 0.2126) * cr, y + 2 * (1 - 0.0722) * cb
    green = (y - 0.2126 * red - 0.0722 * blue) / (1 - 0.2126 - 0.0722)
    white = 255 * (65280 / 65535 if bits > 8 else 1)  # Blender's float path for deeper sources
    return np.clip(np.rint(np.stack([blue, green, red], axis=-1) * white), 0, 255)


@pytest.mark.parametrize("pix_fmt, bits, step_x, step_y", LAYOUTS)
@pytest.mark.parametrize("threads", [0, 2])
def test_a_picture_converted_in_blocks_is_the_picture_converted_whole(monkeypatch, pix_fmt, bits, step_x, step_y,
                                                                     threads):
    frame = random_frame(pix_fmt, bits, 202, 1001, seed=bits + step_x + step_y)  # an odd height, several blocks
    assert yuv_to_bgr._block_rows(frame.width, step_y) * 2 < frame.height
    pool = ThreadPoolExecutor(threads) if threads else None
    blocks = yuv_to_bgr.to_bgr(frame, RULES["blender-5"], pool)
    monkeypatch.setattr(yuv_to_bgr, "_BLOCK_BYTES", frame.width * frame.height * 3)
    whole = yuv_to_bgr.to_bgr(frame, RULES["blender-5"], pool)
    assert blocks.shape == (1001, 202, 3) and np.array_equal(blocks, whole)
    # and it is the nearest chroma sample's colour (OpenCV's fixed-point matrix: within one code value)
    assert np.abs(blocks - reference(frame, bits, step_x, step_y)).max() <= 1


def test_a_picture_shown_through_a_colour_space_is_the_same_in_blocks(monkeypatch):
    """An HLG frame's float picture (Blender 5's view of BT.2020 HLG) is converted in blocks too."""
    frame = random_frame("yuv420p10le", 10, 96, 901, seed=3)
    frame.colorspace, frame.color_primaries, frame.color_trc = 9, 9, 18
    blocks = yuv_to_bgr.to_bgr(frame, RULES["blender-5"])
    monkeypatch.setattr(yuv_to_bgr, "_BLOCK_BYTES", frame.width * frame.height * 3 * 4)
    assert yuv_to_bgr._block_rows(frame.width, 2) >= frame.height
    assert np.array_equal(blocks, yuv_to_bgr.to_bgr(frame, RULES["blender-5"]))


@pytest.mark.parametrize("pix_fmt, bits, step_x, step_y", LAYOUTS)
def test_a_picture_converted_in_some_rows_is_the_whole_picture_there_and_zero_elsewhere(pix_fmt, bits, step_x, step_y):
    """A warm swap's frame (`rows`): spans that overlap, start on an odd row, reach past either edge or lie
    outside the picture; each given row is the whole conversion's, every other row 0 or, where a chroma row
    spans two rows, the whole conversion's too."""
    frame = random_frame(pix_fmt, bits, 202, 1001, seed=bits + step_x)
    whole = yuv_to_bgr.to_bgr(frame, RULES["blender-5"])
    rows = [(-40, 31), (301, 650), (600, 700), (977, 1200), (1500, 1600)]
    part = yuv_to_bgr.to_bgr(frame, RULES["blender-5"], rows=rows)
    given = np.zeros(frame.height, bool)
    for top, bottom in rows:
        given[max(top, 0):bottom] = True
    assert np.array_equal(part[given], whole[given])
    converted = (part != 0).any(axis=(1, 2))
    assert not converted[~given].sum() > 2 * (step_y - 1) * len(rows)  # at most a chroma row's neighbours
    assert np.array_equal(part[converted], whole[converted])


def test_a_turned_or_deinterlaced_picture_is_converted_whole_whatever_rows_are_asked_for(monkeypatch):
    """Rows of the shown picture are columns of a turned frame's, and deinterlacing reads the rows around
    each row: both convert the whole picture."""
    frame = random_frame("yuv420p", 8, 64, 48, seed=3)
    assert (yuv_to_bgr.to_bgr(frame, RULES["blender-5"], rows=[(0, 4)]) == 0).all(axis=(1, 2)).any()
    assert np.array_equal(yuv_to_bgr.to_bgr(frame, RULES["blender-5"], deinterlace=True, rows=[(0, 4)]),
                          yuv_to_bgr.to_bgr(frame, RULES["blender-5"], deinterlace=True))
    monkeypatch.setattr(yuv_to_bgr, "quarter_turns", lambda frame, rules: 90)  # a phone's display matrix
    assert np.array_equal(yuv_to_bgr.to_bgr(frame, RULES["blender-5"], rows=[(0, 4)]),
                          yuv_to_bgr.to_bgr(frame, RULES["blender-5"]))
