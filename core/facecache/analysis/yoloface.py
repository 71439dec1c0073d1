"""YOLOv8-face detector adapter (FaceFusion's ``yoloface_8n``).

Contract: input ``input`` (1, 3, 640, 640) float32 ``pixel / 255`` of the BGR
frame letterboxed into 640 x 640. One output (1, 20, N): after dropping the
batch axis and transposing, each of the N rows is ``cx, cy, w, h, score``
followed by five ``x, y, confidence`` landmark triples, in input pixels.
"""

from __future__ import annotations

import numpy as np

from facecache.analysis.boxes import nms
from facecache.analysis.frames import check_bgr_frame
from facecache.analysis.letterbox import letterbox, to_nchw
from facecache.analysis.session import OnnxSession, contract_error, require_inputs, require_output_count, run_model
from facecache.analysis.results import Detection

SIZE = (640, 640)
ROW_LENGTH = 20


def output_rows(output: np.ndarray, model: str = "yoloface") -> np.ndarray:
    """The (N, 20) rows of a raw (1, 20, N) output."""
    array = np.asarray(output, dtype=np.float64)
    if array.ndim == 3 and array.shape[0] == 1:
        array = array[0]
    if array.ndim != 2 or array.shape[0] != ROW_LENGTH:
        raise contract_error(model, f"expected an output of shape (1, {ROW_LENGTH}, N), got {np.shape(output)}")
    return array.T


def decode_rows(rows: np.ndarray, score_threshold: float):
    """(boxes (N, 4), scores (N,), kps (N, 5, 2)) of the rows scoring at least
    ``score_threshold``, in input pixels, before NMS."""
    rows = np.asarray(rows, dtype=np.float64).reshape(-1, ROW_LENGTH)
    rows = rows[rows[:, 4] >= score_threshold]
    cx, cy, w, h = rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3]
    boxes = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
    kps = rows[:, 5:].reshape(-1, 5, 3)[:, :, :2]
    return boxes, rows[:, 4].copy(), kps


class YoloFaceDetector:
    """Faces with five key points from a yoloface session."""

    INPUT = "input"

    def __init__(self, session: OnnxSession, *, score_threshold: float = 0.5, iou_threshold: float = 0.4, model: str = "yoloface_8n") -> None:
        self._session = session
        self.model = model
        self.score_threshold = float(score_threshold)
        self.iou_threshold = float(iou_threshold)
        require_inputs(session, model, [self.INPUT])
        self._outputs = require_output_count(session, model, 1)

    def describe(self) -> dict:
        """The settings that change this detector's results (for cache namespaces)."""
        return {"model": self.model, "size": list(SIZE), "score_threshold": self.score_threshold, "iou_threshold": self.iou_threshold}

    def detect(self, frame: np.ndarray) -> list[Detection]:
        """Faces in a BGR uint8 frame, best score first."""
        frame = check_bgr_frame(frame)
        fitted = letterbox(frame, SIZE)
        (output,) = run_model(self._session, self.model, self._outputs, {self.INPUT: to_nchw(fitted.image, 0.0, 255.0)})
        boxes, scores, kps = decode_rows(output_rows(output, self.model), self.score_threshold)
        keep = nms(boxes, scores, self.iou_threshold)
        boxes = fitted.boxes_to_frame(boxes[keep])
        kps = fitted.points_to_frame(kps[keep])
        return [Detection(box, score, points) for box, score, points in zip(boxes, scores[keep], kps)]
