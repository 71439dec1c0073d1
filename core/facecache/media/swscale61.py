"""Blender 4.2's picture of planar YUV that swscale filters vertically: FFmpeg 6.1's "scaled" path, to the bit.

Blender 4.2 and 4.3 convert a movie's frames with the swscale of the FFmpeg they are built with (6.1.1 in
4.2), flags SWS_BILINEAR | SWS_FULL_CHR_H_INT, to RGBA. Without SWS_ACCURATE_RND, 8-bit 4:2:0 and 4:2:2 of
an even height take swscale's "unscaled" converter, which the swscale PyAV ships reproduces to the bit
(yuv_to_bgr.py). Every other format takes the scaled path: chroma filtered up to the luma grid, then one
output stage per row. Where the chroma is subsampled vertically (4:2:0 beyond 8 bits or at an odd height,
4:4:0), FFmpeg 6.1's output stage differs from FFmpeg 8's, so this module computes 6.1's picture in integers
as 6.1 does (libswscale: hScale8To15_c / hScale16To15_c, initFilter, yuv2rgb_full_1_c, yuv2rgb_write_full,
ff_yuv2rgb_c_init_tables; the facts, not the code):

- horizontal: chroma upsampled to the luma width with bilinear weights centred between luma samples
  (1/4 and 3/4 of its two nearest samples; the first and last column their own sample), to a 15-bit
  intermediate: the 14-bit filter's sum >> (bits - 1). Luma is the sample << (15 - bits).
- vertical: the two-tap filter's taps are chroma rows k-1 and k for output row 2k, k and k+1 for row 2k+1
  (weights 1/4, 3/4 and 3/4, 1/4). The output stage (yuv2rgb_full_1_c) ignores the weight: it takes the
  first row alone when the second one's weight is under 1/2 (rows 2k+1; row 0, whose filter is its own
  row), else the plain average of the two (rows 2k, and the last row, whose filter swscale moves one row
  up, weighing its second tap fully).
- colour: Y' = (4 Y15 - y_offset) x y_coeff + 2^21, R = Y' + V v2r, G = Y' + V v2g + U u2g, B = Y' + U u2b
  with U, V = 4 (C15 - 2^14) (one row) or 2 (C15a + C15b - 2^15) (two), clipped to 30 bits, >> 22. The
  coefficients come from the stream's matrix (ff_yuv2rgb_coeffs, as sws_getCoefficients picks them) and
  range (limited: y_coeff 255/219 in 13 bits, offset 16 << 9; full: the chroma gains x 224/255).
- uneven steps (an odd width or height: a plane of n samples filtered up to 2n - 1): output sample i sits at
  ((2i + 1) x step - 2^16) / 2^17 source samples, step being the 16.16 increment (source << 16) / output,
  rounded; its two nearest samples weigh by distance, rounded to the filter's unit (a tie to the first), and
  a first sample under 0.2 % of the filter is dropped (initFilter trims such taps). Horizontally a tap past
  the edge folds onto the edge sample; vertically a filter reaching past the last row is moved up a row,
  weighing its second tap fully, as at even sizes. Even sizes give the 1/4 and 3/4 above; the two forms
  agree there to the bit (tests/test_media_swscale61.py), and a port of initFilter's arithmetic (a probe,
  not kept) gave these taps for every size from 7 to 4399.

Checked against bpy 4.2.23's renders (docs/blender.md): bit-exact for 10- and 12-bit 4:2:0 (BT.601, 709 and
2020, limited and full range, with alpha), 8-bit 4:4:0, 96x96 to 1280x720, and odd sizes (8-bit 4:2:0 at an
odd height, which 6.1 filters too, and VP9's). Planes under 4 samples either way are not modelled (swscale's
filter is shorter there; `takes_scaled_path` says no): PyAV's swscale converts them, and gives 4.2's picture to
the bit there (8- and 10-bit 4:2:0 and 4:4:0 at 4 to 6 pixels a side, the footage corpus's tiny clips).
"""

from __future__ import annotations

from concurrent.futures import Executor

import cv2
import numpy as np

from facecache.media.row_bands import in_bands

# ff_yuv2rgb_coeffs (FFmpeg 6.1, libswscale/yuv2rgb.c): {crv, cbu, cgu, cgv} by AVColorSpace tag, as
# sws_getCoefficients gives them (tags outside these: BT.601's).
_COEFFICIENTS = {1: (117489, 138438, 13975, 34925), 4: (104448, 132798, 24759, 53109),
                 5: (104597, 132201, 25675, 53279), 6: (104597, 132201, 25675, 53279),
                 7: (117579, 136230, 16907, 35559), 9: (110013, 140363, 12277, 42626),
                 10: (110013, 140363, 12277, 42626)}
