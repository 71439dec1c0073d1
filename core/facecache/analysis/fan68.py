"""2DFAN4 68-point landmarker adapter (FaceFusion's ``2dfan4``).

Contract: the face box is scaled so its longer side is 195 px and centred in a
256 x 256 crop (turned upright by the face angle); input ``input``
(1, 3, 256, 256) float32 ``pixel / 255`` (channels as in the frame). Outputs:
landmarks (1, 68, 3) in 64 x 64 heatmap units (x, y, -) and heatmaps
(1, 68, 64, 64). Points are scaled by 256 / 64 and mapped back through the
inverse crop transform; the score is the mean of the heatmap maxima mapped
from 0..0.9 onto 0..1. A graph whose batch axis is open takes all faces of a
frame in one run (N, 3, 256, 256).
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from facecache.analysis.align import compose_affine, invert_affine, transform_points
from facecache.analysis.frames import check_bgr_frame
from facecache.analysis.session import (OnnxSession, contract_error, has_batch_axis, require_inputs,
                                        require_output_count, run_batched)
from facecache.analysis.results import FaceLike, Landmarks68

CROP_SIZE = 256
HEATMAP_SIZE = 64
FACE_SIDE = 195.0
FULL_SCORE_AT = 0.9
DARK_LIGHTNESS = 30.0


def crop_matrix(box: np.ndarray, angle: int = 0) -> np.ndarray:
    """(2, 3) matrix from frame pixels to the 256 x 256 crop: the box's longer
    side becomes 195 px, its centre the crop centre, then the crop is turned
    by ``angle`` degrees (a multiple of 90, counter-clockwise on screen)."""
    x1, y1, x2, y2 = np.asarray(box, dtype=np.float64).reshape(4)
    scale = FACE_SIDE / max(x2 - x1, y2 - y1, 1.0)
    tx = (CROP_SIZE - (x1 + x2) * scale) / 2
    ty = (CROP_SIZE - (y1 + y2) * scale) / 2
    matrix = np.array([[scale, 0.0, tx], [0.0, scale, ty]])
    if angle % 360:
        if angle % 90:
            raise ValueError(f"the landmarker crop turns by multiples of 90 degrees only, got {angle}")
        rotation = cv2.getRotationMatrix2D((CROP_SIZE / 2, CROP_SIZE / 2), float(angle), 1.0)
        matrix = compose_affine(rotation, matrix)
    return matrix


def face_angle(kps5: np.ndarray) -> int:
    """The multiple of 90 degrees nearest the eye line's clockwise tilt on screen
    (0 for an upright face): the angle that turns the face upright in ``crop_matrix``."""
    kps5 = np.asarray(kps5, dtype=np.float64).reshape(5, 2)
    dx, dy = kps5[1] - kps5[0]
    theta = np.degrees(np.arctan2(dy, dx)) % 360
    return int(round(theta / 90.0)) % 4 * 90


def heatmap_score(heatmaps: np.ndarray) -> float:
    """Mean of each heatmap's maximum, mapped from 0..0.9 onto 0..1."""
    heatmaps = np.asarray(heatmaps, dtype=np.float64)
    maxima = heatmaps.reshape(-1, heatmaps.shape[-2] * heatmaps.shape[-1]).max(axis=1)
    return float(np.interp(maxima.mean(), [0.0, FULL_SCORE_AT], [0.0, 1.0]))


def landmarks_to_frame(raw: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """(68, 2) frame points from (68, >=2) heatmap-unit points and the crop matrix."""
    raw = np.asarray(raw, dtype=np.float64).reshape(68, -1)[:, :2]
    return transform_points(raw * (CROP_SIZE / HEATMAP_SIZE), invert_affine(matrix))


def brighten_if_dark(crop: np.ndarray) -> np.ndarray:
    """Equalise the lightness of a dark BGR crop (mean L below 30) with CLAHE."""
    lab = cv2.cvtColor(crop, cv2.COLOR_BGR2Lab)
    if float(lab[:, :, 0].mean()) >= DARK_LIGHTNESS:
        return crop
    lab[:, :, 0] = cv2.createCLAHE(clipLimit=2.0).apply(np.ascontiguousarray(lab[:, :, 0]))
    return cv2.cvtColor(lab, cv2.COLOR_Lab2BGR)


class Fan68Landmarker:
    """68 landmarks for a detected face box from a 2DFAN4 session."""

    INPUT = "input"

    def __init__(self, session: OnnxSession, *, model: str = "2dfan4") -> None:
        self._session = session
        self.model = model
        require_inputs(session, model, [self.INPUT])
        self._outputs = require_output_count(session, model, 2)
        self._batched = has_batch_axis(session, self.INPUT)

    def describe(self) -> dict:
        """The settings that change this landmarker's results (for cache namespaces)."""
        return {"model": self.model, "crop": CROP_SIZE, "face_side": FACE_SIDE}

    def landmarks(self, frame: np.ndarray, box: np.ndarray, angle: int = 0) -> Landmarks68:
        """Landmarks of the face in ``box`` (x1, y1, x2, y2); ``angle`` turns the
        crop upright (see ``face_angle``)."""
        return self.landmarks_boxes(frame, [box], [angle])[0]

    def landmarks_batch(self, frame: np.ndarray, faces: Sequence[FaceLike]) -> list[Landmarks68]:
        """Landmarks of every face of a frame (anything with a box and kps5), in one session run when the
        graph allows; each crop is turned upright by the face's angle."""
        return self.landmarks_boxes(frame, [face.box for face in faces], [face_angle(face.kps5) for face in faces])

    def landmarks_boxes(self, frame: np.ndarray, boxes, angles) -> list[Landmarks68]:
        """Landmarks of the faces in `boxes`, each crop turned by its angle (see ``face_angle``)."""
        frame = check_bgr_frame(frame)
        if not len(boxes):
            return []
        matrices = [crop_matrix(box, angle) for box, angle in zip(boxes, angles)]
        crops = [brighten_if_dark(cv2.warpAffine(frame, matrix, (CROP_SIZE, CROP_SIZE), flags=cv2.INTER_LINEAR,
                                                 borderMode=cv2.BORDER_CONSTANT)) for matrix in matrices]
        blobs = np.ascontiguousarray((np.stack(crops).astype(np.float32) / np.float32(255.0)).transpose(0, 3, 1, 2))
        outputs = run_batched(self._session, self.model, self._outputs, self.INPUT, blobs, self._batched)
        points = [o for o in outputs if o.ndim == 3 and o.shape[-2:] == (68, 3) and len(o) == len(blobs)]
        heatmaps = [o for o in outputs if o.ndim == 4 and o.shape[1] == 68 and len(o) == len(blobs)]
        if len(points) != 1 or len(heatmaps) != 1:
            shapes = [tuple(o.shape) for o in outputs]
            raise contract_error(self.model, f"expected outputs of shapes ({len(blobs)}, 68, 3) and "
                                             f"({len(blobs)}, 68, 64, 64), got {shapes}")
        return [Landmarks68(landmarks_to_frame(points[0][i], matrix), heatmap_score(heatmaps[0][i]))
                for i, matrix in enumerate(matrices)]
