"""Media decoding that needs no models: Blender's timing, rotation and colours, sequences, bad files.

Which picture is right is settled against Blender's own renders in tests/blender/test_blender_footage.py;
these tests hold the engine's side of it on footage made here the way phones and recorders write it."""

from fractions import Fraction

import cv2
import numpy as np
import pytest

from facecache.media.picture_rules import RULES
from facecache.media.movie import stream_tags
from facecache.media.reader import STILL_DECODER_ID, MediaError, MediaReader, decoder_id_for
from footage import VFR_SHOWN, frame_number, pattern, write_clip, write_vfr_clip


@pytest.mark.parametrize("container", [("vfr.mp4", None, None), ("vfr.mkv", "matroska", None),
                                       ("vfr.mov", "mov", None),
                                       ("fragmented.mp4", None, {"movflags": "frag_keyframe+empty_moov"})])
def test_a_variable_frame_rate_is_followed_by_the_clock_in_every_container(tmp_path, container):
    name, container_format, options = container
    clip = write_vfr_clip(tmp_path / name, container_format, options)
    with MediaReader(clip) as reader:
        assert reader.info.frame_count == len(VFR_SHOWN) and reader.info.fps == 25
        shown = [frame_number(frame) for _, frame in reader.frames(range(reader.info.frame_count))]
        jumped = [frame_number(frame) for _, frame in reader.frames([12, 13])]
        back = [frame_number(frame) for _, frame in reader.frames([3, 9])]  # a seek backwards
    assert shown == VFR_SHOWN and jumped == VFR_SHOWN[12:14] and back == [VFR_SHOWN[3], VFR_SHOWN[9]]


def test_a_first_timestamp_past_zero_and_b_frames_are_followed_by_presentation_time(tmp_path):
    late = write_clip(tmp_path / "late.mp4", frames=12, pts=[1000 + 40 * i for i in range(12)],
                      time_base=Fraction(1, 1000), codec_options={"bf": "3", "g": "5"})
    ntsc = write_clip(tmp_path / "ntsc.mp4", frames=12, rate=Fraction(30000, 1001), codec_options={"bf": "2"})
    for clip in (late, ntsc):
        with MediaReader(clip) as reader:
            assert reader.info.frame_count == 12
            assert [frame_number(f) for _, f in reader.frames(range(12))] == list(range(12))
            assert [frame_number(f) for _, f in reader.frames([7, 2, 11])] == [7, 2, 11]
    with MediaReader(ntsc) as reader:
        assert reader.info.fps == pytest.approx(29.97, abs=0.001)


@pytest.mark.parametrize("rotation, turned", [(-90, cv2.ROTATE_90_CLOCKWISE), (90, cv2.ROTATE_90_COUNTERCLOCKWISE),
                                              (180, cv2.ROTATE_180)])
def test_a_phone_clip_is_upright_under_blender_5_rules_and_as_coded_under_4_2(tmp_path, rotation, turned):
    clip = write_clip(tmp_path / "phone.mp4", frames=3, size=(96, 64), rotation=rotation, pix_fmt="yuv444p",
                      codec_options={"qp": "0"})
    coded = pattern(1, 96, 64)[..., ::-1]
    with MediaReader(clip, RULES["blender-5"]) as reader:
        ((_, upright),) = reader.frames([1])
        assert (reader.info.width, reader.info.height) == upright.shape[1::-1]
    assert np.abs(upright.astype(int) - cv2.rotate(coded, turned)).mean() < 3
    with MediaReader(clip, RULES["blender-4.2"]) as reader:
        ((_, sideways),) = reader.frames([1])
        assert (reader.info.width, reader.info.height) == (96, 64)
    assert np.abs(sideways.astype(int) - coded).mean() < 3


