"""Box maths shared by the detectors: areas, overlap, non-maximum suppression,
squaring and regression. Boxes are (N, 4) arrays of ``x1, y1, x2, y2``."""

from __future__ import annotations

import numpy as np


def box_areas(boxes: np.ndarray) -> np.ndarray:
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    return np.clip(boxes[:, 2] - boxes[:, 0], 0, None) * np.clip(boxes[:, 3] - boxes[:, 1], 0, None)


def overlaps(box: np.ndarray, boxes: np.ndarray, mode: str = "union") -> np.ndarray:
    """Overlap of one box with each of ``boxes``.

    mode "union": intersection over union; mode "min": intersection over the
    smaller of the two areas (suppresses a box nested inside a bigger one).
    """
    box = np.asarray(box, dtype=np.float64).reshape(4)
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    width = np.clip(np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]), 0, None)
    height = np.clip(np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]), 0, None)
    inter = width * height
    area = box_areas(box[None])[0]
    areas = box_areas(boxes)
    if mode == "union":
        denominator = area + areas - inter
    elif mode == "min":
        denominator = np.minimum(area, areas)
    else:
        raise ValueError(f"overlap mode must be 'union' or 'min', got {mode!r}")
    return np.where(denominator > 0, inter / np.where(denominator > 0, denominator, 1.0), 0.0)


def nms(boxes: np.ndarray, scores: np.ndarray, threshold: float, mode: str = "union") -> np.ndarray:
    """Greedy non-maximum suppression.

    Returns the indices of the boxes kept, best score first: a box is dropped
    when its overlap (see ``overlaps``) with a better kept box exceeds ``threshold``.
    """
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    if len(boxes) != len(scores):
        raise ValueError(f"nms needs one score per box, got {len(boxes)} boxes and {len(scores)} scores")
    if mode not in ("union", "min"):
        raise ValueError(f"overlap mode must be 'union' or 'min', got {mode!r}")
    order = np.argsort(-scores, kind="stable")
    x1, y1, x2, y2 = (boxes[order, i] for i in range(4))
    areas = box_areas(boxes[order])
    alive = np.ones(len(order), dtype=bool)
    keep: list[int] = []
    for i in range(len(order)):
        if not alive[i]:
            continue
        keep.append(int(order[i]))
        rest = np.flatnonzero(alive[i + 1 :]) + i + 1
        if rest.size == 0:
            break
        inter = np.maximum(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), 0.0) * np.maximum(
            np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), 0.0
        )
        denominator = areas[i] + areas[rest] - inter if mode == "union" else np.minimum(areas[i], areas[rest])
        overlap = np.where(denominator > 0, inter / np.where(denominator > 0, denominator, 1.0), 0.0)
        alive[rest[overlap > threshold]] = False
    return np.asarray(keep, dtype=np.int64)


def square_boxes(boxes: np.ndarray) -> np.ndarray:
    """Squares with the same centres, side = the longer side of each box."""
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    side = np.maximum(boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1])
    cx = (boxes[:, 0] + boxes[:, 2]) / 2
    cy = (boxes[:, 1] + boxes[:, 3]) / 2
    half = side / 2
    return np.stack([cx - half, cy - half, cx + half, cy + half], axis=1)


def regress_boxes(boxes: np.ndarray, deltas: np.ndarray) -> np.ndarray:
    """Move each edge by its delta times the box's width (x) or height (y)."""
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    deltas = np.asarray(deltas, dtype=np.float64).reshape(-1, 4)
    width = boxes[:, 2] - boxes[:, 0]
    height = boxes[:, 3] - boxes[:, 1]
    return boxes + deltas * np.stack([width, height, width, height], axis=1)
