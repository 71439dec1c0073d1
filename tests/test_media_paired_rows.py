"""Blender 4.2 on Windows (rules "blender-4.2-windows"): FFmpeg 6.1's C converter takes 8-bit 4:2:2 in pairs
of rows, each odd row with the chroma of the even row above it. Those frames alone are shown and keyed apart
from 4.2's on Linux and macOS; every other stream keeps 4.2's picture and cache key, so a Linux render node
and a Windows workstation share them."""

import av
import numpy as np
import pytest

from facecache import choices
from facecache.media.movie import stream_tags
from facecache.media.picture_rules import RULES, StreamTags
from facecache.media.reader import MediaReader, decoder_id_for
from facecache.media.yuv_to_bgr import to_bgr
from footage import write_clip

WINDOWS, LINUX = RULES["blender-4.2-windows"], RULES["blender-4.2"]
EVEN_CHROMA, ODD_CHROMA = (90, 200), (200, 60)  # (Cb, Cr): a violet and an orange of equal luma


def striped_frame(pix_fmt: str, width: int, height: int) -> av.VideoFrame:
    """A frame of one grey luma whose chroma rows alternate: EVEN_CHROMA on even rows, ODD_CHROMA on odd ones
    (per chroma row: 4:2:0's rows are shared by two picture rows)."""
    frame = av.VideoFrame(width, height, pix_fmt)
    dtype = np.uint16 if pix_fmt.endswith("le") else np.uint8
    scale = 4 if pix_fmt.endswith("10le") else 1
    for number, plane in enumerate(frame.planes[:3]):
        rows = np.frombuffer(plane, dtype).reshape(-1, plane.line_size // dtype().itemsize)
        if number == 0:
            rows[:] = 120 * scale
        else:
            rows[0::2], rows[1::2] = EVEN_CHROMA[number - 1] * scale, ODD_CHROMA[number - 1] * scale
    for plane in frame.planes[3:]:  # alpha: opaque
        np.frombuffer(plane, dtype)[:] = 255 * scale
    frame.colorspace, frame.color_range = 1, 1
    return frame


@pytest.mark.parametrize("pix_fmt", ["yuv422p", "yuvj422p"])
def test_an_8_bit_422_frame_shows_each_odd_row_with_the_chroma_of_the_even_row_above(pix_fmt):
    frame = striped_frame(pix_fmt, 64, 48)
    windows, linux = to_bgr(frame, WINDOWS).astype(int), to_bgr(frame, LINUX).astype(int)
    assert np.array_equal(windows[1::2], windows[0::2])  # the odd rows: the even rows' colour
    assert np.array_equal(windows[0::2], linux[0::2])  # the even rows: as on Linux
    assert np.abs(linux[1::2] - linux[0::2]).max() > 100  # on Linux, each row its own chroma
    assert np.array_equal(linux[1::2], to_bgr(striped_frame(pix_fmt, 64, 48), LINUX)[1::2])  # frame untouched


@pytest.mark.parametrize("pix_fmt, size", [("yuv420p", (64, 48)), ("yuv422p10le", (64, 48)), ("yuva422p", (64, 48)),
                                           ("yuv444p", (64, 48)), ("yuv422p", (64, 47))])
def test_other_frames_are_shown_as_blender_4_2_on_linux_shows_them(pix_fmt, size):
    """4:2:0, beyond 8 bits, with alpha, 4:4:4, and 8-bit 4:2:2 at an odd height (6.1's general path)."""
    frame = striped_frame(pix_fmt, *size)
    assert np.array_equal(to_bgr(frame, WINDOWS), to_bgr(frame, LINUX))


def test_the_key_is_4_2_s_but_for_8_bit_422_at_an_even_height():
    def key(tags):
        return WINDOWS.key_name(lambda: tags)

    assert key(StreamTags(1, 1, "yuv422p", 1080)) == key(StreamTags(2, 2, "yuvj422p", 96)) == "blender-4.2-windows"
    for tags in (StreamTags(1, 1, "yuv420p", 1080), StreamTags(1, 1, "yuv422p10le", 1080),
                 StreamTags(9, 18, "yuv444p", 2160), StreamTags(1, 1, "yuva422p", 1080),
                 StreamTags(1, 1, "yuv422p", 1081), StreamTags(2, 2, "", 0)):
        assert key(tags) == "blender-4.2", tags


def test_clips_are_keyed_apart_only_where_windows_4_2_shows_them_otherwise(tmp_path):
    clips = {"yuv420p": write_clip(tmp_path / "420.mp4", frames=2, colorspace=1),
             "yuv422p": write_clip(tmp_path / "422.mp4", frames=2, colorspace=1, pix_fmt="yuv422p"),
             "yuvj422p": write_clip(tmp_path / "mjpeg.avi", frames=2, codec="mjpeg", pix_fmt="yuvj422p"),
             "yuv444p": write_clip(tmp_path / "444.mp4", frames=2, pix_fmt="yuv444p")}
    for pix_fmt, clip in clips.items():
        assert stream_tags(clip).pixel_format == pix_fmt
        keys = {name: decoder_id_for(clip, rules, lambda: stream_tags(clip)) for name, rules in RULES.items()}
        apart = pix_fmt.endswith("422p")
        assert keys["blender-4.2-windows"] == ("ffmpeg-picture-1|blender-4.2-windows" if apart
                                               else keys["blender-4.2"])
        # every other rules' keys are as they were
        assert [keys[name] for name in ("blender-5.2", "blender-5", "blender-4.5", "blender-4.2")] == [
            f"ffmpeg-picture-1|{name}" for name in ("blender-5", "blender-5", "blender-4.5", "blender-4.2")]
        with MediaReader(clip, WINDOWS) as reader:
            assert reader.decoder_id == keys["blender-4.2-windows"]


def test_4_2_chooses_its_windows_rules_on_windows_alone():
    assert choices.picture_rules_for((4, 2, 23), "win32") == "blender-4.2-windows"
    assert choices.picture_rules_for((4, 3, 2), "win32") == "blender-4.2-windows"
    for platform in ("linux", "darwin"):
        assert choices.picture_rules_for((4, 2, 23), platform) == "blender-4.2"
    assert choices.picture_rules_for((4, 5, 15), "win32") == "blender-4.5"
    assert choices.picture_rules_for((5, 0, 1), "win32") == "blender-5"
