"""What a finished movie takes from its source movie, read with PyAV (FFmpeg's own libraries): the
frames' timestamps, the colour tags of the video stream, and which audio stream to carry over.

Nothing is decoded. The engine's frame N is what Blender's strip shows at its frame N (media/movie.py), so
frame N keeps that frame's time on Blender's clock: N / fps from the stream's start, fps being FFmpeg's
guess, as Blender reads it (a variable frame rate comes out constant, each frame as Blender shows it). The
tags are the stream's parameters, except where the picture rules show an HDR clip through Blender's view:
those frames are sRGB pictures, tagged BT.709.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from facecache.errors import FaceCacheError
from facecache.media.display_spaces import display_transform
from facecache.media.movie import c_round
from facecache.media.picture_rules import NEWEST, PictureRules

# AVColorSpace values that swscale has RGB->YUV coefficients for (BT.709, FCC, BT.601 twice,
# SMPTE 240M, BT.2020 non-constant); others (unspecified included) convert with its default, BT.601,
# which is also what an untagged stream is decoded with.
_SWSCALE_MATRICES = frozenset({1, 4, 5, 6, 7, 9})
_UNSPECIFIED = 2  # AVCOL_SPC/PRI/TRC_UNSPECIFIED
_RANGE_FULL = 2  # AVCOL_RANGE_JPEG; 1 is limited ("tv"), 0 unspecified (converted as limited)
_RANGE_LIMITED = 1
_BT709 = 1  # AVCOL_SPC_BT709, AVCOL_PRI_BT709 and AVCOL_TRC_BT709 alike


class MovieSourceError(FaceCacheError):
    """The source movie cannot give a finished movie its timing (no video stream PyAV can read)."""


@dataclass(frozen=True)
class ColourTags:
    """The video stream's colour description, FFmpeg's enum values (AVColorSpace and friends)."""

    colorspace: int = _UNSPECIFIED
    primaries: int = _UNSPECIFIED
    trc: int = _UNSPECIFIED
    range: int = 0

    @property
    def matrix(self) -> int:
        """The RGB->YUV matrix to convert with: the tagged one where swscale has it, else its default."""
        return self.colorspace if self.colorspace in _SWSCALE_MATRICES else 5

    @property
    def written_colorspace(self) -> int:
        """The matrix tag of the output: the source's where it was converted with, else unspecified."""
        return self.colorspace if self.colorspace in _SWSCALE_MATRICES else _UNSPECIFIED

    @property
    def full_range(self) -> bool:
        return self.range == _RANGE_FULL

    def as_dict(self) -> dict:
        return {"colorspace": self.colorspace, "primaries": self.primaries, "trc": self.trc, "range": self.range}


@dataclass(frozen=True)
class MovieSource:
    path: Path
    time_base: Fraction   # of the video stream; every frame time below is in it
    rate: Fraction        # the video's average frame rate
    frame_times: tuple[int, ...]  # the presentation time of each frame the engine decodes, by index
    frame_duration: int   # one frame at `rate`, in `time_base`
    colour: ColourTags
    audio_stream: int | None  # index of the audio stream carried over (the default one), None: no audio
    audio_codec: str | None

    def seconds(self, time: int) -> Fraction:
        return time * self.time_base


def probe_movie(path: str | os.PathLike, frame_count: int, rules: PictureRules = NEWEST) -> MovieSource:
    """The timing, colour tags and audio of a video file whose engine frames number `frame_count`."""
    import av  # here, not at the top: only a movie output needs FFmpeg's libraries

    path = Path(path)
    try:
        container = av.open(os.fspath(path))
    except (av.error.FFmpegError, UnicodeDecodeError) as exc:
        raise MovieSourceError(f"{path} cannot be read by FFmpeg ({exc}): re-export it as MP4 (H.264), or give "
                               "--out a folder to get its swapped frames as images") from None
    try:
        return _probe(container, path, frame_count, rules)
    except av.error.FFmpegError as exc:
        raise MovieSourceError(f"{path} cannot be read through by FFmpeg ({exc}): it is damaged or truncated; "
                               "re-export it, or give --out a folder to get its swapped frames as images") from None


def _probe(container, path: Path, frame_count: int, rules: PictureRules) -> MovieSource:
    with container:
        if not container.streams.video:
            raise MovieSourceError(f"{path} holds no video stream: a movie output needs a video target; give "
                                   "--out a folder instead")
        # Everything is read while the file is open: PyAV's streams are gone with their container.
        video = container.streams.video[0]
        audio = container.streams.best("audio")
        audio_stream, audio_codec = (None, None) if audio is None else (audio.index, audio.codec_context.name)
        context = video.codec_context
        colour = ColourTags(int(context.colorspace), int(context.color_primaries), int(context.color_trc),
                            int(context.color_range))
        if display_transform(colour.primaries, colour.trc, rules.display_spaces) is not None:
            colour = ColourTags(_BT709, _BT709, _BT709, _RANGE_LIMITED)  # the frames are Blender's SDR view
        time_base = video.time_base or Fraction(1, 90000)
        rate = video.guessed_rate or video.average_rate or Fraction(25)
        start = video.start_time or 0
    steps = float(1 / (rate * time_base))  # Blender's clock (media/movie.py)
    times = [start + c_round(index * steps) for index in range(frame_count)]
    duration = max(1, c_round(steps))
    return MovieSource(path, time_base, rate, tuple(times), duration, colour, audio_stream, audio_codec)
