"""Decoding stills and videos into BGR uint8 frames with OpenCV.

`open_media` probes the file first, so an unreadable or non-media file is a
clear error before anything touches the cache. A video is read forward from
the first wanted frame; only a small window of frames is ever in memory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import cv2
import numpy as np

from facecache.errors import FaceCacheError

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp"}
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
        if not self.path.is_file():
            raise MediaError(f"media file {self.path} does not exist: check the path")
        self._still: np.ndarray | None = None
        self._first: np.ndarray | None = None
        self._capture: cv2.VideoCapture | None = None
        self._next_index = 0
        if self.path.suffix.lower() in IMAGE_SUFFIXES:
            self._still = _read_still(self.path)
            height, width = self._still.shape[:2]
            self.info = MediaInfo(self.path, 1, width, height, 0.0, True)
        else:
            self._open_video()

    def _open_video(self) -> None:
        capture = cv2.VideoCapture(str(self.path))
        ok, first = capture.read() if capture.isOpened() else (False, None)
        if not ok or first is None:
            capture.release()
            raise MediaError(f"{self.path} is not a video or image that OpenCV can decode: "
                             "convert it to MP4 (H.264) or PNG frames, e.g. with ffmpeg")
        count = int(capture.get(cv2.CAP_PROP_FRAME_COUNT))
        fps = float(capture.get(cv2.CAP_PROP_FPS) or 0.0)
        self._capture = capture
        self._next_index = 1
        self._first = first
        self.info = MediaInfo(self.path, max(count, 1), first.shape[1], first.shape[0], fps, False)

    def frames(self, indices: Iterable[int]) -> Iterator[tuple[int, np.ndarray]]:
        """Yield (index, frame) for ascending indices; stops early at a truncated end."""
        for index in indices:
            if not 0 <= index < self.info.frame_count:
                raise MediaError(f"frame {index} is outside {self.path} (0-{self.info.frame_count - 1})")
            if self._still is not None:
                yield index, self._still
                continue
            frame = self._video_frame(index)
            if frame is None:
                return  # the file ends before its declared length (truncated)
            yield index, frame

    def _video_frame(self, index: int) -> np.ndarray | None:
        if index == 0 and self._first is not None:
            return self._first
        if index < self._next_index or index > self._next_index + 64:
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


def _read_still(path: Path) -> np.ndarray:
    data = np.fromfile(path, dtype=np.uint8)  # imdecode also copes with non-ASCII paths on Windows
    image = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
    if image is None:
        raise MediaError(f"{path} is not an image that OpenCV can decode: save it as PNG or JPEG")
    return image
