"""A movie file's frames as Blender's sequencer shows them: FFmpeg's own libraries (PyAV), Blender's rules.

Frame N of a movie strip is, in Blender's reader (movie_read.cc, 4.2's anim_movie.cc alike), the frame
decoded for the timestamp T = round(N / (fps * time_base)) + start_time, fps being av_guess_frame_rate:
decoding runs on until a frame's timestamp reaches T, and the frame shown is that one when it is exactly
at T, else the one before it (sample and hold), else the first. So a variable frame rate repeats or skips
frames to follow the clock, in any container, and a B-frame stream is followed by presentation time. A
jump seeks (backward, to a keyframe before T minus three frames, as Blender does) and decodes forward; a
short step forward just decodes on. The strip's length is Blender's too: the stream's duration times the
frame rate, rounded; else the container's; else the frame count the container declares.

The picture is `yuv_to_bgr.to_bgr`'s: Blender's colours and, under its rules, its rotation. A rotated
movie's size is known from its first decoded frame, so it is read only when asked for.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from pathlib import Path
from typing import Sequence

import numpy as np

from facecache.errors import FaceCacheError
from facecache.media import decoder_threads
from facecache.media.deinterlace import filters_fields
from facecache.media.picture_rules import PictureRules, StreamTags
from facecache.models.runtime_import import newer_macos_needed
from facecache.media.yuv_to_bgr import quarter_turns, to_bgr

# Up to this many frames ahead, decoding on is cheaper than a seek (a keyframe interval of H.264 is
# commonly 12-250 frames; a seek decodes from the keyframe before the target anyway).
_MAX_DECODE_AHEAD = 20
# Blender seeks to a keyframe before the target less three frames: FFmpeg seeks by DTS, which can lie
# before the PTS (movie_read.cc, ffmpeg_get_seek_pts).
_SEEK_MARGIN_FRAMES = 3


class MediaError(FaceCacheError):
    """A media file cannot be opened or decoded."""


def import_av():
    """PyAV, or a MediaError saying why it does not import (on a Mac older than its wheel) and what to do."""
    try:
        import av
    except ImportError as exc:
        too_old = newer_macos_needed("av")
        if too_old:
            version, needed, have = too_old
            raise MediaError(f"reading movies needs FFmpeg's libraries (PyAV {version}), which need macOS {needed} "
                             f"or later, and this Mac runs macOS {have}: update macOS, or convert the movie to "
                             "PNG frames and add them as an image sequence") from None
        raise MediaError(f"FFmpeg's libraries (PyAV) cannot be imported ({exc}): reinstall the extension, or "
                         "`pip install av` for the engine's Python") from None
    return av


class Movie:
    """One video stream of a movie file, decoded by Blender's rules."""

    def __init__(self, path: Path, rules: PictureRules, deinterlace: bool = False):
        self.path = path
        self.rules = rules
        self.deinterlace = deinterlace  # the strip's Deinterlace option (deinterlace.py)
        self._av = av = import_av()
        # the colour conversion's threads, made on first use where FFmpeg does not decode ahead meanwhile
        self._pool: ThreadPoolExecutor | None = None
        try:
            self._container = av.open(str(path))
        except (av.FFmpegError, UnicodeDecodeError, ValueError) as exc:
            raise MediaError(f"{path} is not a video or image that FFmpeg can read ({_reason(exc)}): check the "
                             "file, or re-export it as MP4 (H.264) or PNG frames") from None
        streams = self._container.streams.video
        if not streams:
            self.close()
            raise MediaError(f"{path} holds no video stream: pass a video, an image or a folder of frames")
        self._stream = streams[0]
        context = self._stream.codec_context
        if context is None:
            self.close()
            raise MediaError(f"{path} holds video that FFmpeg has no decoder for: re-export it as MP4 (H.264)")
        self.coded_size = (context.width, context.height)
        rate = self._stream.guessed_rate or self._stream.average_rate
        if not rate or not self._stream.time_base:
            self.close()
            raise MediaError(f"{path} declares no frame rate, so its frames have no place on a timeline: "
                             "re-export it at a constant rate, e.g. `ffmpeg -i IN -fps_mode cfr -r 25 OUT.mp4`")
        self.fps = Fraction(rate)
        # time_base ticks a frame, as Blender holds it: the exact ratio rounded to a double once
        self._steps_per_frame = float(1 / (self.fps * self._stream.time_base))
        self._start = self._stream.start_time or 0
        self._frames = None  # the decoding iterator, from the last seek on
        self._recent: av.VideoFrame | None = None  # the last frame decoded
        self._before: av.VideoFrame | None = None  # the one before it (Blender's "backup" frame)
        self._ended = False  # the decoder reached the end of the stream since the last seek
        self._turn: int | None = None
        self.thread_type = self._choose_threads()
        self._decodes_ahead = decoder_threads.decodes_ahead(self._stream, self.thread_type)
        self._seek(self._start)  # choosing the threads read a packet
        self.frame_count = self._length()

    def _choose_threads(self) -> str:
        try:
            chosen = decoder_threads.thread_type(self._container, self._stream)
        except self._av.FFmpegError:  # a damaged first packet: decoding says so in its own words
            chosen = decoder_threads.BLENDERS_CHOICE
        self._stream.thread_type = chosen
        return chosen

    def _length(self) -> int:
        """Blender's strip length: lround(stream duration x fps), else the container's, else nb_frames."""
        stream, container = self._stream, self._container
        if stream.duration:
            return int(c_round(stream.duration * stream.time_base * self.fps))
        if container.duration:
            seconds = Fraction(container.duration, self._av.time_base)
            video_start = Fraction(stream.start_time or 0) * stream.time_base
            audio = container.streams.audio
            audio_start = Fraction(audio[0].start_time or 0) * audio[0].time_base if audio else Fraction(0)
            if video_start > audio_start:
                seconds -= video_start - audio_start
            return int(c_round(seconds * self.fps))
        return stream.frames or self._count_by_decoding()

    def _count_by_decoding(self) -> int:
        """The frames of a stream that declares no length (a raw MJPEG or H.264 stream), counted by decoding
        it once: Blender has no length for it either."""
        count = sum(1 for _ in iter(self._next, None))
        self._seek(self._start)
        return count

    def recorded_frames(self) -> int:
        """How many frames the stream holds (its packets, counted without decoding where the container does
        not say): fewer or more than `frame_count` when the frame rate varies."""
        if self._stream.frames:
            return self._stream.frames
        with self._av.open(str(self.path)) as container:
            return sum(1 for packet in container.demux(container.streams.video[0]) if packet.size)

    @property
    def stream_tags(self) -> StreamTags:
        """The stream's colour tags, pixel format, height and chroma steps, as its header gives them."""
        return _stream_tags(self._stream)

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) as shown: a quarter turn swaps them (decodes the first frame once)."""
        if self._turn is None:
            first = self.frame(0)[1] if self.frame_count else None
            self._turn = quarter_turns(first, self.rules) if first is not None else 0
        width, height = self.coded_size
        return (height, width) if self._turn in (90, 270) else (width, height)

    def picture(self, position: int) -> np.ndarray | None:
        """The BGR picture of strip frame `position`; None when the stream ends before it (truncated: Blender
        would repeat the last frame; the engine says so instead)."""
        frame = self.shown_frame(position)
        return None if frame is None else self.converted(frame)

    def shown_frame(self, position: int) -> av.VideoFrame | None:
        """The decoded frame Blender shows at strip frame `position`, before its conversion; None when the
        stream ends before it."""
        target, frame = self.frame(position)
        if frame is None or (self._ended and target >= _pts(frame) + (frame.duration or self._steps_per_frame)):
            return None
        if self.deinterlace and filters_fields(frame.format.name, frame.width, frame.height):
            # Blender's field filter reads the frame it decoded last (movie_read.cc hands it pFrame), even
            # where the clock shows the one before it (a variable frame rate): so does the engine
            return self._recent or frame
        return frame

    def converted(self, frame: av.VideoFrame, rows: Sequence[tuple[int, int]] | None = None) -> np.ndarray:
        """A frame of `shown_frame` as Blender's BGR picture (on any thread: it reads no decoding state);
        `rows`: the only spans of rows the caller reads (`yuv_to_bgr.to_bgr`: the others may be left 0)."""
        if self._decodes_ahead:  # FFmpeg's frame threads decode on meanwhile: one core converts
            return to_bgr(frame, self.rules, None, self.deinterlace, rows)
        if self._pool is None:  # the frame is decoded while this thread waits: both cores convert
            self._pool = ThreadPoolExecutor(2, thread_name_prefix="facecache-yuv")
        return to_bgr(frame, self.rules, self._pool, self.deinterlace, rows)

    def frame(self, position: int) -> tuple[int, av.VideoFrame | None]:
        """(target timestamp, decoded frame) of strip frame `position`, by Blender's rule."""
        target = c_round(position * self._steps_per_frame) + self._start  # 29.97 fps: 15 x 33.3667 = 500.5 -> 501
        recent_pts = _pts(self._recent) if self._recent is not None else None
        ahead = self._steps_per_frame * _MAX_DECODE_AHEAD
        if recent_pts is None or target < _pts(self._before or self._recent) or target - recent_pts > ahead:
            self._seek(target)
        while self._recent is None or _pts(self._recent) < target:
            decoded = self._next()
            if decoded is None:
                self._ended = True
                break
            if self._recent is not None:
                self._before = self._recent
            self._recent = decoded
        recent, before = self._recent, self._before
        if recent is None:
            return target, before
        if _pts(recent) <= target or before is None or _pts(before) > target:
            return target, recent  # exactly at the target, or the fallback (past the end, before the start)
        return target, before

    def _seek(self, target: int) -> None:
        offset = max(int(target - self._steps_per_frame * _SEEK_MARGIN_FRAMES), 0)
        try:
            self._container.seek(offset, backward=True, any_frame=False, stream=self._stream)
        except self._av.FFmpegError:  # no index (a raw or truncated stream): decode from the start
            self._container.close()
            self._container = self._av.open(str(self.path))
            self._stream = self._container.streams.video[0]
            self._stream.thread_type = self.thread_type
        self._frames = self._container.decode(self._stream)
        self._recent = self._before = None
        self._ended = False

    def _next(self) -> av.VideoFrame | None:
        if self._frames is None:
            self._frames = self._container.decode(self._stream)
        while True:
            try:
                frame = next(self._frames)
            except StopIteration:
                return None
            except self._av.FFmpegError as exc:  # a damaged packet at the end of a truncated file
                if isinstance(exc, self._av.EOFError):
                    return None
                raise MediaError(f"{self.path} cannot be decoded ({_reason(exc)}): the file is truncated or "
                                 "damaged; re-export it") from None
            if _pts(frame) is not None:
                return frame

    def close(self) -> None:
        self._container.close()
        if self._pool is not None:
            self._pool.shutdown()


