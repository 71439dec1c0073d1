"""MediaPipe's BlazeFace (short range) as an independent landmark check: six key points of the face
in a window of a picture. The swap never uses it (its own analysis is MTCNN, the face mesh and
FaceNet), so the quality bench finds each swapped face again with it, free of the swap's own models.

Contract of the converted graph (see the catalog's `blazeface_short_range`): input `input`
(N, 3, 128, 128) float32 RGB scaled to -1..1; outputs `regressors` (N, 896, 16) and
`classificators` (N, 896, 1). Each of the 896 anchors (a 16 x 16 grid of 2 anchors per cell, then an
8 x 8 grid of 6, centres at the cells' middles) regresses, in input pixels from its centre, the box
centre, width and height, then six (x, y) key points: the image-left eye, the image-right eye, the
nose tip, the mouth's centre, the image-left ear, the image-right ear. The classificator is a logit.
Overlapping detections are blended, weighted by score, as MediaPipe blends them.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from facecache.analysis.boxes import overlaps
from facecache.analysis.frames import check_bgr_frame
from facecache.analysis.session import OnnxSession, contract_error, require_inputs, require_outputs, run_model

INPUT_SIZE = 128
# (stride, anchors per cell) of the short-range model's two grids.
GRIDS = ((8, 2), (16, 6))
KEY_POINTS = 6
# MediaPipe's own cuts for this model: a face from a probability of 0.5; detections overlapping the
# best one by this much are blended with it.
MIN_SCORE = 0.5
BLEND_IOU = 0.3
# MediaPipe clips the logits to this before the sigmoid.
_LOGIT_CLIP = 100.0
# Windows around a face, in its box's longer side: the face fills about half of the smallest, as in the
# close-up pictures the model was made for.
WINDOW_SCALES = (2.0, 2.5, 3.0)
# Windows for telling whether a box holds a face at all (`holds_face`): from the box's own size up, so that a
# face cut by the picture's edge, which fills what is left of its box, is seen too (in the larger windows
# alone the model sees it too small).
CONFIRM_SCALES = (1.0, 1.25, 1.5, 2.0)


@dataclass(frozen=True)
class KeyPoints:
    """One face found by BlazeFace: its box (x1, y1, x2, y2), score and six points (x, y), in picture pixels."""
    box: np.ndarray
    score: float
    points: np.ndarray


def anchor_centres() -> np.ndarray:
    """(896, 2) anchor centres in 0..1 of the input, in the model's output order."""
    centres = []
    for stride, per_cell in GRIDS:
        cells = INPUT_SIZE // stride
        ys, xs = np.mgrid[:cells, :cells]
        grid = (np.stack([xs.ravel(), ys.ravel()], axis=1) + 0.5) / cells
        centres.append(np.repeat(grid, per_cell, axis=0))
    return np.concatenate(centres)


_ANCHORS = anchor_centres()


def window_matrix(centre: np.ndarray, side: float) -> np.ndarray:
    """(2, 3) matrix from picture pixels to the 128 x 128 input: a square of ``side`` pixels around ``centre``."""
    scale = INPUT_SIZE / max(float(side), 1.0)
    return np.array([[scale, 0.0, INPUT_SIZE / 2 - scale * centre[0]],
                     [0.0, scale, INPUT_SIZE / 2 - scale * centre[1]]])


