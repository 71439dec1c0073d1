"""Blender 4.2's picture where FFmpeg 6.1's swscale filters chroma vertically (media/swscale61.py), held
against a reference written here step by step from FFmpeg 6.1's definitions (hScale's 15-bit intermediate,
the bilinear filters' taps and weights, yuv2rgb_full_1_c's choice between one chroma row and two,
yuv2rgb_write_full's 32-bit arithmetic), and which frames take that path. Whether the picture is
Blender's is settled against bpy 4.2.23's renders in tests/blender/test_blender_footage.py."""

from concurrent.futures import ThreadPoolExecutor

import av
import numpy as np
import pytest

from facecache.media import swscale61
from facecache.media.picture_rules import RULES
from facecache.media.reader import MediaReader
from facecache.media.yuv_to_bgr import to_bgr
from footage import write_clip

# ff_yuv2rgb_coeffs {crv, cbu, cgu, cgv}: BT.709, BT.601, BT.2020
COEFFS = {1: (117489, 138438, 13975, 34925), 5: (104597, 132201, 25675, 53279), 9: (110013, 140363, 12277, 42626)}


def c_div(a: int, b: int) -> int:  # C's integer division, towards zero
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


def reference(y, u, v, bits, tag, full_range):
    """RGB as FFmpeg 6.1's swscale scaled path gives it (SWS_BILINEAR | SWS_FULL_CHR_H_INT), pixel by pixel."""
    crv, cbu, cgu, cgv = COEFFS[tag]
    cgu, cgv = -cgu, -cgv
    cy, oy = (1 << 16, 0) if full_range else ((1 << 16) * 255 // 219, 16 << 16)
    if full_range:
        crv, cbu, cgu, cgv = (c_div(x * 224, 255) for x in (crv, cbu, cgu, cgv))
    rnd = lambda x: (x + (1 << 15)) >> 16  # noqa: E731  (roundToInt16)
    y_coeff, y_offset = rnd(cy * 8192), rnd(oy * 512)
    v2r, v2g, u2g, u2b = rnd(crv * 8192), rnd(cgv * 8192), rnd(cgu * 8192), rnd(cbu * 8192)
    height, width = y.shape
    chroma_height, chroma_width = u.shape
    step_x = 1 if chroma_width == width else 2

    def taps(index, source, output, unit):
        """Output sample `index`'s bilinear taps from `source` samples up to `output`: its centre at
        ((2 index + 1) x step - 2^16) / 2^17 source samples, step = (source << 16) / output rounded; the two
        nearest samples weighed by distance in 1/`unit` (a tie to the first); a first tap under 0.2 % dropped."""
        step = ((source << 16) + output // 2) // output
        centre = step * (2 * index + 1) - (1 << 16)
        first, past = centre >> 17, centre & ((1 << 17) - 1)
        second = unit - (unit * ((1 << 17) - past) + (1 << 16)) // (1 << 17)
        if (1 << 17) - past <= 262:
            first, second = first + 1, 0
        return first, second

    def horizontal(plane):  # hScale to 15 bits: (sum of sample x 14-bit weight) >> shift, taps folded inside
        out = np.zeros((plane.shape[0], width), np.int64)
        for x in range(width):
            first, second = taps(x, chroma_width, width, 16384) if step_x == 2 else (x, 0)
            near, far = (min(max(column, 0), chroma_width - 1) for column in (first, first + 1))
            total = plane[:, near].astype(np.int64) * (16384 - second) + plane[:, far].astype(np.int64) * second
            out[:, x] = np.minimum(total >> (7 if bits == 8 else bits - 1), (1 << 15) - 1)
        return out

    cu, cv = horizontal(u), horizontal(v)
    rgb = np.zeros((height, width, 3), np.int64)
    for row in range(height):
        first, alpha = taps(row, chroma_height, height, 4096)  # the second tap's 12-bit vertical weight
        if first < 0:  # the first rows: their filter is row 0 alone
            first, alpha = 0, 0
        if first + 1 > chroma_height - 1:  # the last: swscale moves the filter up a row, its weight to tap 2
            first, alpha = chroma_height - 2, 4096
        if alpha < 2048:  # yuv2rgb_full_1_c: one chroma row
            U, V = (cu[first] - (128 << 7)) * 4, (cv[first] - (128 << 7)) * 4
        else:  # the two rows' plain average, whatever the weight
            U = (cu[first] + cu[first + 1] - (128 << 8)) * 2
            V = (cv[first] + cv[first + 1] - (128 << 8)) * 2
        Y = (y[row].astype(np.int64) << (15 - bits)) * 4
        Y = (Y - y_offset) * y_coeff + (1 << 21)
        for channel, value in enumerate((Y + V * v2r, Y + V * v2g + U * u2g, Y + U * u2b)):
            value = ((value + (1 << 31)) % (1 << 32)) - (1 << 31)  # C's 32-bit unsigned sum, read as int
            rgb[row, :, channel] = np.clip(value, 0, (1 << 30) - 1) >> 22
    return rgb.astype(np.uint8)


def planes(height, width, bits, step_x, seed):
    """Random planes with the extremes of the code range in them (clipping and 32-bit wrap-around)."""
    rng = np.random.default_rng(seed)
    top = (1 << bits) - 1
    y = rng.integers(0, top + 1, (height, width)).astype(np.uint16)
    chroma_size = (-(-height // 2), -(-width // step_x))
    u = rng.integers(0, top + 1, chroma_size).astype(np.uint16)
    v = rng.integers(0, top + 1, chroma_size).astype(np.uint16)
    y[0, :4], u[0, :2], v[0, :2] = top, top, top
    y[1, :4], u[1, :2], v[1, :2] = 0, 0, top
    return (y.astype(np.uint8), u.astype(np.uint8), v.astype(np.uint8)) if bits == 8 else (y, u, v)


@pytest.mark.parametrize("bits, step_x, tag, full_range, size", [
    (10, 2, 9, False, (12, 10)), (10, 2, 1, True, (8, 14)), (10, 2, 5, False, (70, 18)),
    (12, 2, 9, False, (8, 8)), (12, 2, 5, True, (10, 8)), (8, 1, 5, False, (12, 10)), (8, 1, 1, True, (8, 2)),
    (10, 1, 9, False, (16, 6)),
    # odd sizes: uneven filter steps (8-bit 4:2:0 at an odd height takes this path too)
    (10, 2, 9, False, (97, 95)), (10, 2, 1, True, (7, 21)), (12, 2, 5, False, (42, 9)), (8, 2, 5, False, (95, 96)),
    (8, 2, 1, True, (21, 41)), (8, 1, 5, False, (13, 10)), (10, 2, 9, False, (9, 7)),
])
def test_the_picture_is_ffmpeg_6_1_s_scaled_path_to_the_bit(bits, step_x, tag, full_range, size):
    height, width = size
    y, u, v = planes(height, width, bits, step_x, seed=bits * 100 + height)
    expected = reference(y, u, v, bits, tag, full_range)
    assert np.array_equal(swscale61.to_bgr(y, u, v, bits, step_x, tag, full_range)[..., ::-1], expected)
    with ThreadPoolExecutor(2) as pool:  # in bands of rows, and blocks within them
        assert np.array_equal(swscale61.to_bgr(y, u, v, bits, step_x, tag, full_range, pool)[..., ::-1], expected)


@pytest.mark.parametrize("bits, step_x, size", [(10, 2, (1080, 1920)), (12, 2, (96, 96)), (8, 1, (64, 38))])
def test_uneven_steps_give_the_even_steps_picture_at_even_sizes(bits, step_x, size):
    """The two forms of the filters (fixed 1/4 and 3/4 at even sizes, the taps of each pixel at any size),
    written apart, agree to the bit where both apply."""
    height, width = size
    y, u, v = planes(height, width, bits, step_x, seed=7)
    assert np.array_equal(swscale61._in_uneven_steps(y, u, v, bits, 9, False, None),
                          swscale61.to_bgr(y, u, v, bits, step_x, 9, False))


def test_the_coefficients_are_ffmpeg_s():
    # ff_yuv2rgb_c_init_tables for BT.2020 limited range: cy = 65536 x 255 / 219, 13-bit gains, offset 16 << 9
    assert swscale61.coefficients(9, False) == {"y_coeff": 9539, "y_offset": 8192, "v2r": 13752, "v2g": -5328,
                                                "u2g": -1535, "u2b": 17545}
    # full range: no luma scaling, chroma gains x 224 / 255 (C division), no offset
    assert swscale61.coefficients(5, True)["y_coeff"] == 8192 and swscale61.coefficients(5, True)["y_offset"] == 0
    assert swscale61.coefficients(2, False) == swscale61.coefficients(5, False)  # untagged: BT.601


@pytest.mark.parametrize("bits, subsampling, size, taken", [
    (10, (2, 2), (1920, 1080), True),   # 10-bit 4:2:0: the scaled path
    (12, (2, 2), (96, 96), True),
    (8, (1, 2), (96, 96), True),        # 8-bit 4:4:0: no unscaled converter for it
    (8, (2, 2), (1920, 1080), False),   # 8-bit 4:2:0 at an even height: the unscaled converter (PyAV's swscale)
    (8, (2, 2), (95, 96), False),       # at any width
    (8, (2, 2), (96, 95), True),        # at an odd height: the scaled path
    (8, (2, 1), (96, 96), False),       # 4:2:2 and 4:4:4: no vertical filter (PyAV's swscale gives 6.1's picture)
    (8, (2, 1), (96, 95), False),
    (10, (2, 1), (96, 96), False),
    (10, (1, 1), (96, 96), False),
    (10, (2, 2), (95, 96), True),       # odd sizes: uneven filter steps
    (10, (2, 2), (96, 95), True),
    (16, (2, 2), (96, 96), False),      # beyond 12 bits: the 15-bit intermediate drops bits; not modelled
    (10, (2, 2), (8, 8), True),         # the smallest: 4 chroma samples each way
    (10, (2, 2), (7, 7), True),
    (10, (2, 2), (6, 8), False),        # fewer: swscale's filters have fewer taps; not modelled
    (10, (2, 2), (8, 6), False),
    (8, (1, 2), (2, 8), True),          # 4:4:0 is not filtered horizontally: any width
])
def test_which_frames_take_the_scaled_path(bits, subsampling, size, taken):
    assert swscale61.takes_scaled_path(bits, subsampling, *size) is taken


def test_an_interlaced_frame_is_converted_as_one_picture_under_4_2_rules(tmp_path):
    """FFmpeg 8's swscale converts a frame flagged interlaced field by field; Blender 4.2's (6.1) converts
    the woven picture, which the engine follows by handing swscale a progressive copy of the frame."""
    clip = write_clip(tmp_path / "interlaced.mp4", frames=2, codec_options={"x264-params": "interlaced=1:tff=1"})
    interpolation = av.video.reformatter.Interpolation
    flags = (interpolation.BILINEAR | interpolation.FULL_CHR_H_INT if hasattr(interpolation, "FULL_CHR_H_INT")
             else "BILINEAR")
    with av.open(str(clip)) as container:
        frame = next(container.decode(video=0))
        assert frame.interlaced_frame and frame.format.name == "yuv420p"
        y, u, v = (np.frombuffer(p, np.uint8).reshape(-1, p.line_size)[:p.height, :p.width] for p in frame.planes)
        woven = av.VideoFrame.from_ndarray(np.concatenate([y, u.reshape(-1, 96), v.reshape(-1, 96)]),
                                           format="yuv420p")
        assert not woven.interlaced_frame
        expected = woven.reformat(format="bgr24", src_colorspace=5, src_color_range=1,
                                  interpolation=flags).to_ndarray()
        assert np.array_equal(to_bgr(frame, RULES["blender-4.2"]), expected)
    with MediaReader(clip, RULES["blender-4.2"]) as reader:
        ((_, picture),) = reader.frames([0])
    assert np.array_equal(picture, expected)
