"""Reproducible sample clips made from real portraits: each portrait slowly pans and
zooms in its own cell of a grid, with a few frames of plain background (no face),
written as an MP4. One portrait fills the whole frame's height (a single face); N
portraits tile the frame (a group scene with N faces)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import cv2
import numpy as np


def write_sample_clip(portrait: Path, out: Path, frames: int = 48, size: tuple[int, int] = (1920, 1080),
                      fps: float = 25.0, empty_every: int = 12) -> Path:
    """Write `frames` frames of `size` (width, height) with one face; every `empty_every`-th frame
    has no face."""
    return write_group_clip([portrait], out, 1, frames, size, fps, empty_every)


def write_group_clip(portraits: Sequence[Path], out: Path, faces: int, frames: int = 48,
                     size: tuple[int, int] = (1920, 1080), fps: float = 25.0, empty_every: int = 12) -> Path:
    """Write a clip with `faces` faces a frame: the portraits taken in turn (every other copy of a
    portrait mirrored, so no two faces are the same pixels), each in its own grid cell, panning
    and zooming; every `empty_every`-th frame has no face."""
    if faces < 1 or not portraits:
        raise ValueError("a sample clip needs at least one face and one portrait")
    images = []
    for path in portraits:
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if image is None:
            raise ValueError(f"cannot read the portrait {path}")
        images.append(image)
    tiles = [images[i % len(images)] if (i // len(images)) % 2 == 0 else images[i % len(images)][:, ::-1]
             for i in range(faces)]
    width, height = size
    columns, rows = _grid(faces, size, tiles[0].shape[1] / tiles[0].shape[0])
    cell_w, cell_h = width // columns, height // rows
    background = np.full((height, width, 3), (64, 80, 96), np.uint8)
    out.parent.mkdir(parents=True, exist_ok=True)
    writer = cv2.VideoWriter(str(out), cv2.VideoWriter_fourcc(*"mp4v"), fps, (width, height))
    if not writer.isOpened():
        raise RuntimeError(f"OpenCV cannot write MP4 files here ({out})")
    try:
        for index in range(frames):
            frame = background.copy()
            if not (empty_every and index % empty_every == empty_every - 1):
                t = index / max(frames - 1, 1)
                for cell, image in enumerate(tiles):
                    row, column = divmod(cell, columns)
                    # Odd cells pan the other way, so the faces do not move in step.
                    _paste_panned(frame, image, column * cell_w, row * cell_h, cell_w, cell_h,
                                  t if cell % 2 == 0 else 1.0 - t, t)
            writer.write(frame)
    finally:
        writer.release()
    return out


def _grid(faces: int, size: tuple[int, int], aspect: float) -> tuple[int, int]:
    """(columns, rows) whose cells show a portrait of width/height `aspect` largest (fewest cells on a tie)."""
    width, height = size

    def portrait_height(columns: int) -> float:
        rows = math.ceil(faces / columns)
        return min(width / columns / aspect, height / rows)

    columns = max(range(1, faces + 1), key=lambda c: (round(portrait_height(c), 6), -c))
    return columns, math.ceil(faces / columns)


def _paste_panned(frame: np.ndarray, image: np.ndarray, x0: int, y0: int, cell_w: int, cell_h: int,
                  pan: float, zoom: float) -> None:
    """`image` zoomed from 0.8 to 1.0 of the size that fits the cell (as `zoom` goes 0..1) and
    panned left to right across the cell (as `pan` goes 0..1)."""
    scale = min(cell_w / image.shape[1], cell_h / image.shape[0]) * (0.8 + 0.2 * zoom)
    scaled = cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    ph, pw = scaled.shape[:2]
    x = x0 + int((cell_w - pw) * (0.2 + 0.6 * pan))
    y = y0 + (cell_h - ph) // 2
    cell = frame[y0:y0 + cell_h, x0:x0 + cell_w]
    _paste(cell, scaled, x - x0, y - y0)


def _paste(frame: np.ndarray, image: np.ndarray, x: int, y: int) -> None:
    h, w = frame.shape[:2]
    x0, y0 = max(x, 0), max(y, 0)
    x1, y1 = min(x + image.shape[1], w), min(y + image.shape[0], h)
    if x1 > x0 and y1 > y0:
        frame[y0:y1, x0:x1] = image[y0 - y:y1 - y, x0 - x:x1 - x]
