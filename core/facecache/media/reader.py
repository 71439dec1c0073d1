"""Decoding stills, image sequences and videos into BGR uint8 frames with OpenCV.

`MediaReader` probes its input first, so an unreadable or non-media file is a
clear error before anything touches the cache. Frames are read one at a time
(never the whole clip in memory). Video access is frame-accurate: reading on
decodes forward, a jump seeks by frame number, which OpenCV's FFmpeg backend
resolves to the exact frame of a constant-frame-rate file (tested against
sequential decoding on an MP4 whose keyframes are 12 frames apart). A file
that ends before its declared length raises MediaError after its last good
frame, so callers keep what was done and nothing half-decoded is used. An MP4
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
        count = int(capture.get(cv2.CAP_PROP_FRAME_COUNT))
        fps = float(capture.get(cv2.CAP_PROP_FPS) or 0.0)
        self._capture = capture
        self.info = MediaInfo(self.path, max(count, 1), width, height, fps, False)

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
        if index < self._next_index or index > self._next_index + _MAX_FORWARD_GRABS:
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


def sequence_files(folder: Path) -> list[Path]:
    """The images of a folder in frame order: by name, numbers compared as numbers."""
    def natural(path: Path):
        return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)]

    return sorted((p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file()), key=natural)


def _read_still(path: Path) -> np.ndarray:
    data = np.fromfile(path, dtype=np.uint8)  # imdecode also copes with non-ASCII paths on Windows
    image = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
    if image is None:
        raise MediaError(f"{path} is not an image that OpenCV can decode: save it as PNG or JPEG")
    return image
