"""MediaPipe's iris landmark model: how open each eye's lids are and where its iris sits. The quality bench
reads each eye of the target and of the swapped face with it, in the same square around the target's eye,
and compares; the classic swap's eyes come from the face mesh's 68 points (which read lowered lids as open)
and never from it, so for that swap it is an independent check. The `classic_eyes` swapper moves the
source's lids and iris onto the target's as this model reads them (``swap.eye_follow``); for it, the bench's
eye figures are the model's own agreement with itself, not an independent check.

Contract of the converted graph (see the catalog's `iris_landmark`): input `input` (N, 3, 64, 64) float32
RGB in 0..1 of a square around one eye, the image-right eye mirrored (the model knows the image-left eye);
outputs `eye_contours` (N, 213), 71 (x, y, z) points in input pixels, and `iris` (N, 15), the iris centre
then four points on its rim. The first 16 contour points are the lids: 0-8 the lower lid from corner to
corner, 9-15 the upper lid between the corners; upper point 9 + k lies above lower point 1 + k.

One square's reading of a small eye is unsteady: on the group photo's 10-20 pixel eyes it moved by up to
0.13 eye widths of opening and 0.18 of iris when the picture moved by 1-3 pixels under the square. So each
eye is read in nine squares (SQUARES) and each point's median kept, then read again the same way in squares
moved onto the eye that first reading found, so the reading follows the eye. Measured the same way: at
most 0.044 of opening and 0.083 of iris on the group photo (0.146 on a 9-pixel eye), at most 0.027 and
0.011 on the one-face portraits (tests/analysis/test_iris.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from facecache.analysis.frames import check_bgr_frame
from facecache.analysis.session import OnnxSession, contract_error, require_inputs, require_outputs, run_model

IRIS_MODEL = "iris_landmark"  # its name in the model catalog
INPUT_SIZE = 64
CONTOUR_POINTS = 71
IRIS_POINTS = 5
# MediaPipe's eye square: 2.3 times the distance between the eye's corners (a margin of about 25 %).
EYE_SQUARE = 2.3
# The squares each eye is read in (their middles moved by offsets in corner distances; sizes in corner distances).
SQUARES = tuple(((dx, dy), size) for size in (2.1, EYE_SQUARE, 2.5) for dx, dy in ((0.0, 0.0), (0.06, 0.06), (-0.06, -0.06)))
# The 68-point scheme's eye corners, image-left eye then image-right eye (the second is mirrored).
EYE_CORNERS = ((36, 39), (42, 45))
# Lid pairs the opening is measured over: upper point 9 + k over lower point 1 + k, for the middle three k
# (the points over the iris, where a lowered lid shows; near the corners every eye is closed).
_OPENING_PAIRS = ((11, 3), (12, 4), (13, 5))
_CORNERS = (0, 8)


@dataclass(frozen=True)
class EyeReading:
    """One eye as the iris model reads it, in picture pixels: its 16 lid points and 5 iris points."""
    lids: np.ndarray
    iris: np.ndarray

    @property
    def width(self) -> float:
        return float(np.linalg.norm(self.lids[_CORNERS[1]] - self.lids[_CORNERS[0]]))

    @property
    def opening(self) -> float:
        return lid_opening(self.lids)


def lid_opening(lids: np.ndarray) -> float:
    """The opening over the iris of an eye's 16 lid points, in eye widths (corner to corner): about 0.3 for an
    open eye, under 0.17 for a lowered one, near 0 for a closed one (the same in any picture of the eye)."""
    along = lids[_CORNERS[1]] - lids[_CORNERS[0]]
    width = max(float(np.linalg.norm(along)), 1e-6)
    across = np.array([-along[1], along[0]]) / width  # the gap square to the corners' line
    gaps = [abs(float(np.dot(lids[upper] - lids[lower], across))) for upper, lower in _OPENING_PAIRS]
    return float(np.mean(gaps)) / width


def eye_matrix(first: np.ndarray, second: np.ndarray, mirrored: bool, offset: tuple[float, float] = (0.0, 0.0),
               size: float = EYE_SQUARE) -> np.ndarray:
    """(2, 3) matrix from picture pixels to the model's input: a square of ``size`` corner distances around
    the eye whose corners are ``first`` and ``second`` (left to right in the picture), its middle moved by
    ``offset`` corner distances (along the corners' line, then across it), turned so the corners lie level,
    mirrored for the image-right eye."""
    first, second = np.asarray(first, np.float64), np.asarray(second, np.float64)
    along = second - first
    distance = max(float(np.linalg.norm(along)), 1e-6)
    scale = INPUT_SIZE / max(size * distance, 1.0)
    cos, sin = along / distance * scale
    flip = -1.0 if mirrored else 1.0
    linear = np.array([[flip * cos, flip * sin], [-sin, cos]])
    unit = along / distance
    centre = (first + second) / 2 + distance * (offset[0] * unit + offset[1] * np.array([-unit[1], unit[0]]))
    return np.hstack([linear, (INPUT_SIZE / 2 - linear @ centre)[:, None]])


class IrisChecker:
    """Both eyes of faces, as the iris model reads them around the eyes that given 68-point landmarks place."""

    INPUT = "input"
    OUTPUTS = ("eye_contours", "iris")

    def __init__(self, session: OnnxSession, *, model: str = IRIS_MODEL) -> None:
        self._session = session
        self.model = model
        require_inputs(session, model, [self.INPUT])
        require_outputs(session, model, self.OUTPUTS)

    def read(self, image: np.ndarray, landmarks: list[np.ndarray]) -> list[tuple[EyeReading, EyeReading]]:
        """For each face's (68, 2) landmarks, its (image-left, image-right) eye in the BGR ``image``: read in
        squares around the landmarks' eye corners, then in the same squares moved onto the eye found there. Two
        pictures read with the same landmarks (a target and its swap) start from the same squares. Two
        session runs."""
        if not landmarks:
            return []
        image = check_bgr_frame(image)
        corners = [points[[a, b]] for points in (np.asarray(p, np.float64).reshape(68, 2) for p in landmarks)
                   for a, b in EYE_CORNERS]
        first = self._read(image, corners)
        # again, each square moved to the middle of the corners the model found (its size and turn kept: the
        # model knows eyes in squares sized by the face's own corners); the reading follows the eye
        eyes = self._read(image, [pair + _moved(pair, eye) for pair, eye in zip(corners, first)])
        return list(zip(eyes[0::2], eyes[1::2]))

    def _read(self, image: np.ndarray, corners: list[np.ndarray]) -> list[EyeReading]:
        """Each eye (image-left, image-right, alternately) read in SQUARES around its (2, 2) corners."""
        matrices = [eye_matrix(*pair, side % 2 == 1, offset, size)
                    for side, pair in enumerate(corners) for offset, size in SQUARES]
        crops = [cv2.warpAffine(image, m, (INPUT_SIZE, INPUT_SIZE), flags=cv2.INTER_AREA if m[0, 0] ** 2 + m[0, 1] ** 2 < 1
                                else cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE) for m in matrices]
        blob = np.stack(crops)[..., ::-1].transpose(0, 3, 1, 2).astype(np.float32) * np.float32(1 / 255)
        contours, iris = run_model(self._session, self.model, self.OUTPUTS, {self.INPUT: np.ascontiguousarray(blob)})
        if contours.size != len(matrices) * CONTOUR_POINTS * 3 or iris.size != len(matrices) * IRIS_POINTS * 3:
            raise contract_error(self.model, f"expected {CONTOUR_POINTS * 3} and {IRIS_POINTS * 3} values per eye, "
                                             f"got shapes {tuple(contours.shape)} and {tuple(iris.shape)}")
        contours = contours.reshape(len(matrices), CONTOUR_POINTS, 3)[:, :16, :2]
        iris = iris.reshape(len(matrices), IRIS_POINTS, 3)[..., :2]
        lids = np.stack([_to_picture(c, m) for c, m in zip(contours, matrices)]).reshape(-1, len(SQUARES), 16, 2)
        centres = np.stack([_to_picture(i, m) for i, m in zip(iris, matrices)]).reshape(-1, len(SQUARES), IRIS_POINTS, 2)
        eyes = [EyeReading(lids=np.median(l, axis=0), iris=np.median(c, axis=0)) for l, c in zip(lids, centres)]
        return eyes


def _moved(corners: np.ndarray, eye: EyeReading) -> np.ndarray:
    """From the middle of the (2, 2) ``corners`` to the middle of the eye's own corners, at most half the
    corners' distance (the far eye of a turned head can be read anywhere)."""
    move = eye.lids[list(_CORNERS)].mean(axis=0) - corners.mean(axis=0)
    limit = 0.5 * float(np.linalg.norm(corners[1] - corners[0]))
    length = float(np.linalg.norm(move))
    return move if length <= limit else move * (limit / length)


def _to_picture(points: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    back = cv2.invertAffineTransform(matrix)
    return np.asarray(points, np.float64) @ back[:, :2].T + back[:, 2]
