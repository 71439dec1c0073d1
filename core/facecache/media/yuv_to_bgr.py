"""A decoded video frame as the BGR picture Blender shows: its colour matrix, range, chroma and rotation.

Blender 5.x converts with swscale's SWS_POINT | SWS_FULL_CHR_H_INT | SWS_ACCURATE_RND: each pixel takes
the chroma sample it lies in (at an odd size, the one swscale's uneven steps give it: `_point_samples`), and
the matrix is applied exactly and rounded. The swscale that PyAV ships
(FFmpeg 8) does not give that picture with those flags (it bleeds chroma one pixel at colour edges: up to
255/255 off bpy 5.0.1's render), so planar YUV is converted here: the chroma planes repeated onto the luma
grid, then one 3x4 matrix (cv2.transform: OpenCV's fixed point, 10 fractional bits, rounded and saturated),
a block of rows at a time (what each step hands the next stays in the core's cache: 1080p 1.7 ms of CPU
where two whole bands took 2.4), in bands of rows on a thread each where a pool is given. That matches bpy
5.0.1's render within 1/255 (tests/blender/test_blender_footage.py).

Blender 4.2 converts with FFmpeg 6.1's swscale, flags SWS_BILINEAR | SWS_FULL_CHR_H_INT. PyAV's swscale with
those flags gives its picture to the bit for 8-bit 4:2:0 and 4:2:2 (6.1's "unscaled" converter) and for
what 6.1 filters horizontally alone (4:2:2 and 4:4:4 beyond 8 bits), but not where 6.1 filters the chroma
vertically (4:2:0 beyond 8 bits, 4:4:0): that is computed here as 6.1 does (swscale61.py). And FFmpeg 8
converts a frame flagged interlaced field by field (each field's chroma from its own rows), 6.1 as one
picture: an interlaced 8-bit 4:2:0 frame is handed to swscale as a progressive copy. 4.2's Windows build
converts 8-bit 4:2:2 at even heights with 6.1's C converter, in pairs of rows: each odd row takes the even
row's chroma (`PictureRules.paired_rows`), so those chroma rows are copied so before swscale converts it.
Other pixel formats (RGB, palette, alpha, NV12) go through swscale with the rules' flags.
`to_bgr` is the one place that chooses.
"""

from __future__ import annotations

from concurrent.futures import Executor
from typing import TYPE_CHECKING, Sequence

import cv2
import numpy as np

from facecache.media import swscale61
from facecache.media.deinterlace import field_filtered, filters_fields, plane_sizes, rows_filtered
from facecache.media.display_spaces import FROM_BYTES, display_transform
from facecache.media.picture_rules import PictureRules, converted_in_row_pairs
from facecache.media.row_bands import in_bands, merged_spans

if TYPE_CHECKING:  # PyAV is imported where a movie is opened (media.movie.import_av)
    import av

# AVColorSpace tags -> (Kr, Kb). Untagged (2) and anything else is BT.601, as swscale's default is.
_LUMA_WEIGHTS = {1: (0.2126, 0.0722), 4: (0.30, 0.11), 5: (0.299, 0.114), 6: (0.299, 0.114),
                 7: (0.212, 0.087), 9: (0.2627, 0.0593), 10: (0.2627, 0.0593)}
_BT601 = 5
_FULL_RANGE = 2  # AVCOL_RANGE_JPEG
# Planar YUV, converted here: name -> (bits, horizontal and vertical chroma subsampling).
_PLANAR_YUV = {f"{name}{suffix}": (bits, sub) for name, sub in (("yuv420p", (2, 2)), ("yuv422p", (2, 1)),
                                                                ("yuv444p", (1, 1)), ("yuv440p", (1, 2)))
               for bits, suffix in ((8, ""), (10, "10le"), (12, "12le"))}
# With alpha (ProRes 4444, VP9 with alpha): the colour planes alone (the engine's frames are BGR).
_PLANAR_YUV.update({f"yuva{n[3:]}": layout for n, layout in list(_PLANAR_YUV.items())
                    if not n.startswith(("yuv440", "yuvj"))})
_PLANAR_YUV.update({f"yuvj{n[3:]}": (8, sub) for n, (bits, sub) in list(_PLANAR_YUV.items()) if bits == 8})
# Blender's swscale flags (5.x, 4.2) by name; PyAV before 16 offers the interpolation alone.
_SWSCALE_FLAGS = {True: ("POINT", "FULL_CHR_H_INT", "ACCURATE_RND"), False: ("BILINEAR", "FULL_CHR_H_INT")}
_FLOAT_WHITE = 65280 / 65535
_BLOCK_BYTES = 256 * 1024  # the merged (Y, Cb, Cr) rows of one block: within a core's own cache
# Blender's quarter turns (clockwise degrees) as OpenCV's.
_TURNS = {90: cv2.ROTATE_90_CLOCKWISE, 180: cv2.ROTATE_180, 270: cv2.ROTATE_90_COUNTERCLOCKWISE}


