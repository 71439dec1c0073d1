"""The preview's movie: a shot's composited frames as one movie, which Blender's preview plays as the original
movie strip's 100 % proxy, as fast as it plays the movie alone.

Why. At the preview's 100 % the swapped strip's JPEG pictures (`preview_frame`) are read by Blender's JPEG
reader on one thread, about 14 ms a 1080p frame; a movie is decoded on FFmpeg's threads. In the real window
(Blender 4.3.2, six faces at 1080p, uncapped) the pictures played at 0.75 of the movie alone's rate, this movie
at 1.12 (docs/benchmarks.md, "The shot's movie as the original strip's proxy").

Where Blender finds it. The original strip's proxy on at 100 % alone, timecode NONE, in a custom folder
(`preview_movie_files.proxy_folder`, a new one for each movie written): Blender then reads
`<folder>/<the movie's file name>/proxy_100.avi` (`movie_path`) with its FFmpeg reader, frame i of the file for
media frame i (Blender 4.2 to 5.2, tested). Renders never read proxies. The file's content is MP4 whatever its
name: AVI keeps no presentation times, and x264's B-frames in an AVI were read two frames late.
The movie ends at the shot's last frame; frames before its first are never shown: they are black, which
costs the encoder next to nothing.

What covers what. A frame with faces keeps its JPEG picture where Blender reads the swapped strip's proxy. Once
the movie holds a frame's picture, that file becomes `STAND_IN`, a one-pixel transparent PNG (Blender reads an
image by its content, whatever its name): the swapped strip shows nothing there and the preview shows the
movie strip's proxy below it. The picture itself goes on a shelf (`shelf_path`). A frame made again later (the
live preview, a new source) writes its JPEG there again, which covers the movie: the movie is trusted only
for frames whose picture has not changed since it was written. `preview_movie_files.restore` puts the shelved
pictures back, wherever the movie cannot be shown.
"""

from __future__ import annotations

import os
import secrets
from fractions import Fraction
from pathlib import Path
from typing import Callable, Iterable, Iterator, NamedTuple

import cv2
import numpy as np

from facecache import output_layout
from facecache.files import replace_file, temp_name, write_atomic
from facecache.permissions import make_dir, permissions_for
from facecache import preview_movie_files as movie_files

# x264 coding the frames' RGB itself (4:4:4), tuned for decoding speed (no CABAC, no deblocking): Blender's reader
# then only reorders planes, where 4:2:0 YUV costs it a colour conversion of every pixel, most of a frame's time
# (docs/benchmarks.md, "The movie's encoding"). CRF 26 on the bench's six faces at 1080p: a mean error of 2.15
# of 255, 26 at the 99.9th percentile, 38 KB a frame; YUV at CRF 23 gave 3.15, 28 and 22 KB.
# Where an FFmpeg build has no x264, FFmpeg's own MPEG-4 part 2 encoder (no B-frames; 12 Mb/s at 1080p: a mean
# error of 2.7 there, 64 KB a frame). RGB has no subsampled chroma, so x264 takes odd sides too (a recorded
# window's); MPEG-4 is held to even ones.
class Encoder(NamedTuple):
    name: str
    options: dict
    pixels: str  # the pixel format it codes
    odd_sides: bool


ENCODERS = (Encoder("libx264rgb", {"crf": "26", "tune": "fastdecode", "preset": "veryfast"}, "bgr24", True),
            Encoder("mpeg4", {}, "yuv420p", False))
MPEG4_BITS_PER_PIXEL = 0.23  # a frame's bit rate over its pixels at 25 frames a second: 12 Mb/s at 1080p

Frames = Callable[[Iterable[int]], Iterator[tuple[int, np.ndarray]]]  # a MediaReader's `frames`


def can_hold(width: int, height: int) -> bool:
    """Whether a movie of this size can be written by an encoder this FFmpeg has."""
    return width > 0 and height > 0 and _encoder(width, height) is not None


def write(folder: Path, media: Path, shown: list[int], original: Frames, fps: Fraction,
          size: tuple[int, int], progress: Callable[[int], None] | None = None) -> int:
    """Write the movie of the clip whose outputs are in `folder`, for the media frames `shown` (the shot's: some),
    each as the preview shows it: its picture where it has one, else the movie's own frame (`original`, the
    engine's decoder); then stand in for the pictures it holds. `progress(frames of the shot encoded)`.
    Returns the movie's size in bytes."""
    width, height = size
    shown = sorted(set(shown))
    sources = {index: _picture_file(folder, index) for index in shown}
    version = secrets.token_hex(6)
    target = Path(movie_files.movie_path(folder, media, version))
    perms = permissions_for(folder)
    for parent in reversed(target.parents[:4]):  # BL_proxy, movie, the version, the clip's name
        if not parent.is_dir():
            make_dir(parent, perms)
    temporary = target.with_name(temp_name(target.name))
    held: dict[int, os.stat_result] = {}  # frames whose picture (at its place) the movie holds, as it was read
    decoded = original(index for index in shown if sources[index] is None)
    try:
        _encode(temporary, fps, width, height, _frames(shown, sources, decoded, (height, width), held, progress))
        replace_file(temporary, target)
    except BaseException:
        movie_files.remove_folders([str(target.parents[1])])
        raise
    finally:
        temporary.unlink(missing_ok=True)
    write_atomic(Path(movie_files.record_path(folder)), movie_files.record_bytes(version, shown[-1] + 1),
                 mode=perms.file_mode, durable=False)
    for index, read in held.items():
        _stand_in(folder, index, read, perms)
    movie_files.remove_folders(movie_files.old_versions(folder, keep=version))
    return target.stat().st_size


