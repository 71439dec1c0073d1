"""A reproducible sample clip made from a real portrait: a slow pan and zoom,
with a few frames of plain background (no face), written as an MP4."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np


def write_sample_clip(portrait: Path, out: Path, frames: int = 48, size: tuple[int, int] = (1920, 1080),
                      fps: float = 25.0, empty_every: int = 12) -> Path:
    """Write `frames` frames of `size` (width, height); every `empty_every`-th frame has no face."""
    image = cv2.imread(str(portrait), cv2.IMREAD_COLOR)
    if image is None:
        raise ValueError(f"cannot read the portrait {portrait}")
    width, height = size
    background = np.full((height, width, 3), (64, 80, 96), np.uint8)
    out.parent.mkdir(parents=True, exist_ok=True)
    writer = cv2.VideoWriter(str(out), cv2.VideoWriter_fourcc(*"mp4v"), fps, (width, height))
    if not writer.isOpened():
        raise RuntimeError(f"OpenCV cannot write MP4 files here ({out})")
    try:
        for index in range(frames):
            if empty_every and index % empty_every == empty_every - 1:
                writer.write(background)
                continue
            t = index / max(frames - 1, 1)
            scale = height * (0.8 + 0.2 * t) / image.shape[0]  # slow zoom in
            portrait_scaled = cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
            frame = background.copy()
            ph, pw = portrait_scaled.shape[:2]
            x = int((width - pw) * (0.2 + 0.6 * t))  # slow pan left to right
            y = (height - ph) // 2
            _paste(frame, portrait_scaled, x, y)
            writer.write(frame)
    finally:
        writer.release()
    return out


def _paste(frame: np.ndarray, image: np.ndarray, x: int, y: int) -> None:
    h, w = frame.shape[:2]
    x0, y0 = max(x, 0), max(y, 0)
    x1, y1 = min(x + image.shape[1], w), min(y + image.shape[0], h)
    if x1 > x0 and y1 > y0:
        frame[y0:y1, x0:x1] = image[y0 - y:y1 - y, x0 - x:x1 - x]
