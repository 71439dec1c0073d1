"""Encoding finished frames into a movie file beside its source's audio, with PyAV (FFmpeg's own libraries).

The container follows the file's suffix, the codec the container: `.mp4` and `.mkv` get H.264 (libx264),
`.mov` ProRes 422 (prores_ks, else FFmpeg's other ProRes encoder), what editors expect of each. One
`quality` number means what each codec's own knob means: H.264's constant rate factor, ProRes's profile.

What is kept of the source (`movie_source.MovieSource`):
- timing: frame N is shown at the source's frame N time (shifted so the movie starts at 0), in the
  source's time base, so the rate and every timestamp match the frames the engine decoded;
- colour: the matrix, primaries, transfer and range tags are copied onto the new stream, and RGB is
  converted to YUV with that matrix and range (an untagged source stays untagged, converted as FFmpeg
  decodes it: BT.601, limited range; ProRes has no full range, so a full-range source is converted to the
  limited one there), so a player shows the colours the engine saw;
- audio: the source's default audio stream, trimmed to the frames' span, stream-copied where the
  container can hold its codec (FFmpeg's own list), else re-encoded to AAC (`movie_audio`);
- rotation: none. The engine's frames are what Blender shows, already upright where the source had
  a display matrix, so they are written upright and no rotation is added: a rotation tag on top
  would turn them a second time.

The movie is written to a temp file beside its place and renamed there when complete: a failed or
interrupted encode leaves no half movie under the user's name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Iterable

import numpy as np

from facecache.errors import BadValue, FaceCacheError
from facecache.files import replace_file, set_mode, temp_name, unlink_quietly
from facecache.media.movie_audio import AudioCarry
from facecache.media.movie_source import MovieSource


class MovieOutError(FaceCacheError):
    """A movie output cannot be written as asked; the message says what to do."""


@dataclass(frozen=True)
class MovieFormat:
    suffix: str
    container: str      # FFmpeg's muxer
    codecs: tuple[str, ...]  # encoders in order of preference: the first one FFmpeg has is used
    codec_label: str    # what the user reads
    pix_fmt: str
    quality_name: str
    quality_range: tuple[int, int]
    default_quality: int
    quality_option: str  # the encoder's option that `quality` sets
    limited_range: bool = False  # the codec has no full range (ProRes): a full-range source is converted
    codec_options: tuple[tuple[str, str], ...] = ()
    container_options: tuple[tuple[str, str], ...] = ()

    def encoder_options(self, quality: int) -> dict[str, str]:
        return {**dict(self.codec_options), self.quality_option: str(quality)}


# CRF 18: visually lossless to most eyes (x264's own advice); preset medium: x264's default balance of speed
_H264 = dict(codecs=("libx264",), codec_label="H.264", pix_fmt="yuv420p", quality_name="CRF",
             quality_range=(0, 51), default_quality=18, quality_option="crf", codec_options=(("preset", "medium"),))
MOVIE_FORMATS = {
    # faststart: the index at the front, so a player or a browser starts before the whole file is read
    ".mp4": MovieFormat(".mp4", "mp4", **_H264, container_options=(("movflags", "+faststart"),)),
    # Matroska's muxer would otherwise shift every stream by a copied AAC stream's priming packet (21 ms before
    # the first picture): the pictures keep the source's times, the priming stays before zero as in the source
    ".mkv": MovieFormat(".mkv", "matroska", **_H264, container_options=(("avoid_negative_ts", "disabled"),)),
    # ProRes profiles 0 Proxy, 1 LT, 2 422, 3 422 HQ (4 and up are 4444, another chroma format): HQ by default,
    # an intermediate for more editing
    ".mov": MovieFormat(".mov", "mov", ("prores_ks", "prores"), "ProRes 422", "yuv422p10le", "profile", (0, 3), 3,
                        quality_option="profile", limited_range=True),
}
# Suffixes that look like a movie but are not written: refused with the supported ones named, rather
# than taken for a folder name.
OTHER_MOVIE_SUFFIXES = frozenset({".avi", ".webm", ".m4v", ".mxf", ".wmv", ".flv", ".mpg", ".mpeg", ".ts",
                                  ".m2ts", ".mts", ".ogv", ".3gp", ".gif", ".dv", ".y4m"})
QUALITY_HELP = ("quality of a movie --out: for H.264 (.mp4, .mkv) the CRF, 0 (lossless) to 51, lower is better "
                f"(default {_H264['default_quality']}); for ProRes (.mov) the profile, 0 Proxy, 1 LT, 2 422, "
                "3 422 HQ (default 3)")


def movie_format(path: str | os.PathLike) -> MovieFormat | None:
    """The movie format `path` names by its suffix; None for a folder (an existing folder is one whatever
    its name). MovieOutError for a movie suffix that is not written, naming those that are."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in MOVIE_FORMATS and suffix not in OTHER_MOVIE_SUFFIXES:
        return None  # by its name alone: a path the system refuses (too long) is the output folder's check's
    if path.is_dir():
        return None
    if suffix not in MOVIE_FORMATS:
        raise MovieOutError(f"{path}: facecache does not write {suffix} movies; name a {', '.join(MOVIE_FORMATS)} "
                            "file (H.264 in .mp4 and .mkv, ProRes in .mov), or a folder for the frames as images")
    return MOVIE_FORMATS[suffix]


