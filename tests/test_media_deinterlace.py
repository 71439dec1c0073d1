"""A strip's Deinterlace option (media/deinterlace.py): FFmpeg's old field filter and Blender's
IMB_filtery, each held against a reference written here pixel by pixel from their definitions; which frames
take which; and the cache keys of a deinterlaced picture. Whether the picture is Blender's is settled
against bpy's renders in tests/blender/test_blender_footage.py."""

from fractions import Fraction

import av
import cv2
import numpy as np
import pytest

from facecache.media.deinterlace import field_filtered, filters_fields, rows_filtered
from facecache.media.movie import stream_tags
from facecache.media.picture_rules import RULES
from facecache.media.reader import STILL_DECODER_ID, VIDEO_DECODER, MediaReader, decoder_id_for
from facecache.media.yuv_to_bgr import to_bgr
from footage import VFR_PTS_MS, VFR_SHOWN, frame_number, write_clip

INTERLACED = {"codec_options": {"x264-params": "interlaced=1:tff=1"}}


def reference_fields(plane: np.ndarray) -> np.ndarray:
    """Odd row n := clip((-p[n-2] + 4 p[n-1] + 2 p[n] + 4 p[n+1] - p[n+2] + 4) / 8, rounded down), rows past
    the edges clamped; even rows kept."""
    rows, columns = plane.shape
    out = plane.copy()
    at = lambda r, c: int(plane[min(max(r, 0), rows - 1), c])  # noqa: E731
    for n in range(1, rows, 2):
        for c in range(columns):
            total = -at(n - 2, c) + 4 * at(n - 1, c) + 2 * at(n, c) + 4 * at(n + 1, c) - at(n + 2, c) + 4
            out[n, c] = min(max(total // 8, 0), 255)
    return out


def reference_rows(bgr: np.ndarray, red: bool) -> np.ndarray:
    """IMB_filtery on a top-down BGR picture: each column of blue, green and (with `red`) red walked from the
    bottom row up, value := (previous + 2 own + next + remainder) // 4, the remainder of each sum carried to
    the next, 2 to start; red kept without `red`."""
    filtered = _reference_columns(bgr)
    if not red:
        filtered[..., 2] = bgr[..., 2]
    return filtered


def _reference_columns(picture: np.ndarray) -> np.ndarray:
    rows = picture.shape[0]
    flat = picture.reshape(rows, -1).astype(int)
    out = np.empty_like(flat)
    for c in range(flat.shape[1]):
        column = flat[::-1, c]  # bottom first
        remainder = 2
        for i in range(rows):
            total = column[max(i - 1, 0)] + 2 * column[i] + column[min(i + 1, rows - 1)] + remainder
            out[rows - 1 - i, c] = total // 4
            remainder = total % 4
    return out.reshape(picture.shape).astype(np.uint8)


def test_the_field_filter_keeps_the_top_field_and_rebuilds_the_bottom_one():
    plane = np.random.default_rng(1).integers(0, 256, (12, 9), dtype=np.uint8)
    plane[3] = 255  # clipped above: 4 x 255 + ... past 2040
    plane[5, :] = 0
    filtered = field_filtered(plane)
    assert np.array_equal(filtered, reference_fields(plane))
    assert np.array_equal(filtered[0::2], plane[0::2])


def test_imb_filtery_carries_its_rounding_down_each_column_from_the_bottom():
    picture = np.random.default_rng(2).integers(0, 256, (11, 7, 3), dtype=np.uint8)
    for red in (False, True):
        assert np.array_equal(rows_filtered(picture, red), reference_rows(picture, red))
        assert np.array_equal(rows_filtered(picture[:1], red), picture[:1])
    assert np.array_equal(rows_filtered(picture, False)[..., 2], picture[..., 2])  # red: Blender's skipped channel


@pytest.mark.parametrize("format_name, size, fields", [
    ("yuv420p", (96, 96), True), ("yuvj422p", (100, 64), True), ("yuv444p", (96, 96), True),
    ("gray8", (8, 8), True), ("yuv420p", (96, 98), False), ("yuv420p", (98, 96), False),
    ("yuv420p10le", (96, 96), False), ("nv12", (96, 96), False), ("rgb24", (96, 96), False)])
def test_fields_are_filtered_before_the_conversion_only_where_blenders_deinterlacer_takes_the_frame(
        format_name, size, fields):
    assert filters_fields(format_name, *size) == fields


def planes_of(frame) -> list[np.ndarray]:
    """Y, U, V of an 8-bit 4:2:0 frame, without padding."""
    height, width = frame.height, frame.width
    sizes = [(height, width), (height // 2, width // 2), (height // 2, width // 2)]
    return [np.frombuffer(plane, np.uint8).reshape(-1, plane.line_size)[:rows, :columns].copy()
            for plane, (rows, columns) in zip(frame.planes, sizes)]


@pytest.mark.parametrize("rules_name", ["blender-5", "blender-4.2"])
def test_an_interlaced_clip_is_shown_with_each_planes_fields_filtered_then_converted(tmp_path, rules_name):
    rules = RULES[rules_name]
    clip = write_clip(tmp_path / "fields.mp4", frames=3, **INTERLACED)
    with av.open(str(clip)) as container:
        decoded = [frame for _, frame in zip(range(3), container.decode(video=0))]
    with MediaReader(clip, rules, deinterlace=True) as reader:
        shown = [frame for _, frame in reader.frames(range(3))]
    with MediaReader(clip, rules) as reader:
        woven = [frame for _, frame in reader.frames(range(3))]
    for frame, ours, weave in zip(decoded, shown, woven):
        expected = av.VideoFrame(frame.width, frame.height, "yuv420p")
        for plane, values in zip(expected.planes, (reference_fields(p) for p in planes_of(frame))):
            np.frombuffer(plane, np.uint8).reshape(-1, plane.line_size)[:values.shape[0], :values.shape[1]] = values
        expected.colorspace, expected.color_range = frame.colorspace, frame.color_range
        assert np.array_equal(ours, to_bgr(expected, rules))
        assert not np.array_equal(ours, weave)  # the pattern's edges fall on odd rows


def test_a_frame_the_field_filter_refuses_is_converted_then_filtered_down_its_columns(tmp_path):
    clip = write_clip(tmp_path / "odd.mp4", frames=2, size=(98, 96), **INTERLACED)  # 98 columns: no field filter
    rules = RULES["blender-5"]
    with MediaReader(clip, rules, deinterlace=True) as reader, MediaReader(clip, rules) as woven:
        for (_, ours), (_, weave) in zip(reader.frames(range(2)), woven.frames(range(2))):
            assert np.array_equal(ours, reference_rows(weave, red=False))


def test_a_deinterlaced_picture_is_keyed_apart_and_a_woven_one_as_before(tmp_path):
    clip = write_clip(tmp_path / "fields.mp4", frames=2, **INTERLACED)
    rules = RULES["blender-5"]
    with MediaReader(clip, rules) as woven, MediaReader(clip, rules, deinterlace=True) as shown:
        assert woven.decoder_id == f"{VIDEO_DECODER}|blender-5"
        assert shown.decoder_id != woven.decoder_id
        assert shown.decoder_id == decoder_id_for(clip, rules, lambda: stream_tags(clip), deinterlace=True)
    still = tmp_path / "still.png"
    cv2.imwrite(str(still), np.zeros((8, 8, 3), np.uint8))
    with MediaReader(still) as woven, MediaReader(still, deinterlace=True) as shown:
        assert woven.decoder_id == STILL_DECODER_ID and shown.decoder_id != woven.decoder_id
        assert shown.decoder_id == decoder_id_for(still, rules, lambda: None, deinterlace=True)


@pytest.mark.parametrize("alpha", [False, True])
def test_an_image_strip_with_deinterlace_set_shows_imb_filterys_rows(tmp_path, alpha):
    """Blender filters an image strip's picture with IMB_filtery too; red as well where the image has alpha."""
    picture = np.random.default_rng(3).integers(0, 256, (10, 6, 3), dtype=np.uint8)
    for number in range(2):  # a still, and a folder of frames
        cv2.imwrite(str(tmp_path / f"frame{number}.png"),
                    np.dstack([picture, np.full(picture.shape[:2], 255, np.uint8)]) if alpha else picture)
    for media in (tmp_path / "frame0.png", tmp_path):
        with MediaReader(media, deinterlace=True) as reader:
            for _, frame in reader.frames([0]):
                assert np.array_equal(frame, reference_rows(picture, red=alpha))


def test_on_a_variable_frame_rate_the_field_filter_reads_the_frame_decoded_last_as_blender_does(tmp_path):
    """Blender's field filter is handed the frame it decoded last (pFrame), even where the clock shows the one
    before it: a strip with Deinterlace set shows the next recorded frame there (measured on bpy 5.0.1)."""
    clip = write_clip(tmp_path / "vfr.mp4", frames=len(VFR_PTS_MS), pts=VFR_PTS_MS, time_base=Fraction(1, 1000),
                      **INTERLACED)
    with MediaReader(clip, RULES["blender-5"], deinterlace=True) as reader:
        shown = [frame_number(frame) for _, frame in reader.frames(range(reader.info.frame_count))]
    decoded_last = [next((i for i, pts in enumerate(VFR_PTS_MS) if pts >= 40 * n), len(VFR_PTS_MS) - 1)
                    for n in range(len(shown))]
    assert shown == decoded_last and shown != VFR_SHOWN
