"""The decoder's threads: a stream cut into slices is threaded by slices, others as Blender does, and the
pictures are the same whichever threads decode them, in order and by jumps (media.decoder_threads,
media.movie)."""

import av
import pytest

from facecache.media import decoder_threads
from facecache.media.picture_rules import RULES
from facecache.media.reader import MediaReader
from facecache.media.yuv_to_bgr import to_bgr
from footage import write_clip

SLICED = {"x264-params": "slices=4"}
ONE_SLICE = {"x264-params": "sliced-threads=0:slices=1"}


@pytest.mark.parametrize("name, container_format, codec, codec_options, expected", [
    ("sliced.mp4", None, "libx264", SLICED, "SLICE"),  # length-prefixed NAL units (avcC)
    ("sliced.ts", "mpegts", "libx264", SLICED, "SLICE"),  # Annex B start codes
    ("one_slice.mp4", None, "libx264", ONE_SLICE, "AUTO"),
    ("one_slice.mkv", "matroska", "libx264", ONE_SLICE, "AUTO"),
    ("mpeg4.mp4", None, "mpeg4", {}, "AUTO"),  # slices not counted: FFmpeg's own choice
])
def test_a_stream_cut_into_slices_is_threaded_by_slices(tmp_path, name, container_format, codec, codec_options,
                                                        expected):
    clip = write_clip(tmp_path / name, frames=4, size=(128, 128), codec=codec, container_format=container_format,
                      codec_options=codec_options)
    with av.open(str(clip)) as container:
        assert decoder_threads.thread_type(container, container.streams.video[0]) == expected


def test_the_pictures_are_the_same_whatever_threads_decode_them(tmp_path):
    clip = write_clip(tmp_path / "sliced.mp4", frames=30, size=(128, 128), codec_options={**SLICED, "g": "8"})
    rules = RULES["blender-5"]
    with av.open(str(clip)) as container:  # one thread
        container.streams.video[0].thread_type = "NONE"
        plain = [to_bgr(frame, rules).tobytes() for frame in container.decode(video=0)]
    with MediaReader(clip, rules) as reader:
        assert reader._movie.thread_type == "SLICE"
        in_order = [frame.tobytes() for _, frame in reader.frames(range(30))]
        jumps = [frame.tobytes() for _, frame in reader.frames([25, 3, 4, 17, 29])]
    assert len(plain) == 30 and in_order == plain
    assert jumps == [plain[i] for i in (25, 3, 4, 17, 29)]


@pytest.mark.parametrize("name, codec, codec_options, ahead", [
    ("one_slice.mp4", "libx264", ONE_SLICE, True),  # frame threads
    ("sliced.mp4", "libx264", SLICED, False),  # slice threads: decoded while the caller waits
    ("mpeg2.mkv", "mpeg2video", {}, False),  # FFmpeg's MPEG-2 decoder has slice threads alone
])
def test_frame_threads_decode_ahead_so_one_core_converts(tmp_path, name, codec, codec_options, ahead):
    clip = write_clip(tmp_path / name, frames=4, size=(128, 128), codec=codec, codec_options=codec_options)
    with MediaReader(clip, RULES["blender-5"]) as reader:
        assert reader._movie._decodes_ahead == ahead
        assert len(list(reader.frames(range(4)))) == 4
        assert (reader._movie._pool is None) == ahead  # the conversion's threads, made where none decode ahead