def check_movie_path(path: Path) -> None:
    """MovieOutError unless `path` can become a movie: its folder exists and nothing but a file is there."""
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise MovieOutError(f"the folder {folder} of the movie {path.name} does not exist: create it first, or "
                            "choose a movie path in an existing folder")
    if path.exists() and not path.is_file():
        raise MovieOutError(f"{path} exists and is not a file: remove it or choose another movie name")


def checked_quality(fmt: MovieFormat, quality: int | None) -> int:
    """`quality` for this format (its default when None); BadValue naming the range otherwise."""
    if quality is None:
        return fmt.default_quality
    low, high = fmt.quality_range
    if not low <= quality <= high:
        raise BadValue(f"--quality {quality} does not fit {fmt.codec_label} ({fmt.suffix}): its {fmt.quality_name} "
                       f"goes from {low} to {high} (default {fmt.default_quality})")
    return quality


def encoder_name(fmt: MovieFormat) -> str:
    """The first of the format's encoders that this FFmpeg has."""
    import av

    for name in fmt.codecs:
        try:
            av.Codec(name, "w")
            return name
        except (av.error.FFmpegError, ValueError):
            continue
    raise MovieOutError(f"this FFmpeg (PyAV {av.__version__}) has no {fmt.codec_label} encoder "
                        f"({', '.join(fmt.codecs)}): install PyAV's own wheel (`pip install --force-reinstall av`), "
                        "or choose another suffix")


@dataclass
class MovieReport:
    path: str
    codec: str
    frames: int = 0
    audio: str = "none"  # "none", "copied <codec>" or "<codec> re-encoded to aac"
    bytes: int = 0

    def as_dict(self) -> dict:
        return {"path": self.path, "codec": self.codec, "frames": self.frames, "audio": self.audio,
                "bytes": self.bytes}