def _picture_file(folder: Path, index: int) -> Path | None:
    """Where the frame's 100 % picture is, as the preview would show it without the movie: its place, or the
    shelf where it has been stood in for; None where it has none (no face, or not made yet) or it is not a whole
    JPEG: the movie then holds the movie's own frame, under the overlay Blender falls back to there. A stand-in
    without its picture goes, for the same fallback."""
    overlay = folder / output_layout.frame_name(index)
    place = Path(output_layout.preview_path(overlay))
    stood_in = movie_files.is_stand_in(place)
    path = Path(movie_files.shelf_path(overlay)) if stood_in else place
    if _whole_jpeg(path):
        return path
    if stood_in:
        place.unlink(missing_ok=True)
    return None


def _whole_jpeg(path: Path) -> bool:
    """Whether the file begins and ends as a JPEG does (a cut-short or foreign file does not)."""
    try:
        with open(path, "rb") as file:
            if file.read(2) != b"\xff\xd8":
                return False
            file.seek(-2, os.SEEK_END)
            return file.read(2) == b"\xff\xd9"
    except OSError:
        return False


def _frames(shown: list[int], sources: dict, decoded: Iterator, shape: tuple[int, int], held: dict, progress):
    """Media frames 0 to the shot's last, as BGR: black before the shot, then the picture or the movie's frame.
    A picture that still does not decode is black here, and keeps its place."""
    black = np.zeros((*shape, 3), np.uint8)
    wanted, count = set(shown), 0
    for index in range(shown[-1] + 1):
        if index not in wanted:
            yield black
            continue
        path = sources[index]
        if path is None:
            yield next(decoded)[1]
        else:
            frame, read = _read_picture(path)
            if frame is None or frame.shape[:2] != shape:
                frame = black
            elif path.parent.name != movie_files.SHELF:
                held[index] = read
            yield frame
        count += 1
        if progress is not None:
            progress(count)


def _read_picture(path: Path) -> tuple[np.ndarray | None, os.stat_result | None]:
    try:
        read = path.stat()
        data = path.read_bytes()
    except OSError:
        return None, None
    return cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR), read


def _encode(path: Path, fps: Fraction, width: int, height: int, frames: Iterable[np.ndarray]) -> None:
    import av

    encoder = _encoder(width, height)
    with av.open(str(path), "w", format="mp4") as out:
        stream = out.add_stream(encoder.name, rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, encoder.pixels
        stream.options = dict(encoder.options)
        if encoder.name == "mpeg4":
            stream.bit_rate = int(MPEG4_BITS_PER_PIXEL * width * height * 25)
        for frame in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="bgr24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


def _encoder(width: int, height: int) -> Encoder | None:
    """The first of ENCODERS that this FFmpeg has and that codes this size."""
    even = width % 2 == 0 and height % 2 == 0
    return next((encoder for encoder in ENCODERS if (even or encoder.odd_sides) and _can_encode(encoder.name)), None)


def _can_encode(name: str) -> bool:
    import av

    try:
        av.codec.Codec(name, "w")
    except (ValueError, av.error.FFmpegError):  # UnknownCodecError is a ValueError
        return False
    return True


def _stand_in(folder: Path, index: int, read: os.stat_result, perms) -> None:
    """Move the frame's picture to the shelf (a rename: nothing crosses a network share) and put `STAND_IN` in
    its place, unless the picture there changed since the movie read it: a frame made again meanwhile keeps its
    new picture, which covers the movie."""
    overlay = folder / output_layout.frame_name(index)
    place, shelf = Path(output_layout.preview_path(overlay)), Path(movie_files.shelf_path(overlay))
    if not shelf.parent.is_dir():
        make_dir(shelf.parent, perms)
    try:
        replace_file(place, shelf)
        moved = shelf.stat()
    except OSError:
        return  # gone meanwhile (no face any more): nothing to stand in for
    if (moved.st_size, moved.st_mtime_ns, moved.st_ino) != (read.st_size, read.st_mtime_ns, read.st_ino):
        if not place.exists():
            replace_file(shelf, place)  # a newer picture: back where Blender reads it
        return
    write_atomic(place, movie_files.STAND_IN, mode=perms.file_mode, durable=False)
