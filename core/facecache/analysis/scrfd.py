"""SCRFD face detector adapter (FaceFusion's ``scrfd_2.5g``; ``retinaface_10g``
shares the same contract).

Contract: input ``input`` (1, 3, H, W) float32 ``(pixel - 127.5) / 128`` of the
BGR frame letterboxed into H x W (default 640 x 640). Nine outputs, in order:
scores, box distances and landmark offsets, each for strides 8, 16 and 32.
Each map has two anchors per cell, cells row-major, anchor centre
``(col * stride, row * stride)``; boxes are ``centre -/+ distance * stride``
(left, top, right, bottom), landmarks ``centre + offset * stride`` with offsets
interleaved ``x0, y0, ..., x4, y4``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from facecache.analysis.boxes import nms
from facecache.analysis.frames import check_bgr_frame
from facecache.analysis.letterbox import letterbox, to_nchw
from facecache.analysis.session import (
    OnnxSession,
    contract_error,
    require_inputs,
    require_output_count,
    run_model,
    static_input_hw,
)
from facecache.analysis.results import Detection

STRIDES = (8, 16, 32)
ANCHORS_PER_CELL = 2


def anchor_centres(rows: int, cols: int, stride: int, per_cell: int = ANCHORS_PER_CELL) -> np.ndarray:
    """(rows * cols * per_cell, 2) anchor centres ``(x, y)``: cells row-major,
    each cell's anchors next to each other."""
    ys, xs = np.mgrid[:rows, :cols]
    centres = np.stack([xs.ravel(), ys.ravel()], axis=1).astype(np.float64) * stride
    return np.repeat(centres, per_cell, axis=0)


def distances_to_boxes(centres: np.ndarray, distances: np.ndarray) -> np.ndarray:
    """Boxes from centres and (left, top, right, bottom) distances, both in pixels."""
    d = np.asarray(distances, dtype=np.float64).reshape(-1, 4)
    c = np.asarray(centres, dtype=np.float64).reshape(-1, 2)
    return np.stack([c[:, 0] - d[:, 0], c[:, 1] - d[:, 1], c[:, 0] + d[:, 2], c[:, 1] + d[:, 3]], axis=1)


def offsets_to_points(centres: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """(N, 5, 2) points from centres and interleaved (x, y) offsets in pixels."""
    c = np.asarray(centres, dtype=np.float64).reshape(-1, 1, 2)
    return c + np.asarray(offsets, dtype=np.float64).reshape(len(c), -1, 2)


def decode_scrfd(outputs: Sequence[np.ndarray], size: tuple[int, int], score_threshold: float, model: str = "scrfd"):
    """Decode the nine raw outputs into (boxes (N, 4), scores (N,), kps (N, 5, 2))
    in pixels of the detector's input canvas, before NMS."""
    width, height = size
    levels = len(STRIDES)
    if len(outputs) != 3 * levels:
        raise contract_error(model, f"expected {3 * levels} outputs, got {len(outputs)}")
    boxes, scores, points = [], [], []
    for index, stride in enumerate(STRIDES):
        rows, cols = height // stride, width // stride
        count = rows * cols * ANCHORS_PER_CELL
        score = np.asarray(outputs[index], dtype=np.float64).reshape(-1)
        distance = np.asarray(outputs[index + levels], dtype=np.float64).reshape(-1, 4)
        offset = np.asarray(outputs[index + 2 * levels], dtype=np.float64).reshape(-1, 10)
        if not (len(score) == len(distance) == len(offset) == count):
            raise contract_error(
                model,
                f"stride {stride} maps hold {len(score)} scores, {len(distance)} boxes and {len(offset)} landmark sets; "
                f"a {width}x{height} input needs {count} of each",
            )
        keep = np.flatnonzero(score >= score_threshold)
        if keep.size == 0:
            continue
        centres = anchor_centres(rows, cols, stride)[keep]
        boxes.append(distances_to_boxes(centres, distance[keep] * stride))
        points.append(offsets_to_points(centres, offset[keep] * stride))
        scores.append(score[keep])
    if not scores:
        return np.zeros((0, 4)), np.zeros((0,)), np.zeros((0, 5, 2))
    return np.concatenate(boxes), np.concatenate(scores), np.concatenate(points)


def _size_pair(size) -> tuple[int, int]:
    if np.ndim(size) == 0:
        return int(size), int(size)
    return int(size[0]), int(size[1])


class ScrfdDetector:
    """Faces with five key points from an SCRFD (or RetinaFace) session."""

    INPUT = "input"

    def __init__(
        self,
        session: OnnxSession,
        *,
        size=(640, 640),
        score_threshold: float = 0.5,
        iou_threshold: float = 0.4,
        model: str = "scrfd_2.5g",
    ) -> None:
        self._session = session
        self.model = model
        self.size = _size_pair(size)
        if any(side % 32 or side < 32 for side in self.size):
            raise ValueError(f"{model}: detector size must be multiples of 32 (e.g. 640x640), got {self.size}")
        self.score_threshold = float(score_threshold)
        self.iou_threshold = float(iou_threshold)
        require_inputs(session, model, [self.INPUT])
        self._outputs = require_output_count(session, model, 9)
        fixed_h, fixed_w = static_input_hw(session, self.INPUT)
        if (fixed_h is not None and fixed_h != self.size[1]) or (fixed_w is not None and fixed_w != self.size[0]):
            raise ValueError(f"{model}: this graph only takes {fixed_w}x{fixed_h} input; create the detector with size=({fixed_w}, {fixed_h})")

    def describe(self) -> dict:
        """The settings that change this detector's results (for cache namespaces)."""
        return {
            "model": self.model,
            "size": list(self.size),
            "score_threshold": self.score_threshold,
            "iou_threshold": self.iou_threshold,
        }

    def detect(self, frame: np.ndarray) -> list[Detection]:
        """Faces in a BGR uint8 frame, best score first."""
        frame = check_bgr_frame(frame)
        fitted = letterbox(frame, self.size)
        outputs = run_model(self._session, self.model, self._outputs, {self.INPUT: to_nchw(fitted.image, 127.5, 128.0)})
        boxes, scores, points = decode_scrfd(outputs, self.size, self.score_threshold, self.model)
        keep = nms(boxes, scores, self.iou_threshold)
        boxes = fitted.boxes_to_frame(boxes[keep])
        points = fitted.points_to_frame(points[keep])
        return [Detection(box, score, kps) for box, score, kps in zip(boxes, scores[keep], points)]