_BT601 = 5
_SHIFT = 22  # yuv2rgb_write_full: R >> 22
_BITS = (8, 10, 12)  # the 15-bit intermediate holds these exactly
_MIN_CHROMA = 4  # initFilter caps a filter at its source's size - 2 taps: below 4 samples, fewer than 2
_BLOCK = 32  # rows at a time (even): a 1080p block's int32 arrays stay in the cache
_TRIMMED = 262  # a first tap this close to the next sample (in 2^-17 samples) is under initFilter's 0.2 % cut-off


def takes_scaled_path(bits: int, subsampling: tuple[int, int], width: int, height: int) -> bool:
    """Whether Blender 4.2 (FFmpeg 6.1's swscale, its flags) shows a planar YUV frame by the scaled path with
    a vertical chroma filter, as this module computes it: chroma subsampled vertically (4:2:0, 4:4:0), not
    8-bit 4:2:0 at an even height (the unscaled converter takes that), chroma planes of at least 4 samples
    each way (a filter over fewer has fewer taps in swscale, and swscale's own conversion is 6.1's there)."""
    step_x, step_y = subsampling
    chroma_width, chroma_height = -(-width // step_x), -(-height // step_y)
    return (step_y == 2 and bits in _BITS and not (bits == 8 and step_x == 2 and height % 2 == 0)
            and chroma_height >= _MIN_CHROMA and (step_x == 1 or chroma_width >= _MIN_CHROMA))


def coefficients(tag: int, full_range: bool) -> dict[str, int]:
    """yuv2rgb_write_full's integer coefficients (ff_yuv2rgb_c_init_tables, default brightness, contrast and
    saturation): y_coeff, y_offset and the four chroma gains, for an AVColorSpace tag and range."""
    crv, cbu, cgu, cgv = _COEFFICIENTS.get(tag, _COEFFICIENTS[_BT601])
    cgu, cgv = -cgu, -cgv
    if full_range:
        cy, oy = 1 << 16, 0
        crv, cbu, cgu, cgv = (_c_div(gain * 224, 255) for gain in (crv, cbu, cgu, cgv))
    else:
        cy, oy = (1 << 16) * 255 // 219, 16 << 16

    def round_to_int16(value: int) -> int:  # (value + 2^15) >> 16, an arithmetic shift
        return (value + (1 << 15)) >> 16

    return {"y_coeff": round_to_int16(cy << 13), "y_offset": round_to_int16(oy << 9),
            "v2r": round_to_int16(crv << 13), "v2g": round_to_int16(cgv << 13),
            "u2g": round_to_int16(cgu << 13), "u2b": round_to_int16(cbu << 13)}


def _c_div(numerator: int, denominator: int) -> int:
    """C's integer division (towards zero)."""
    quotient = abs(numerator) // abs(denominator)
    return quotient if (numerator < 0) == (denominator < 0) else -quotient


def gains(tag: int, full_range: bool, bits: int,
          chroma: int) -> tuple[int, int, dict[str, tuple[int, int, int]]]:
    """yuv2rgb_write_full in the units this module works in: (luma gain, offset, {colour: (U-sum gain,
    V-sum gain, offset)}), so that a colour's 32-bit value (before clipping and >> 22) is
    luma gain x Y + offset + U-sum gain x U sum + V-sum gain x V sum + the colour's offset. Y is the luma
    sample; U = `chroma` x U sum - 2^16, V alike.

    Its units: 4 Y15 = Y << (17 - bits); one chroma row gives U = 4 (C15 - 2^14), two U = 2 (C15a + C15b -
    2^15), so a sum of the rows' C15 (one row twice) has `chroma` 2, and a sum of the two rows' sums of the four
    horizontal weights (even steps: left + 3 x own, or 3 x own + right) 2^(14 - bits). The rounding 2^21 goes
    in the offset."""
    k = coefficients(tag, full_range)
    colours = {"b": (k["u2b"], 0), "g": (k["u2g"], k["v2g"]), "r": (0, k["v2r"])}
    return (k["y_coeff"] << (17 - bits), (1 << (_SHIFT - 1)) - k["y_offset"] * k["y_coeff"],
            {colour: (u * chroma, v * chroma, -(u + v) << 16) for colour, (u, v) in colours.items()})


def to_bgr(luma: np.ndarray, u: np.ndarray, v: np.ndarray, bits: int, step_x: int, tag: int, full_range: bool,
           pool: Executor | None = None) -> np.ndarray:
    """8-bit BGR (height, width, 3) of a frame's planes (luma at full size, chroma at half height and
    1/step_x width, rounded up), as FFmpeg 6.1's swscale gives it with Blender 4.2's flags; `pool` shares the
    rows out. Even sizes by the filters' fixed 1/4 and 3/4, odd ones by their taps (`_in_uneven_steps`).

    In 32-bit integers that wrap as FFmpeg's do (a value past 2^31, only from code values beyond the legal
    range at 12 bits, wraps negative and shows black there too). Every product names its dtype: numpy 1.26
    would otherwise compute a uint16 array times a small int32 scalar in 16 bits."""
    height, width = luma.shape
    if height % 2 or width % step_x:
        return _in_uneven_steps(luma, u, v, bits, tag, full_range, pool)
    luma_gain, offset, colours = gains(tag, full_range, bits, 1 << (14 - bits))
    out = np.empty((height, width, 3), np.uint8)

    def convert(top: int, bottom: int) -> None:  # output rows [top, bottom), top even
        for start in range(top, bottom, _BLOCK):  # in blocks of rows that stay in the cache
            _convert_block(luma, u, v, step_x, luma_gain, offset, colours, start, min(start + _BLOCK, bottom),
                           out)

    in_bands(convert, height, 2, pool)
    return out


def _convert_block(luma: np.ndarray, u: np.ndarray, v: np.ndarray, step_x: int, luma_gain: int, offset: int,
                   colours: dict[str, tuple[int, int, int]], top: int, bottom: int, out: np.ndarray) -> None:
    """Output rows [top, bottom) (top even) into `out`."""
    height, width = luma.shape
    chroma_height = u.shape[0]
    low = max(top // 2 - 1, 0)
    high = min((bottom - 1) // 2 + 1, chroma_height)
    sums = [_horizontal_sums(plane[low:high], step_x, width) for plane in (u, v)]
    base = np.multiply(luma[top:bottom], np.int32(luma_gain), dtype=np.int32)
    value = np.empty_like(base)
    shifted = np.empty(base.shape, np.int16)
    rows = np.empty(sums[0].shape, np.int32)
    channels = []
    for colour in "bgr":
        u_gain, v_gain, colour_offset = colours[colour]
        if u_gain:
            np.multiply(sums[0], np.int32(u_gain), out=rows, dtype=np.int32)
            if v_gain:
                rows += np.multiply(sums[1], np.int32(v_gain), dtype=np.int32)
        else:
            np.multiply(sums[1], np.int32(v_gain), out=rows, dtype=np.int32)
        rows += np.int32((offset + colour_offset) // 2)  # the offsets (even), as each output row adds two rows
        _add_row_pairs(rows, low, top, bottom, height, chroma_height, value)
        value += base
        np.right_shift(value, _SHIFT, out=shifted, casting="unsafe")  # -512 to 511
        channels.append(np.clip(shifted, 0, 255, out=np.empty(base.shape, np.uint8), casting="unsafe"))
    cv2.merge(channels, dst=out[top:bottom])


def _add_row_pairs(rows: np.ndarray, low: int, top: int, bottom: int, height: int, chroma_height: int,
                   out: np.ndarray) -> None:
    """Output rows [top, bottom) (top even) into `out`: each the sum of its two chroma rows of `rows` (which
    holds chroma rows from `low` on; a row taken alone counts twice), by slices rather than gathers."""
    first = top // 2 - low  # the chroma row of output rows `top` and `top` + 1, in `rows`
    odd = out[1::2]  # rows 2k+1: chroma row k twice
    np.add(rows[first:first + odd.shape[0]], rows[first:first + odd.shape[0]], out=odd)
    even = out[0::2]  # rows 2k: chroma rows k-1 and k; row 0: row 0 twice
    start = 0
    if top == 0:
        np.add(rows[first], rows[first], out=even[0])
        start = 1
    count = even.shape[0] - start
    if count > 0:
        np.add(rows[first + start - 1:first + start - 1 + count], rows[first + start:first + start + count],
               out=even[start:])
    if bottom == height and chroma_height > 1:  # the last row: chroma rows h-2 and h-1
        np.add(rows[chroma_height - 2 - low], rows[chroma_height - 1 - low], out=out[-1])


def _horizontal_sums(rows: np.ndarray, step_x: int, width: int) -> np.ndarray:
    """(rows, width), uint16 (at most 4 x 4095): each pixel's chroma as the sum of the four weights of its
    bilinear filter (1/4 and 3/4 of its two nearest samples; 4 x its own where there is no subsampling or at
    the edges)."""
    samples = rows[:, :-(-width // step_x)].astype(np.uint16, copy=False)
    if step_x == 1:
        return samples * np.uint16(4)
    tripled = samples * np.uint16(3)
    sums = np.empty((samples.shape[0], width), np.uint16)
    even, odd = sums[:, 0::2], sums[:, 1::2]  # even: the left neighbour and its own; odd: its own and the right
    np.add(tripled[:, 1:], samples[:, :-1], out=even[:, 1:])
    np.add(tripled[:, :-1], samples[:, 1:], out=odd[:, :-1])
    np.add(tripled[:, 0], samples[:, 0], out=even[:, 0])
    np.add(tripled[:, -1], samples[:, -1], out=odd[:, -1])
    return sums


def _in_uneven_steps(luma: np.ndarray, u: np.ndarray, v: np.ndarray, bits: int, tag: int, full_range: bool,
                     pool: Executor | None) -> np.ndarray:
    """`to_bgr` at any size, each pixel by its filters' taps: hScale's 15-bit chroma of the two nearest
    samples, then the one or two rows yuv2rgb_full_1_c takes (their sum, one row counted twice)."""
    height, width = luma.shape
    chroma_height, chroma_width = u.shape
    columns = _horizontal_taps(chroma_width, width)
    first_rows, second_rows = _vertical_rows(chroma_height, height)
    luma_gain, offset, colours = gains(tag, full_range, bits, 2)
    shift = 7 if bits == 8 else bits - 1  # hScale8To15 / hScale16To15
    out = np.empty((height, width, 3), np.uint8)

    def convert(top: int, bottom: int) -> None:
        for start in range(top, bottom, _BLOCK):
            stop = min(start + _BLOCK, bottom)
            first, second = first_rows[start:stop], second_rows[start:stop]
            low, high = int(first.min()), int(second.max()) + 1
            sums = []
            for plane in (u, v):
                filtered = _horizontally(plane[low:high], columns, shift)
                sums.append(np.add(filtered[first - low], filtered[second - low]))
            base = np.multiply(luma[start:stop], np.int32(luma_gain), dtype=np.int32)
            for channel, colour in enumerate("bgr"):
                u_gain, v_gain, colour_offset = colours[colour]
                value = base + np.int32(offset + colour_offset)  # int32 throughout, wrapping as FFmpeg's
                for chroma_sums, gain in zip(sums, (u_gain, v_gain)):
                    if gain:
                        value += np.multiply(chroma_sums, np.int32(gain), dtype=np.int32)
                np.right_shift(value, _SHIFT, out=value)
                out[start:stop, :, channel] = np.clip(value, 0, 255)

    in_bands(convert, height, 1, pool)
    return out


def _taps(source: int, output: int, unit: int) -> tuple[np.ndarray, np.ndarray]:
    """swscale's bilinear filter from `source` samples up to `output`, chroma sited as swscale's default:
    each output sample's first source sample (outside the plane at its edges) and the next one's weight, of
    `unit` (the first weighs the rest). See the module's docstring."""
    step = ((source << 16) + output // 2) // output
    at = step * (2 * np.arange(output, dtype=np.int64) + 1) - (1 << 16)  # in 2^-17 source samples
    first, past = at >> 17, at & ((1 << 17) - 1)
    second = unit - ((unit * ((1 << 17) - past) + (1 << 16)) >> 17)
    trimmed = (1 << 17) - past <= _TRIMMED
    return np.where(trimmed, first + 1, first), np.where(trimmed, 0, second)


def _horizontal_taps(chroma_width: int, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(first sample, second sample, their 14-bit weights) of each output column, folded inside the plane."""
    first, second_weight = _taps(chroma_width, width, 1 << 14)
    return (np.clip(first, 0, chroma_width - 1), np.clip(first + 1, 0, chroma_width - 1),
            ((1 << 14) - second_weight).astype(np.int32), second_weight.astype(np.int32))


def _vertical_rows(chroma_height: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """The chroma rows yuv2rgb_full_1_c takes for each output row (the same row twice where it takes one):
    the first alone where the second weighs under half, else both; the top rows' first row alone; a filter
    past the last row moved up to the last two."""
    first, second_weight = _taps(chroma_height, height, 1 << 12)
    second = np.where(second_weight < 1 << 11, first, first + 1)
    above, below = first < 0, first >= chroma_height - 1
    first[above], second[above] = 0, 0
    first[below], second[below] = chroma_height - 2, chroma_height - 1
    return first, second


def _horizontally(rows: np.ndarray, columns: tuple[np.ndarray, ...], shift: int) -> np.ndarray:
    """hScale's 15-bit chroma of each output column (int32): the two taps' weighted sum >> `shift`, at most
    2^15 - 1."""
    first, second, first_weight, second_weight = columns
    filtered = np.multiply(rows[:, first], first_weight, dtype=np.int32)
    filtered += np.multiply(rows[:, second], second_weight, dtype=np.int32)
    np.right_shift(filtered, shift, out=filtered)
    return np.minimum(filtered, (1 << 15) - 1, out=filtered)
