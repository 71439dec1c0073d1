"""Decoding stills, image sequences and videos into BGR uint8 frames with OpenCV.

`MediaReader` probes its input first, so an unreadable or non-media file is a
clear error before anything touches the cache. Frames are read one at a time
(never the whole clip in memory). Video access is frame-accurate: reading on
decodes forward, a jump seeks by frame number, which OpenCV's FFmpeg backend
resolves to the exact frame of a constant-frame-rate file (tested against
sequential decoding on an MP4 whose keyframes are 12 frames apart). A file
that ends before its declared length raises MediaError after its last good
frame, so callers keep what was done and nothing half-decoded is used. A stream
whose container declares no length (a raw MJPEG or H.264 stream) is counted by
decoding it once and then read forward only (it cannot seek). A still's size is
read from its header and checked against MAX_PIXELS before it is decoded
(`image_size`), and a video's from its stream. An MP4
or MOV with a variable frame rate is refused with the command that converts it
(frame N has no exact address there, and the sequencer would disagree with us).

An image sequence is a folder of images, ordered by name (numbers compared
as numbers); frame N is its N-th image.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import cv2
import numpy as np

from facecache.errors import FaceCacheError
from facecache.media.frame_rate import is_variable_frame_rate
from facecache.media.image_size import MAX_PIXELS, UnknownImage, image_size

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp"}
MP4_SUFFIXES = {".mp4", ".mov", ".m4v"}
# Up to this many frames ahead, decoding forward is cheaper than a seek: OpenCV seeks to a
# keyframe some frames before the target and decodes on from there. Measured on a 1080p MP4
# (keyframes 12 frames apart): a grab 1.7 ms, a seek and read 37-52 ms; further, seek.
_MAX_FORWARD_GRABS = 20
DECODER_ID = f"opencv-{cv2.__version__}"


class MediaError(FaceCacheError):
    """A media file cannot be opened or decoded."""


@dataclass
class MediaInfo:
    path: Path
    frame_count: int
    width: int
    height: int
    fps: float
    is_still: bool


class MediaReader:
    """Frames of one still image or video file, by media frame index."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._still: np.ndarray | None = None
        self._first: np.ndarray | None = None
        self._capture: cv2.VideoCapture | None = None
        self._sequence: list[Path] | None = None
        self._next_index = 0
        if self.path.is_dir():
            self._open_sequence()
        elif not self.path.is_file():
            raise MediaError(f"media file {self.path} does not exist: check the path")
        elif self.path.suffix.lower() in IMAGE_SUFFIXES:
            self._still = _read_still(self.path)
            height, width = self._still.shape[:2]
            self.info = MediaInfo(self.path, 1, width, height, 0.0, True)
        else:
            self._open_video()

    def _open_sequence(self) -> None:
        files = sequence_files(self.path)
        if not files:
            raise MediaError(f"the folder {self.path} holds no images ({', '.join(sorted(IMAGE_SUFFIXES))}): "
                             "pass a video, an image, or a folder of numbered frames")
        self._sequence = files
        self._first = _read_still(files[0])
        height, width = self._first.shape[:2]
        self.info = MediaInfo(self.path, len(files), width, height, 0.0, False)

    def _open_video(self) -> None:
        if self.path.suffix.lower() in MP4_SUFFIXES and is_variable_frame_rate(self.path):
            raise MediaError(f"{self.path} has a variable frame rate, so its frames cannot be addressed "
                             "exactly: convert it to a constant rate first, e.g. "
                             "`ffmpeg -i IN -vsync cfr -r 25 OUT.mp4` (use the rate of your project)")
        capture = cv2.VideoCapture(str(self.path))
        # Frames are decoded when asked for, the first one too: a run whose outputs are all made from
        # the cache decodes nothing (the first 4K frame alone was 50-80 ms of every such run).
        width, height = ((int(capture.get(cv2.CAP_PROP_FRAME_WIDTH)), int(capture.get(cv2.CAP_PROP_FRAME_HEIGHT)))
                         if capture.isOpened() else (0, 0))
        if width <= 0 or height <= 0:
            capture.release()
            raise MediaError(f"{self.path} is not a video or image that OpenCV can decode (or it is truncated "
                             "or damaged): re-export it as MP4 (H.264) or PNG frames, e.g. with ffmpeg")
        try:
            check_pixels(self.path, width, height)
        except MediaError:
            capture.release()
            raise
        count = int(max(-1.0, capture.get(cv2.CAP_PROP_FRAME_COUNT)))  # -9.2e18 where the container says nothing
        fps = float(capture.get(cv2.CAP_PROP_FPS) or 0.0)
        self._seekable = count > 0
        if not self._seekable:  # a raw stream (MJPEG, H.264 elementary): counted by decoding, read forward only
            count = _count_frames(capture)
            capture.release()
            capture = cv2.VideoCapture(str(self.path))
            if count == 0:
                capture.release()
                raise MediaError(f"{self.path} holds no frame that OpenCV can decode: re-export it as MP4 (H.264)")
        self._capture = capture
        self.info = MediaInfo(self.path, count, width, height, fps, False)

    def frames(self, indices: Iterable[int]) -> Iterator[tuple[int, np.ndarray]]:
        """Yield (index, frame) for ascending indices; stops early at a truncated end."""
        for index in indices:
            if not 0 <= index < self.info.frame_count:
                raise MediaError(f"frame {index} is outside {self.path} (0-{self.info.frame_count - 1})")
            if self._still is not None:
                yield index, self._still
            elif self._sequence is not None:
                yield index, self._first if index == 0 else _read_still(self._sequence[index])
            else:
                frame = self._video_frame(index)
                if frame is None:
                    raise MediaError(f"{self.path} ends at frame {index} although it declares "
                                     f"{self.info.frame_count} frames: the file is truncated or damaged; "
                                     "frames before it are done, re-export the file for the rest")
                yield index, frame

    def _video_frame(self, index: int) -> np.ndarray | None:
        if not self._seekable and index < self._next_index:  # no seeking in a raw stream: from the start again
            self._capture.release()
            self._capture = cv2.VideoCapture(str(self.path))
            self._next_index = 0
        elif self._seekable and (index < self._next_index or index > self._next_index + _MAX_FORWARD_GRABS):
            self._capture.set(cv2.CAP_PROP_POS_FRAMES, index)
            self._next_index = int(self._capture.get(cv2.CAP_PROP_POS_FRAMES))
        while self._next_index < index:
            if not self._capture.grab():
                return None
            self._next_index += 1
        ok, frame = self._capture.read()
        if not ok:
            return None
        self._next_index = index + 1
        return frame

    def close(self) -> None:
        if self._capture is not None:
            self._capture.release()
            self._capture = None

    def __enter__(self) -> "MediaReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _count_frames(capture: cv2.VideoCapture) -> int:
    """The frames of a stream whose container does not say, counted by decoding it to its end."""
    count = 0
    while capture.grab():
        count += 1
    return count


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


def check_pixels(path: Path, width: int, height: int) -> None:
    """MediaError naming the file and its size when it is empty or larger than MAX_PIXELS."""
    if width <= 0 or height <= 0:
        raise MediaError(f"{path} declares a size of {width} x {height} pixels: it is damaged; save it again")
    if width * height > MAX_PIXELS:
        raise MediaError(f"{path} is {width} x {height} pixels ({width * height / 1e6:.0f} megapixels), more than "
                         f"facecache decodes ({MAX_PIXELS / 1e6:.0f} megapixels, e.g. 8192 x 8192): scale it down "
                         "first (e.g. to 3840 pixels wide)")