def colour_tag(frame: av.VideoFrame) -> int:
    """The AVColorSpace Blender converts the frame by: its own tag where swscale knows it, else BT.601."""
    tag = frame.colorspace if frame.colorspace in _LUMA_WEIGHTS else _BT601
    return _BT601 if tag == 6 else tag  # SMPTE 170M is BT.601's matrix


def is_full_range(frame: av.VideoFrame) -> bool:
    return frame.color_range == _FULL_RANGE or frame.format.name.startswith("yuvj")


def quarter_turns(frame: av.VideoFrame, rules: PictureRules) -> int:
    """The clockwise turn (0, 90, 180 or 270 degrees) Blender gives the frame: the display matrix's, under
    rules that apply it (a mirror or an angle between quarter turns is ignored, as Blender does)."""
    turn = (-int(round(frame.rotation))) % 360 if rules.rotate else 0
    return turn if turn in _TURNS else 0


def to_bgr(frame: av.VideoFrame, rules: PictureRules, pool: Executor | None = None,
           deinterlace: bool = False, rows: Sequence[tuple[int, int]] | None = None) -> np.ndarray:
    """The frame as Blender shows it under `rules`, as 8-bit BGR (height, width, 3); `pool` (threads, one per
    core) shares the conversion out. `deinterlace`: as the strip's Deinterlace option shows it (deinterlace.py:
    its fields filtered before the conversion where Blender does, its converted picture's rows after).
    `rows`: the spans of rows (top, bottom) the caller reads alone (a warm swap reads its faces); where the
    conversion is planar YUV's own and the picture unturned, the other rows are left 0."""
    fields = deinterlace and filters_fields(frame.format.name, frame.width, frame.height)
    turn = quarter_turns(frame, rules)
    bgr = _converted(frame, _field_filtered(frame) if fields else frame, rules, pool,
                     None if deinterlace or turn else rows)
    if deinterlace and not fields:
        bgr = rows_filtered(bgr, red=any(component.is_alpha for component in frame.format.components))
    return cv2.rotate(bgr, _TURNS[turn]) if turn else bgr


def _converted(frame: av.VideoFrame, pixels: av.VideoFrame, rules: PictureRules, pool: Executor | None,
               rows: Sequence[tuple[int, int]] | None = None) -> np.ndarray:
    """`pixels` (the frame, or its field-filtered copy) converted by `frame`'s tags, unrotated; `rows` as
    `to_bgr`'s."""
    layout = _PLANAR_YUV.get(frame.format.name)
    tag, full_range = colour_tag(frame), is_full_range(frame)
    shown_through = display_transform(frame.color_primaries, frame.color_trc, rules.display_spaces)
    if rules.nearest_chroma and layout is not None and shown_through is not None:
        from_bytes = layout[0] == 8 and (frame.color_primaries, frame.color_trc) in FROM_BYTES
        decoded = (_planar_yuv_to_bgr(pixels, tag, full_range, *layout, pool) / 255.0 if from_bytes else
                   np.clip(_planar_yuv_to_bgr(pixels, tag, full_range, *layout, pool, as_float=True)
                           .astype(np.float64), 0, 1))
        return np.rint(shown_through(decoded[..., ::-1])[..., ::-1] * 255).astype(np.uint8)
    if rules.nearest_chroma and layout is not None:
        return _planar_yuv_to_bgr(pixels, tag, full_range, *layout, pool, spans=rows)
    if layout is not None and swscale61.takes_scaled_path(*layout, frame.width, frame.height):
        bits, (step_x, _) = layout
        return swscale61.to_bgr(*_planes(pixels, *layout), bits, step_x, tag, full_range, pool)
    if rules.paired_rows and converted_in_row_pairs(frame.format.name, frame.height):
        progressive = _rows_paired(pixels)
    else:
        progressive = _progressive(pixels) if layout is not None and layout[1][1] == 2 else pixels
    return progressive.reformat(format="bgr24", src_colorspace=tag, src_color_range=_FULL_RANGE if full_range else 1,
                                interpolation=_swscale_flags(rules)).to_ndarray()


def _swscale_flags(rules: PictureRules):
    from av.video.reformatter import Interpolation

    names = _SWSCALE_FLAGS[rules.nearest_chroma]
    if not all(hasattr(Interpolation, name) for name in names):
        return names[0]
    flags = getattr(Interpolation, names[0])
    for name in names[1:]:
        flags |= getattr(Interpolation, name)
    return flags