UNREADABLE = StreamTags(2, 2, "", 0)  # unspecified tags, no pixel format or size


def stream_tags(path: Path) -> StreamTags:
    """The colour tags, pixel format, height and chroma steps of the movie's video stream, from its header
    (nothing decoded); UNREADABLE when FFmpeg cannot read it (nothing of it can be analysed then, and its
    decoding says why)."""
    av = import_av()
    try:
        with av.open(str(path)) as container:
            streams = container.streams.video
            return _stream_tags(streams[0]) if streams and streams[0].codec_context else UNREADABLE
    except (av.FFmpegError, UnicodeDecodeError, ValueError):
        return UNREADABLE


def _stream_tags(stream) -> StreamTags:
    context = stream.codec_context
    pixel_format = context.format.name if context.format is not None else ""
    return StreamTags(int(context.color_primaries), int(context.color_trc), pixel_format, int(context.height),
                      context.format is not None and _uneven_chroma(context.format))


def _uneven_chroma(video_format) -> bool:
    """Whether a plane of the format (sized as the stream) does not cover its picture in whole samples: an
    odd width or height where chroma is subsampled."""
    width, height = video_format.width, video_format.height
    return any(component.width * -(-width // component.width) != width
               or component.height * -(-height // component.height) != height
               for component in video_format.components if component.width and component.height)


def _pts(frame: av.VideoFrame) -> int | None:
    """A frame's presentation time, its decoding time when it has none (as Blender takes it)."""
    return frame.pts if frame.pts is not None else frame.dts


def c_round(value: float | Fraction) -> int:
    """C's round and lround: halves away from zero (Python's round takes halves to even)."""
    whole = math.floor(abs(value))
    if abs(value) - whole >= 0.5:  # exact for a double and a Fraction alike
        whole += 1
    return int(whole) if value >= 0 else -int(whole)


def _reason(exc: Exception) -> str:
    return getattr(exc, "strerror", None) or str(exc)