def test_the_colour_matrix_and_range_come_from_the_stream_tags(tmp_path):
    """The same pixels written tagged BT.709, untagged (BT.601) and full range decode to the same picture
    within the encoder's loss; decoding the BT.709 stream by BT.601, as OpenCV does, is far off."""
    expected = pattern(0, 96, 96)[..., ::-1].astype(int)
    for name, tags in (("hd.mp4", {"colorspace": 1, "color_range": 1}), ("sd.mp4", {}),
                       ("full.mp4", {"pix_fmt": "yuvj444p"}), ("2020.mp4", {"colorspace": 9})):
        clip = write_clip(tmp_path / name, frames=1, codec_options={"qp": "0"}, **{"pix_fmt": "yuv444p", **tags})
        with MediaReader(clip) as reader:
            ((_, frame),) = reader.frames([0])
        error = np.abs(frame.astype(int) - expected)  # 8-bit YUV's own rounding only
        assert error.mean() < 1 and error.max() <= 3, name
    capture = cv2.VideoCapture(str(tmp_path / "hd.mp4"))
    assert np.abs(capture.read()[1].astype(int) - expected).max() > 20


def test_videos_are_keyed_by_the_rules_whose_picture_they_are_and_stills_by_opencv(tmp_path):
    plain = write_clip(tmp_path / "clip.mp4", frames=2, colorspace=1)  # BT.709, shown alike by 5.0 and 5.2
    gamma22 = write_clip(tmp_path / "g22.mp4", frames=2, colorspace=1, transfer=4)  # 5.2 shows it otherwise

    def keys(clip):
        return {name: decoder_id_for(clip, rules, lambda: stream_tags(clip)) for name, rules in RULES.items()}

    assert keys(plain)["blender-5.2"] == keys(plain)["blender-5"] == "ffmpeg-picture-1|blender-5"
    assert len(set(keys(plain).values())) == 3 and len(set(keys(gamma22).values())) == 4
    assert keys(gamma22)["blender-5.2"] == "ffmpeg-picture-1|blender-5.2"
    for clip in (plain, gamma22):
        with MediaReader(clip, RULES["blender-5.2"]) as reader:
            assert reader.decoder_id == keys(clip)["blender-5.2"]

    def unasked():
        raise AssertionError("a still's key needs no stream's tags")

    cv2.imwrite(str(tmp_path / "still.png"), np.zeros((4, 4, 3), np.uint8))
    assert decoder_id_for(tmp_path / "still.png", RULES["blender-5.2"], unasked) == STILL_DECODER_ID == decoder_id_for(
        tmp_path, RULES["blender-5.2"], unasked)


def test_blender_5_2_shows_bt709_with_gamma_2_2_through_its_space_and_5_0_as_decoded(tmp_path):
    clip = write_clip(tmp_path / "g22.mp4", frames=1, colorspace=1, transfer=4, pix_fmt="yuv444p",
                      codec_options={"qp": "0"})
    with MediaReader(clip, RULES["blender-5"]) as reader:
        ((_, decoded),) = reader.frames([0])
    with MediaReader(clip, RULES["blender-5.2"]) as reader:
        ((_, shown),) = reader.frames([0])
    linear = np.power(decoded / 255.0, 2.2)  # the sRGB encoding of the code values to the power 2.2
    expected = np.where(linear <= 0.0031308, 12.92 * linear, 1.055 * np.power(linear, 1 / 2.4) - 0.055) * 255
    assert np.abs(shown - expected).max() <= 0.5 and np.abs(shown.astype(int) - decoded).max() >= 5  # up to 9 apart


def test_a_videos_stream_tags_are_read_once_per_file_version(tmp_path, monkeypatch):
    from facecache.media import identity, movie
    from facecache.media.picture_rules import StreamTags
    from facecache.store.cache import FaceCache

    cache = FaceCache(tmp_path / "cache")
    clip = write_clip(tmp_path / "g22.mp4", frames=1, colorspace=1, transfer=4, pix_fmt="yuv422p")
    assert identity.stream_tags(clip, cache) == StreamTags(1, 4, "yuv422p", 96, False)

    def opened(path):
        raise AssertionError(f"{path} opened again")

    monkeypatch.setattr(movie, "stream_tags", opened)
    assert identity.stream_tags(clip, cache) == StreamTags(1, 4, "yuv422p", 96)