def _progressive(frame: av.VideoFrame) -> av.VideoFrame:
    """A frame flagged interlaced, copied into one that is not (the same planes): FFmpeg 8's swscale would
    convert it field by field, FFmpeg 6.1's (Blender 4.2's) converts the woven picture."""
    if not getattr(frame, "interlaced_frame", False):
        return frame
    return _copy_planes(frame, lambda plane, number: plane)


def _rows_paired(frame: av.VideoFrame) -> av.VideoFrame:
    """A copy of a 4:2:2 frame (not flagged interlaced) whose odd rows hold the chroma of the even row above
    them: what FFmpeg 6.1's C converter shows, taking rows in pairs with the chroma stride doubled."""
    def paired(plane: np.ndarray, number: int) -> np.ndarray:
        if number == 0:
            return plane
        plane = plane.copy()
        plane[1::2] = plane[:-1:2]
        return plane

    return _copy_planes(frame, paired)


def _field_filtered(frame: av.VideoFrame) -> av.VideoFrame:
    """A copy of the frame (not flagged interlaced, without its tags: the conversion takes them from the
    frame) whose planes have their fields filtered, as Blender's Deinterlace option does."""
    sizes = plane_sizes(frame.format.name, frame.width, frame.height)

    def filtered(plane: np.ndarray, number: int) -> np.ndarray:
        if number >= len(sizes):
            return plane
        columns, rows = sizes[number]
        plane = plane.copy()
        plane[:rows, :columns] = field_filtered(plane[:rows, :columns])
        return plane

    return _copy_planes(frame, filtered)