class BlazeFaceChecker:
    """Faces at given places of a picture, as BlazeFace finds them there."""

    INPUT = "input"
    OUTPUTS = ("regressors", "classificators")

    def __init__(self, session: OnnxSession, *, model: str = "blazeface_short_range") -> None:
        self._session = session
        self.model = model
        require_inputs(session, model, [self.INPUT])
        require_outputs(session, model, self.OUTPUTS)

    def find(self, image: np.ndarray, boxes: list[np.ndarray]) -> list[KeyPoints | None]:
        """For each (x1, y1, x2, y2) box of the BGR ``image``, the face BlazeFace finds nearest the box's
        middle, its points averaged over windows of WINDOW_SCALES times the box's longer side (one window's
        points move by a few pixels with its size); None where no window holds a face. One session run."""
        if not boxes:
            return []
        matrices, raw, logits = self._run_windows(image, boxes, WINDOW_SCALES)
        found = [self._nearest_middle(r, l, m) for r, l, m in zip(raw, logits, matrices)]
        per_box = len(WINDOW_SCALES)
        return [_averaged([f for f in found[i:i + per_box] if f is not None]) for i in range(0, len(found), per_box)]

    def holds_face(self, image: np.ndarray, boxes: list[np.ndarray], overlap: float) -> list[bool]:
        """For each (x1, y1, x2, y2) box of the BGR ``image``: whether BlazeFace finds a face (any detection over
        MIN_SCORE, before blending) whose box overlaps it by more than ``overlap`` (intersection over union), in
        any window of CONFIRM_SCALES times the box's longer side around its middle. One session run."""
        if not boxes:
            return []
        matrices, raw, logits = self._run_windows(image, boxes, CONFIRM_SCALES)
        held = []
        for box, r, l, m in zip((b for b in boxes for _ in CONFIRM_SCALES), raw, logits, matrices):
            keep = _scores(l) >= MIN_SCORE
            found = _to_picture(decode(r)[0][keep].reshape(-1, 2), cv2.invertAffineTransform(m)).reshape(-1, 4)
            held.append(bool((overlaps(np.asarray(box, np.float64), found) > overlap).any()))
        per_box = len(CONFIRM_SCALES)
        return [any(held[i:i + per_box]) for i in range(0, len(held), per_box)]

    def _run_windows(self, image: np.ndarray, boxes: list[np.ndarray], scales: tuple[float, ...]):
        """The model run on windows of each of ``scales`` times each box's longer side around its middle, in that
        order: (their matrices, regressors (N, 896, 16), logits (N, 896))."""
        image = check_bgr_frame(image)
        matrices = [window_matrix(((box[:2] + box[2:]) / 2), scale * float(max(box[2:] - box[:2])))
                    for box in (np.asarray(b, np.float64).reshape(4) for b in boxes) for scale in scales]
        crops = [cv2.warpAffine(image, m, (INPUT_SIZE, INPUT_SIZE), flags=cv2.INTER_AREA if m[0, 0] < 1 else
                                cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT) for m in matrices]
        blob = np.stack(crops)[..., ::-1].transpose(0, 3, 1, 2).astype(np.float32) * np.float32(2 / 255) - 1
        raw, logits = run_model(self._session, self.model, self.OUTPUTS, {self.INPUT: np.ascontiguousarray(blob)})
        if raw.shape != (len(matrices), len(_ANCHORS), 4 + 2 * KEY_POINTS) or logits.size != len(matrices) * len(_ANCHORS):
            raise contract_error(self.model, f"expected regressors (N, {len(_ANCHORS)}, {4 + 2 * KEY_POINTS}) and one "
                                             f"logit per anchor, got {tuple(raw.shape)} and {tuple(logits.shape)}")
        return matrices, raw, logits.reshape(len(matrices), -1)

    @staticmethod
    def _nearest_middle(raw: np.ndarray, logits: np.ndarray, matrix: np.ndarray) -> KeyPoints | None:
        scores = _scores(logits)
        keep = scores >= MIN_SCORE
        if not keep.any():
            return None
        boxes, points = decode(raw)
        boxes, points, scores = boxes[keep], points[keep], scores[keep]
        # The window is centred on the face asked about: the detection nearest the middle is that face.
        middles = (boxes[:, :2] + boxes[:, 2:]) / 2
        best = int(np.argmin(np.hypot(*(middles - INPUT_SIZE / 2).T)))
        near = overlaps(boxes[best], boxes) >= BLEND_IOU
        weights = scores[near] / scores[near].sum()
        back = cv2.invertAffineTransform(matrix)
        box = _to_picture((boxes[near] * weights[:, None]).sum(axis=0).reshape(2, 2), back).ravel()
        blended = _to_picture((points[near] * weights[:, None, None]).sum(axis=0), back)
        return KeyPoints(box=box, score=float(scores[best]), points=blended)


def decode(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Boxes (896, 4) as x1, y1, x2, y2 and points (896, 6, 2), in input pixels, from the (896, 16) regressors."""
    raw = np.asarray(raw, np.float64).reshape(len(_ANCHORS), 4 + 2 * KEY_POINTS)
    centres = _ANCHORS * INPUT_SIZE
    middle, half = centres + raw[:, :2], raw[:, 2:4] / 2
    points = centres[:, None, :] + raw[:, 4:].reshape(-1, KEY_POINTS, 2)
    return np.concatenate([middle - half, middle + half], axis=1), points


def _scores(logits: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(np.asarray(logits, np.float64), -_LOGIT_CLIP, _LOGIT_CLIP)))


def _averaged(found: list[KeyPoints]) -> KeyPoints | None:
    if not found:
        return None
    return KeyPoints(box=np.mean([f.box for f in found], axis=0), score=float(np.mean([f.score for f in found])),
                     points=np.mean([f.points for f in found], axis=0))


def _to_picture(points: np.ndarray, back: np.ndarray) -> np.ndarray:
    return np.asarray(points, np.float64) @ back[:, :2].T + back[:, 2]
