"""Decoding stills, image sequences and videos into BGR uint8 frames: the pictures Blender shows.

`MediaReader` probes its input first, so an unreadable or non-media file is a
clear error before anything touches the cache. Frames are read one at a time
(never the whole clip in memory). A video is read with FFmpeg's own libraries
by the rules of the Blender that shows it (`movie.Movie`, `picture_rules`):
frame N is the picture Blender's strip shows at its frame N, rotation, colours
and variable frame rates included. A file that ends a whole frame before its
declared length raises MediaError after its last good frame, so callers keep
what was done and nothing half-decoded is used. A still's size is read from its
header and checked against MAX_PIXELS before it is decoded (`image_size`), and
a video's from its stream. Stills and image sequences are decoded by OpenCV
(Blender's image reader gives the same 8-bit pixels for PNG and JPEG).

An image sequence is a folder of images, ordered by name (numbers compared
as numbers); frame N is its N-th image.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

import cv2
import numpy as np

from facecache.media.deinterlace import rows_filtered
from facecache.media.image_size import MAX_PIXELS, UnknownImage, image_size
from facecache.media.movie import MediaError, Movie
from facecache.media.picture_rules import NEWEST, PictureRules, StreamTags
from facecache.media.read_ahead import ReadAhead, Stopped

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp"}
# The decoder of stills and image sequences: part of their frames' cache keys.
STILL_DECODER_ID = f"opencv-{cv2.__version__}"
# Videos: FFmpeg's decoders, whose output the codecs' own standards fix to the bit, and this engine's own
# conversion to Blender's picture, versioned here. FFmpeg's version is left out of the key on purpose: the
# zips ship PyAV 18 (FFmpeg 8) but 15.1 (FFmpeg 7.1) on Apple silicon (PyAV 16+ need macOS 14), and one NAS
# cache serves them all.
VIDEO_DECODER = "ffmpeg-picture-1"
# Ends the decoder id of a video whose chroma steps unevenly (StreamTags.uneven_chroma): since 2026-12-07 the
# engine follows swscale's uneven steps there, so those frames are keyed apart from the pictures before.
UNEVEN_CHROMA = "|uneven-chroma"
# What decoded videos before the engine read them by Blender's rules: records made from its pictures are
# still served where a frame's picture is the same to the bit (FaceAnalyzer.open_segment).
LEGACY_VIDEO_DECODER_ID = STILL_DECODER_ID
DEINTERLACED = "|deinterlaced"  # ends a decoder id of the Deinterlace option's picture (deinterlace.py)
# (frame index) -> the only spans of rows (top, bottom) a caller reads of that frame, or None for all of them
RowsRead = Callable[[int], "list[tuple[int, int]] | None"]


def decoder_id_for(path: Path, rules: PictureRules, stream_tags: Callable[[], StreamTags],
                   deinterlace: bool = False) -> str:
    """What decodes the media at `path` under `rules` (a part of its frames' cache keys): OpenCV for stills
    and image sequences, FFmpeg by the rules whose picture it is for videos (`PictureRules.key_name`; its
    chroma's steps from its `stream_tags`, read for videos alone); with `deinterlace`, filtered as a strip
    with the Deinterlace option shows it (another picture: its frames are keyed apart; without, the key is
    as it always was)."""
    if path.is_dir() or path.suffix.lower() in IMAGE_SUFFIXES:
        decoder = STILL_DECODER_ID
    else:
        tags = stream_tags()  # read once: both the rules' key and the chroma's steps need them
        decoder = f"{VIDEO_DECODER}|{rules.key_name(lambda: tags)}" + (UNEVEN_CHROMA if tags.uneven_chroma else "")
    return decoder + (DEINTERLACED if deinterlace else "")


def earlier_decoder_ids(decoder_id: str) -> list[str]:
    """The decoders whose records of a video `decoder_id` decodes may still be served, by fingerprint alone
    (where a frame's picture is the same to the bit): the engine's first (OpenCV), and for a video whose chroma
    steps unevenly the picture before it followed those steps."""
    if decoder_id.startswith(STILL_DECODER_ID):
        return []
    earlier = [LEGACY_VIDEO_DECODER_ID]
    if UNEVEN_CHROMA in decoder_id:
        earlier.append(decoder_id.replace(UNEVEN_CHROMA, ""))
    return earlier


@dataclass
class MediaInfo:
    path: Path
    frame_count: int
    fps: float
    is_still: bool
    size: Callable[[], tuple[int, int]]  # (width, height); a rotated video's is known once a frame is decoded

    @property
    def width(self) -> int:
        return self.size()[0]

    @property
    def height(self) -> int:
        return self.size()[1]


class MediaReader:
    """Frames of one still image, image sequence or video file, by media frame index."""

    def __init__(self, path: str | os.PathLike, rules: PictureRules = NEWEST, deinterlace: bool = False):
        self.path = Path(path)
        self.rules = rules
        self.deinterlace = deinterlace  # the picture a strip with Blender's Deinterlace option shows
        self._still: np.ndarray | None = None
        self._first: np.ndarray | None = None
        self._movie: Movie | None = None
        self._sequence: list[Path] | None = None
        self._reading: set[ReadAhead] = set()  # frames being decoded ahead of their callers
        self._movie_lock = threading.Lock()  # the movie decodes on one thread at a time
        self.decoder_id = STILL_DECODER_ID + (DEINTERLACED if deinterlace else "")
        if self.path.is_dir():
            self._open_sequence()
        elif not self.path.is_file():
            raise MediaError(f"media file {self.path} does not exist: check the path")
        elif self.path.suffix.lower() in IMAGE_SUFFIXES:
            self._still = self._read_still(self.path)
            height, width = self._still.shape[:2]
            self.info = MediaInfo(self.path, 1, 0.0, True, lambda: (width, height))
        else:
            self._open_video()

    def _open_sequence(self) -> None:
        files = sequence_files(self.path)
        if not files:
            raise MediaError(f"the folder {self.path} holds no images ({', '.join(sorted(IMAGE_SUFFIXES))}): "
                             "pass a video, an image, or a folder of numbered frames")
        self._sequence = files
        self._first = self._read_still(files[0])
        height, width = self._first.shape[:2]
        self.info = MediaInfo(self.path, len(files), 0.0, False, lambda: (width, height))

    def _open_video(self) -> None:
        movie = Movie(self.path, self.rules, self.deinterlace)
        try:
            check_pixels(self.path, *movie.coded_size)
            if movie.frame_count <= 0:
                raise MediaError(f"{self.path} holds no frame that FFmpeg can decode: re-export it as MP4 (H.264)")
        except MediaError:
            movie.close()
            raise
        self._movie = movie
        self.decoder_id = decoder_id_for(self.path, self.rules, lambda: movie.stream_tags, self.deinterlace)
        # Frames are decoded when asked for: a run whose outputs are all made from the cache decodes none.
        self.info = MediaInfo(self.path, movie.frame_count, float(movie.fps), False, self._movie_size)

    def _movie_size(self) -> tuple[int, int]:
        with self._movie_lock:  # a rotated movie's size decodes its first frame
            return self._movie.size

    def frames(self, indices: Iterable[int], rows: RowsRead | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """Yield (index, frame) for ascending indices; stops early at a truncated end. Where several frames of a
        movie or an image sequence are asked for, the next ones are decoded on a thread of their own meanwhile
        (read_ahead), and a movie's are converted to Blender's picture here. `rows(index)`: the only spans of
        rows (top, bottom) the caller reads of that frame, or None for all; a movie's other rows may be left 0."""
        indices = list(indices)
        if self._still is not None or len(indices) < 2:
            yield from ((index, self._picture(index, self._decoded(index), rows)) for index in indices)
            return
        ahead = ReadAhead(self._decoded, indices)
        self._reading.add(ahead)
        try:
            for index, decoded in ahead:
                yield index, self._picture(index, decoded, rows)
        except Stopped:
            raise self._closed() from None
        finally:
            self._reading.discard(ahead)

    def _decoded(self, index: int):
        """Frame `index` decoded: a still's picture, or a movie's frame before its conversion (None past a
        truncated end)."""
        if not 0 <= index < self.info.frame_count:
            raise MediaError(f"frame {index} is outside {self.path} (0-{self.info.frame_count - 1})")
        if self._still is not None:
            return self._still
        if self._sequence is not None:
            return self._first if index == 0 else self._read_still(self._sequence[index])
        with self._movie_lock:
            if self._movie is None:
                raise self._closed()
            return self._movie.shown_frame(index)

    def _picture(self, index: int, decoded, rows: RowsRead | None = None) -> np.ndarray:
        """A frame of `_decoded` as the picture Blender shows (a movie's in `rows(index)` alone, as `frames`)."""
        if isinstance(decoded, np.ndarray):  # a still's or an image sequence's
            return decoded
        if decoded is None:
            raise MediaError(f"{self.path} ends at frame {index} although it declares "
                             f"{self.info.frame_count} frames: the file is truncated or damaged; "
                             "frames before it are done, re-export the file for the rest")
        if self._movie is None:
            raise self._closed()
        return self._movie.converted(decoded, None if rows is None else rows(index))

    def _closed(self) -> MediaError:
        return MediaError(f"{self.path} was closed while its frames were read")

    def _read_still(self, path: Path) -> np.ndarray:
        """An image as Blender's image strip shows it: with the Deinterlace option, IMB_filtery's rows
        (deinterlace.py), red too where the file has alpha (Blender's buffer then has four channels)."""
        image = _read_still(path)
        return rows_filtered(image, red=_has_alpha(path)) if self.deinterlace else image

    def timing_note(self) -> str | None:
        """A line for a movie whose recorded frames are not its timeline frames one for one (a variable frame
        rate): how Blender, and so the engine, shows them. None otherwise."""
        if self._movie is None:
            return None
        recorded, shown = self._movie.recorded_frames(), self.info.frame_count
        if recorded == shown:
            return None
        return (f"{self.path.name} has a variable frame rate: its {recorded} recorded frames fill {shown} frames "
                f"at {self.info.fps:g} fps, some shown twice or skipped, as Blender shows them; one output each")

    def close(self) -> None:
        for ahead in list(self._reading):  # their threads may be decoding from the movie
            ahead.stop()
        with self._movie_lock:
            if self._movie is not None:
                self._movie.close()
                self._movie = None

    def __enter__(self) -> "MediaReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def sequence_files(folder: Path) -> list[Path]:
    """The images of a folder in frame order: by name, numbers compared as numbers."""
    def natural(path: Path):
        return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)]

    return sorted((p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file()), key=natural)


def check_still(path: Path) -> None:
    """MediaError unless `path` is an image whose header is readable and within MAX_PIXELS (nothing decoded)."""
    try:
        with open(path, "rb") as handle:
            width, height = image_size(handle)
    except FileNotFoundError:
        raise MediaError(f"media file {path} does not exist: check the path") from None
    except UnknownImage as exc:
        raise MediaError(f"{path} is not an image that OpenCV can decode ({exc}): save it as PNG or JPEG") from None
    check_pixels(path, width, height)


def _read_still(path: Path) -> np.ndarray:
    """An image decoded as BGR, after its header's size is checked against MAX_PIXELS (`check_still`)."""
    check_still(path)
    data = np.fromfile(path, dtype=np.uint8)  # imdecode also copes with non-ASCII paths on Windows
    try:
        image = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
    except cv2.error:
        image = None
    if image is None:
        raise MediaError(f"{path} is not an image that OpenCV can decode: save it as PNG or JPEG")
    return image


def _has_alpha(path: Path) -> bool:
    """Whether an image (checked by `_read_still` already) has an alpha channel."""
    image = cv2.imdecode(np.fromfile(path, dtype=np.uint8), cv2.IMREAD_UNCHANGED)
    return image is not None and image.ndim == 3 and image.shape[2] == 4


def check_pixels(path: Path, width: int, height: int) -> None:
    """MediaError naming the file and its size when it is empty or larger than MAX_PIXELS."""
    if width <= 0 or height <= 0:
        raise MediaError(f"{path} declares a size of {width} x {height} pixels: it is damaged; save it again")
    if width * height > MAX_PIXELS:
        raise MediaError(f"{path} is {width} x {height} pixels ({width * height / 1e6:.0f} megapixels), more than "
                         f"facecache decodes ({MAX_PIXELS / 1e6:.0f} megapixels, e.g. 8192 x 8192): scale it down "
                         "first (e.g. to 3840 pixels wide)")
