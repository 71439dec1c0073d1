"""Fitting a frame into a fixed detector input, and back.

The frame is shrunk (never enlarged) to fit inside the detector size keeping
its aspect ratio, placed at the top-left of a black canvas (zero padding at the
bottom and right), and results are mapped back by the per-axis resize ratio.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np


@dataclass(frozen=True, eq=False)
class Letterboxed:
    image: np.ndarray  # (height, width, 3) uint8 canvas of the detector's size
    ratio_x: float  # frame pixels per canvas pixel, horizontally
    ratio_y: float  # frame pixels per canvas pixel, vertically

    def points_to_frame(self, points: np.ndarray) -> np.ndarray:
        """Map (..., 2) canvas points to frame pixels."""
        return np.asarray(points, dtype=np.float64) * np.array([self.ratio_x, self.ratio_y])

    def boxes_to_frame(self, boxes: np.ndarray) -> np.ndarray:
        """Map (N, 4) canvas boxes to frame pixels."""
        return np.asarray(boxes, dtype=np.float64) * np.array([self.ratio_x, self.ratio_y, self.ratio_x, self.ratio_y])


def letterbox(frame: np.ndarray, size: tuple[int, int]) -> Letterboxed:
    """Fit ``frame`` into a canvas of ``size`` = (width, height)."""
    target_w, target_h = int(size[0]), int(size[1])
    height, width = frame.shape[:2]
    if width > target_w or height > target_h:
        scale = min(target_w / width, target_h / height)
        new_w = min(target_w, max(1, int(width * scale)))
        new_h = min(target_h, max(1, int(height * scale)))
        fitted = cv2.resize(frame, (new_w, new_h), interpolation=cv2.INTER_AREA)
    else:
        fitted = frame
    canvas = np.zeros((target_h, target_w, 3), dtype=np.uint8)
    canvas[: fitted.shape[0], : fitted.shape[1]] = fitted
    return Letterboxed(canvas, width / fitted.shape[1], height / fitted.shape[0])


def to_nchw(image: np.ndarray, subtract: float, divide: float) -> np.ndarray:
    """(H, W, 3) image -> (1, 3, H, W) float32 of ``(pixel - subtract) / divide``."""
    blob = (image.astype(np.float32) - np.float32(subtract)) / np.float32(divide)
    return np.ascontiguousarray(blob.transpose(2, 0, 1)[None])