@pytest.mark.parametrize("codec, pix_fmt, size, uneven", [
    ("ffv1", "yuv420p", (97, 96), True), ("ffv1", "yuv420p", (96, 95), True), ("ffv1", "yuv422p", (97, 96), True),
    ("ffv1", "yuv422p", (96, 95), False), ("ffv1", "yuv444p", (97, 95), False), ("libx264", "yuv420p", (96, 96), False),
])
def test_a_video_whose_chroma_steps_unevenly_is_keyed_apart(tmp_path, codec, pix_fmt, size, uneven):
    """Since the engine follows swscale's uneven chroma steps (a subsampled side of odd size), those videos'
    frames are keyed apart from the pictures it made before, and their header says so; the rest keep their key."""
    from facecache.media import identity
    from facecache.media.reader import UNEVEN_CHROMA, VIDEO_DECODER, earlier_decoder_ids
    from facecache.store.cache import FaceCache

    clip = write_clip(tmp_path / f"clip.{'mkv' if codec == 'ffv1' else 'mp4'}", frames=1, codec=codec,
                      pix_fmt=pix_fmt, size=size)
    assert identity.stream_tags(clip, FaceCache(tmp_path / "cache")).uneven_chroma is uneven
    with MediaReader(clip, RULES["blender-5"]) as reader:
        assert reader.decoder_id == f"{VIDEO_DECODER}|blender-5" + (UNEVEN_CHROMA if uneven else "")
        assert (f"{VIDEO_DECODER}|blender-5" in earlier_decoder_ids(reader.decoder_id)) is uneven


def test_opencv_written_mp4_is_read(tmp_path):
    path = tmp_path / "clip.mp4"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 25, (64, 48))
    for i in range(10):
        writer.write(np.full((48, 64, 3), i * 20, np.uint8))
    writer.release()
    with MediaReader(path) as reader:
        assert reader.info.frame_count == 10 and reader.info.fps == 25
        levels = [f.mean() for _, f in reader.frames([0, 5, 9])]
    assert levels == pytest.approx([0, 100, 180], abs=3)  # Blender shows 98 for OpenCV's 100


def test_bad_files_and_folders_are_clear_errors(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(MediaError, match="holds no images"):
        MediaReader(tmp_path / "empty")
    (tmp_path / "x.png").write_bytes(b"not a png")
    with pytest.raises(MediaError, match="save it as PNG or JPEG"):
        MediaReader(tmp_path / "x.png")
    with pytest.raises(MediaError, match="check the path"):
        MediaReader(tmp_path / "missing.mov")
    (tmp_path / "text.mp4").write_bytes(b"hello, not a movie" * 50)
    with pytest.raises(MediaError, match="not a video or image that FFmpeg can read"):
        MediaReader(tmp_path / "text.mp4")
    cv2.imwrite(str(tmp_path / "one.png"), np.zeros((4, 4, 3), np.uint8))
    with MediaReader(tmp_path / "one.png") as reader, pytest.raises(MediaError, match="outside"):
        list(reader.frames([1]))


def test_a_truncated_movie_ends_with_a_message_after_its_last_good_frame(tmp_path):
    # Its index first (as cameras and "fast start" exports write it): the length is declared before the data.
    cut = write_clip(tmp_path / "cut.mp4", frames=40, options={"movflags": "faststart"}, codec_options={"g": "5"})
    data = cut.read_bytes()
    cut.write_bytes(data[:len(data) // 2])
    with MediaReader(cut) as reader:
        assert reader.info.frame_count == 40  # the container still declares its length
        done = []
        with pytest.raises(MediaError, match="truncated or damaged"):
            for index, frame in reader.frames(range(40)):
                done.append(frame_number(frame))
    assert 5 < len(done) < 40 and done == list(range(len(done)))


def test_a_timestamp_half_way_between_two_ticks_rounds_away_from_zero_as_blender_does(tmp_path):
    """29.97 fps in MKV (time base 1/1000): strip frame 15 is at 15 x 33.3667 = 500.5 ms, which Blender's C
    round() takes to 501, the frame recorded at 500.5 ms (Python's round would give 500, the one before)."""
    clip = write_clip(tmp_path / "ntsc.mkv", frames=20, size=(96, 128), rate=Fraction(30000, 1001),
                      container_format="matroska")
    with MediaReader(clip) as reader:
        assert [frame_number(f) for _, f in reader.frames(range(20))] == list(range(20))
        assert [frame_number(f) for _, f in reader.frames([15])] == [15]