def _copy_planes(frame: av.VideoFrame, change) -> av.VideoFrame:
    """A new frame of the same format and size holding `change(plane rows, plane number)` of each plane's
    bytes (rows of the shorter line size of the two frames)."""
    copy = type(frame)(frame.width, frame.height, frame.format.name)
    for number, (source, target) in enumerate(zip(frame.planes, copy.planes)):
        row_bytes = min(source.line_size, target.line_size)
        rows = min(source.buffer_size // source.line_size, target.buffer_size // target.line_size)
        np.frombuffer(target, np.uint8).reshape(-1, target.line_size)[:rows, :row_bytes] = \
            change(np.frombuffer(source, np.uint8).reshape(-1, source.line_size)[:rows, :row_bytes], number)
    return copy


def _planes(frame: av.VideoFrame, bits: int, subsampling: tuple[int, int]) -> list[np.ndarray]:
    """Views of the Y, U and V planes (8-bit: uint8, else uint16), without their padding."""
    height, width = frame.height, frame.width
    dtype = np.uint8 if bits == 8 else np.uint16
    step_x, step_y = subsampling
    planes = []
    for channel, plane in enumerate(frame.planes[:3]):
        rows, columns = (height, width) if channel == 0 else (-(-height // step_y), -(-width // step_x))
        planes.append(np.frombuffer(plane, dtype).reshape(-1, plane.line_size // dtype().itemsize)[:rows, :columns])
    return planes


def _planar_yuv_to_bgr(frame: av.VideoFrame, tag: int, full_range: bool, bits: int, subsampling: tuple[int, int],
                       pool: Executor | None, as_float: bool = False,
                       spans: Sequence[tuple[int, int]] | None = None) -> np.ndarray:
    """8-bit BGR by the colour matrix `tag` and range; with `as_float`, float32 BGR in 0-1 (unclipped), for a
    display transform to follow. With `spans` (of rows: top, bottom), those rows alone (one thread), the rest 0."""
    height, width = frame.height, frame.width
    step_x, step_y = subsampling
    planes = _planes(frame, bits, subsampling)
    matrix = _bgr_matrix(tag, full_range, bits)
    if bits > 8:  # Blender's float path: swscale puts white at 255 x 256 of 65535 (measured on bpy 5.0.1)
        matrix *= _FLOAT_WHITE
    if as_float:
        matrix /= 255
    out = (np.empty if spans is None else np.zeros)((height, width, 3), np.float32 if as_float else np.uint8)
    block = _block_rows(width, step_y)
    # at an odd size swscale's point filter steps unevenly: each pixel's chroma sample looked up
    uneven = height % step_y or width % step_x
    samples_of_rows = _point_samples(planes[1].shape[0], height) if uneven else None
    samples_of_columns = _point_samples(planes[1].shape[1], width) if uneven else None

    def convert(first: int, last: int) -> None:  # rows [first, last), first a multiple of step_y
        # a few rows at a time, through buffers made once: what a block's steps pass on stays in the cache
        chroma = [np.empty((block, width), planes[0].dtype) for _ in planes[1:]]
        merged = np.empty((block, width, 3), planes[0].dtype)
        for top in range(first, last, block):
            bottom = min(top + block, last)
            rows = bottom - top
            for plane, repeated in zip(planes[1:], chroma):
                if uneven:
                    np.take(plane[samples_of_rows[top:bottom]], samples_of_columns, axis=1, out=repeated[:rows])
                else:
                    _repeat(plane[top // step_y:-(-bottom // step_y)], step_x, step_y, width, repeated)
            cv2.merge([planes[0][top:bottom], *(repeated[:rows] for repeated in chroma)], dst=merged[:rows])
            if as_float:
                out[top:bottom] = cv2.transform(merged[:rows].astype(np.float32), matrix)
            elif bits == 8:  # straight into the frame (a block of whole rows is contiguous)
                cv2.transform(merged[:rows], matrix, dst=out[top:bottom])
            else:
                np.minimum(cv2.transform(merged[:rows], matrix), 255, out=out[top:bottom], casting="unsafe")

    if spans is None:
        in_bands(convert, height, step_y, pool)
    else:
        for first, last in _row_spans(spans, step_y, height):
            convert(first, last)
    return out


def _row_spans(spans: Sequence[tuple[int, int]], step: int, height: int) -> list[tuple[int, int]]:
    """`spans` of rows within the picture, widened to multiples of `step` (a chroma row's luma rows), sorted and
    merged."""
    return merged_spans((max(top, 0) // step * step, min(-(-bottom // step) * step, height))
                        for top, bottom in spans if bottom > max(top, 0) and top < height)


def _block_rows(width: int, step_y: int) -> int:
    """Rows converted at a time: a multiple of `step_y` whose merged planes take about _BLOCK_BYTES."""
    return max(_BLOCK_BYTES // (width * 3) // step_y, 1) * step_y


def _repeat(samples: np.ndarray, step_x: int, step_y: int, width: int, out: np.ndarray) -> None:
    """Chroma samples onto the luma grid, each repeated over the pixels it covers (nearest): into the first
    step_y rows of `out` a sample row, `width` columns."""
    if step_x == 2 and samples.dtype == np.uint8:  # two equal bytes make one uint16: a row doubled in one pass
        samples = np.multiply(samples, np.uint16(257), dtype=np.uint16).view(np.uint8)
    elif step_x == 2:
        samples = np.repeat(samples, 2, axis=1)
    out[:samples.shape[0] * step_y].reshape(samples.shape[0], step_y, width)[:] = samples[:, None, :width]


def _point_samples(samples: int, size: int) -> np.ndarray:
    """The chroma sample swscale's point filter (SWS_POINT, chroma sited as its default) gives each of `size`
    pixels from `samples` (initFilter; the facts, not the code): pixel i takes ((step >> 1) + i x step) >> 16,
    step being the 16.16 increment (samples << 16) / size, rounded. That is i // 2 where size is twice samples;
    at an odd size the steps are uneven, so from the middle on pixels take the next sample early."""
    step = ((samples << 16) + size // 2) // size
    return np.minimum(((step >> 1) + step * np.arange(size, dtype=np.int64)) >> 16, samples - 1)


def _bgr_matrix(tag: int, full_range: bool, bits: int) -> np.ndarray:
    """The 3x4 matrix from (Y, Cb, Cr) code values to 8-bit B, G, R (ITU-R BT.601/709/2020 equations)."""
    kr, kb = _LUMA_WEIGHTS[tag]
    kg = 1.0 - kr - kb
    scale = float(1 << (bits - 8))
    luma_range, chroma_range, luma_black = ((255.0, 255.0, 0.0) if full_range else (219.0, 224.0, 16.0))
    luma_range, chroma_range, luma_black = luma_range * scale, chroma_range * scale, luma_black * scale
    chroma_zero = 128.0 * scale
    # R = Y' + 2(1-Kr) Cr', B = Y' + 2(1-Kb) Cb', G = (Y' - Kr R - Kb B) / Kg, with Y' in 0-1 and Cb', Cr' in +-0.5
    rows = {"r": (1.0, 0.0, 2 * (1 - kr)), "g": (1.0, -2 * kb * (1 - kb) / kg, -2 * kr * (1 - kr) / kg),
            "b": (1.0, 2 * (1 - kb), 0.0)}
    matrix = np.zeros((3, 4))
    for row, colour in enumerate("bgr"):
        y_gain, cb_gain, cr_gain = rows[colour]
        gains = np.array([y_gain / luma_range, cb_gain / chroma_range, cr_gain / chroma_range]) * 255.0
        matrix[row, :3] = gains
        matrix[row, 3] = -(gains[0] * luma_black + (gains[1] + gains[2]) * chroma_zero)
    return matrix