def write_movie(path: str | os.PathLike, frames: Iterable[np.ndarray], source: MovieSource, indices: range,
                quality: int | None = None, mode: int = 0o600, progress=None) -> MovieReport:
    """Encode the BGR uint8 `frames` (media frames `indices` of `source`, in order) into the movie `path`,
    with the source's audio over their span. `mode`: the file's permission bits (a movie holds faces).
    `progress(done, total)` after each frame."""
    import av

    path = Path(path)
    fmt = movie_format(path)
    if fmt is None:
        raise MovieOutError(f"{path} does not name a movie ({', '.join(MOVIE_FORMATS)})")
    check_movie_path(path)
    quality = checked_quality(fmt, quality)
    codec = encoder_name(fmt)
    temp = path.with_name(temp_name(path.name))
    report = MovieReport(str(path), codec)
    try:
        with av.open(os.fspath(temp), "w", format=fmt.container, options=dict(fmt.container_options)) as out:
            movie = _MovieStreams(out, fmt, codec, quality, source, indices)
            try:
                for frame in frames:
                    movie.add_frame(frame)
                    report.frames += 1
                    if progress is not None:
                        progress(report.frames, len(indices))
                movie.finish()
            finally:
                movie.audio.close()
            report.audio = movie.audio.said
        fd = os.open(temp, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            set_mode(fd, temp, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        replace_file(temp, path)
    except av.error.FFmpegError as exc:
        unlink_quietly(temp)
        if isinstance(exc, OSError):  # the disk: said by the caller's OS fault mapping
            raise
        raise MovieOutError(f"FFmpeg could not write the movie {path} ({exc}): give --out a folder to get the "
                            "frames as images, and please report this with the source's format") from None
    except BaseException:
        unlink_quietly(temp)
        raise
    report.bytes = path.stat().st_size
    return report


class _MovieStreams:
    """The open streams of one movie: video encoded frame by frame, audio interleaved by time."""

    def __init__(self, out, fmt: MovieFormat, codec: str, quality: int, source: MovieSource, indices: range):
        self.out, self.fmt, self.source = out, fmt, source
        self.times = [source.frame_times[index] for index in indices]
        self.start = self.times[0] if self.times else 0
        self.video = None
        self.codec, self.quality = codec, quality
        span = (source.seconds(self.start), source.seconds((self.times[-1] if self.times else self.start)
                                                           + source.frame_duration))
        self.audio = AudioCarry(out, source, span)
        self._next = 0

    def _open_video(self, width: int, height: int):
        from av.video.reformatter import ColorRange

        if width % 2 or (height % 2 and self.fmt.pix_fmt == "yuv420p"):
            raise MovieOutError(f"the frames are {width} x {height} pixels, and {self.fmt.codec_label} needs an even "
                                "width" + (" and height" if self.fmt.pix_fmt == "yuv420p" else "") +
                                ": give --out a folder to get the frames as images")
        stream = self.out.add_stream(self.codec, rate=self.source.rate)
        stream.width, stream.height, stream.pix_fmt = width, height, self.fmt.pix_fmt
        context = stream.codec_context
        context.time_base = self.source.time_base  # the source's own, so its timestamps carry over exactly
        stream.time_base = self.source.time_base
        tags = self.source.colour
        # A codec with only the limited range (ProRes) gets a full-range source converted to it, and says so
        full = tags.full_range and not self.fmt.limited_range
        range_tag = int(ColorRange.JPEG if full else ColorRange.MPEG if tags.range or self.fmt.limited_range
                        else ColorRange.UNSPECIFIED)
        self._tags = (tags.written_colorspace, range_tag)
        context.colorspace, context.color_primaries = tags.written_colorspace, tags.primaries
        context.color_trc, context.color_range = tags.trc, range_tag
        context.options = self.fmt.encoder_options(self.quality)
        self.video = stream
        self._convert = dict(format=self.fmt.pix_fmt, dst_colorspace=tags.matrix,
                             dst_color_range=ColorRange.JPEG if full else ColorRange.MPEG,
                             interpolation=_conversion_flags())

    def add_frame(self, bgr: np.ndarray) -> None:
        import av

        if self._next >= len(self.times):
            raise MovieOutError("more frames than the range asked for: a bug; please report it")
        if self.video is None:
            self._open_video(bgr.shape[1], bgr.shape[0])
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(bgr), format="bgr24").reformat(**self._convert)
        # The frame's own tags too: ProRes writes them into every frame's header (H.264 takes the stream's).
        # Older PyAVs cannot set primaries and transfer: there a ProRes movie keeps the stream's.
        frame.colorspace, frame.color_range = self._tags
        if hasattr(type(frame), "color_trc"):
            frame.color_primaries, frame.color_trc = self.source.colour.primaries, self.source.colour.trc
        frame.pts = self.times[self._next] - self.start
        frame.time_base = self.source.time_base
        self._next += 1
        self._mux(self.video.encode(frame))

    def finish(self) -> None:
        if self.video is None:
            raise MovieOutError("no frame to write into the movie: give a frame range that holds frames")
        self._mux(self.video.encode())
        self.audio.mux_until(None)

    def _mux(self, packets) -> None:
        for packet in packets:
            # The audio up to this picture first: the muxer interleaves only what it is given.
            self.audio.mux_until((packet.dts if packet.dts is not None else packet.pts) * packet.time_base)
            self.out.mux(packet)


def _conversion_flags():
    """swscale's RGB->YUV with rounding (its fast path truncates: every value half a level dark) and the
    chroma averaged over each 2x2 block: measured on a noisy frame, Y within 0.23 of BT.709's formula
    (0.47 and all of it bias without ACCURATE_RND), 4:2:0 chroma within 0.24 (bilinear: 1.6)."""
    from av.video.reformatter import Interpolation

    rounding = getattr(Interpolation, "ACCURATE_RND", None)  # a flag older PyAVs do not offer
    return Interpolation.AREA if rounding is None else Interpolation.AREA | rounding
