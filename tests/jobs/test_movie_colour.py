"""A movie's colour: the source's tags are written, and RGB becomes YUV by the tagged matrix and range;
an untagged source stays untagged and is converted as FFmpeg decodes it (BT.601, limited). Through
`write_movie` directly, no model: synthetic frames and a source without audio."""

import dataclasses
from fractions import Fraction

import av
import numpy as np
import pytest

from facecache.media.movie_out import write_movie
from facecache.media.movie_source import ColourTags, MovieSource

BT709, UNSPECIFIED, SMPTE170M = 1, 2, 6  # AVColorSpace / primaries / transfer values
LIMITED, FULL = 1, 2  # AVCOL_RANGE_MPEG, AVCOL_RANGE_JPEG
KR_KB = {BT709: (0.2126, 0.0722), SMPTE170M: (0.299, 0.114)}


def pictures(count=4, size=(64, 48)):
    """Smooth colour ramps (no chroma detail to lose to 4:2:0), moving a little each frame."""
    width, height = size
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float64)
    return [np.stack([40 + 3 * xx + i, 60 + 3 * yy, 200 - 2 * xx + i], -1).clip(0, 255).astype(np.uint8)
            for i in range(count)]


def expected_y(bgr, matrix, full):
    kr, kb = KR_KB[matrix]
    b, g, r = (bgr[..., channel] / 255.0 for channel in range(3))
    y = kr * r + (1 - kr - kb) * g + kb * b
    return 255 * y if full else 16 + 219 * y


def source(colour: ColourTags, count: int) -> MovieSource:
    return MovieSource(None, Fraction(1, 12800), Fraction(25), tuple(range(0, count * 512, 512)), 512, colour,
                       None, None)


@pytest.mark.parametrize("suffix", [".mp4", ".mov"])
@pytest.mark.parametrize("colour, matrix, full", [
    (ColourTags(BT709, BT709, BT709, LIMITED), BT709, False),
    (ColourTags(SMPTE170M, SMPTE170M, SMPTE170M, FULL), SMPTE170M, True),  # a phone's full-range BT.601
    (ColourTags(), SMPTE170M, False),  # untagged: FFmpeg's default, BT.601 limited
])
def test_tags_are_kept_and_the_matrix_and_range_are_used(tmp_path, suffix, colour, matrix, full):
    frames = pictures()
    report = write_movie(tmp_path / f"out{suffix}", iter(frames), source(colour, len(frames)), range(len(frames)))
    assert report.frames == len(frames) and report.audio == "none"
    with av.open(str(tmp_path / f"out{suffix}")) as movie:
        stream = movie.streams.video[0]
        context = stream.codec_context
        if suffix == ".mov":  # ProRes has only the limited range: a full-range source is converted to it
            full, colour = False, dataclasses.replace(colour, range=LIMITED)
        assert (context.colorspace, context.color_range) == (colour.colorspace, colour.range)
        assert (context.color_primaries, context.color_trc) == (colour.primaries, colour.trc)
        for frame, picture in zip(movie.decode(stream), frames):
            plane = frame.planes[0]
            deep = "10" in frame.format.name
            luma = np.frombuffer(plane, np.uint16 if deep else np.uint8).reshape(plane.height, -1)[:, :plane.width]
            error = np.abs(luma / (4 if deep else 1) - expected_y(picture, matrix, full)).mean()
            assert error < 0.8, error  # the other matrix misses by about 4 here, the other range by about 10


def test_odd_sizes_are_refused_with_what_to_do(tmp_path):
    frames = [np.zeros((48, 63, 3), np.uint8)]
    with pytest.raises(Exception, match="even width") as refused:
        write_movie(tmp_path / "odd.mp4", iter(frames), source(ColourTags(), 1), range(1))
    assert "give --out a folder" in str(refused.value)
    assert list(tmp_path.iterdir()) == []  # no temp file left behind
