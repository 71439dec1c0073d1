"""MediaPipe's face mesh as a 68-point landmarker (the embedded default's landmarker).

Contract of the converted graph (see the catalog's `face_mesh_468`): input `input`
(N, 3, 192, 192) float32 RGB in 0..1 of a square region around the face, turned so the
eyes are level; outputs `landmarks` (N, 1, 1, 1404): 468 points (x, y, z) in crop pixels,
and `face_flag` (N, 1, 1, 1): a logit that the crop holds a face (below MIN_FACE_PRESENCE the
detection is not a face, and the analysis drops it). The region follows
MediaPipe's from a detection: a square of ROI_SCALE times the box's longer side around its
centre, rotated by the eye line. Every face of a frame goes through one session run.

The 68 points (iBUG 300-W order) are mesh points picked by anatomy (eye corners and lids,
brows, nose, lips, from the mesh's published topology), except the jaw line: iBUG spaces
its 17 points evenly along the jaw, so they are resampled evenly along the mesh's face
oval from one ear to the other.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from facecache.analysis.align import invert_affine, transform_points
from facecache.analysis.frames import check_bgr_frame
from facecache.analysis.results import FaceLike, Landmarks68
from facecache.analysis.session import OnnxSession, contract_error, require_inputs, require_outputs, run_model

CROP_SIZE = 192
# MediaPipe uses 1.5 around its own detector's tight boxes; MTCNN's boxes are larger: on six photographs the
# mesh's eye centres, nose tip and mouth corners lay within 4-7 % of the eye distance of MTCNN's own points
# at 1.3, and up to 16 % off at 1.5.
ROI_SCALE = 1.3
MESH_POINTS = 468
# The face flag (a probability once through the sigmoid) below which the crop holds no face:
# MediaPipe's own cut. On the bench's photographs every face scored above 0.99 and a detection
# on poker chips 0.001.
MIN_FACE_PRESENCE = 0.5

# The face oval from the image-left ear, under the chin (152), to the image-right ear.
JAW_OVAL = (127, 234, 93, 132, 58, 172, 136, 150, 149, 176, 148, 152,
            377, 400, 378, 379, 365, 397, 288, 361, 323, 454, 356)
# iBUG points 17-67 (brows, nose, eyes, lips) as mesh indices; "left" = image-left.
MESH_TO_68_INNER = (
    70, 63, 105, 66, 107,            # 17-21 image-left brow, outer to inner
    336, 296, 334, 293, 300,         # 22-26 image-right brow, inner to outer
    168, 197, 5, 1,                  # 27-30 nose bridge to tip
    98, 97, 2, 326, 327,             # 31-35 nostrils, left to right
    33, 160, 158, 133, 153, 144,     # 36-41 image-left eye from the outer corner, over the top
    362, 385, 387, 263, 373, 380,    # 42-47 image-right eye from the inner corner
    61, 40, 37, 0, 267, 270, 291,    # 48-54 outer lips: left corner, upper lip, right corner
    321, 314, 17, 84, 91,            # 55-59 lower lip, right to left
    78, 81, 13, 311, 308,            # 60-64 inner lips: left corner, upper, right corner
    402, 14, 178,                    # 65-67 inner lower lip, right to left
)


def mesh_to_68(mesh: np.ndarray) -> np.ndarray:
    """(68, 2) iBUG points from (468, >=2) mesh points."""
    mesh = np.asarray(mesh, dtype=np.float64)[:, :2]
    oval = mesh[list(JAW_OVAL)]
    steps = np.hypot(*np.diff(oval, axis=0).T)
    along = np.concatenate([[0.0], np.cumsum(steps)])
    targets = np.linspace(0.0, along[-1], 17)
    jaw = np.stack([np.interp(targets, along, oval[:, 0]), np.interp(targets, along, oval[:, 1])], axis=1)
    return np.concatenate([jaw, mesh[list(MESH_TO_68_INNER)]]).astype(np.float32)


def roi_matrix(box: np.ndarray, kps5: np.ndarray) -> np.ndarray:
    """(2, 3) matrix from frame pixels to the 192 x 192 crop: a square of ROI_SCALE x the
    box's longer side around the box centre, turned so the eye line (kps5) is level."""
    x1, y1, x2, y2 = np.asarray(box, dtype=np.float64).reshape(4)
    left_eye, right_eye = np.asarray(kps5, dtype=np.float64).reshape(5, 2)[:2]
    theta = np.arctan2(*(right_eye - left_eye)[::-1])
    scale = CROP_SIZE / (ROI_SCALE * max(x2 - x1, y2 - y1, 1.0))
    cos, sin = np.cos(theta) * scale, np.sin(theta) * scale
    centre = np.array([(x1 + x2) / 2, (y1 + y2) / 2])
    linear = np.array([[cos, sin], [-sin, cos]])  # rotate by -theta, then scale
    return np.hstack([linear, (CROP_SIZE / 2 - linear @ centre)[:, None]])


class FaceMeshLandmarker:
    """68 landmarks (from the 468-point mesh) of detected faces, one session run per frame."""

    INPUT = "input"
    OUTPUTS = ("landmarks", "face_flag")

    def __init__(self, session: OnnxSession, *, model: str = "face_mesh_468") -> None:
        self._session = session
        self.model = model
        require_inputs(session, model, [self.INPUT])
        require_outputs(session, model, self.OUTPUTS)

    def describe(self) -> dict:
        """The settings that change this landmarker's results (for cache namespaces)."""
        return {"model": self.model, "crop": CROP_SIZE, "roi_scale": ROI_SCALE, "min_face_presence": MIN_FACE_PRESENCE}

    def landmarks_batch(self, frame: np.ndarray, faces: Sequence[FaceLike]) -> list[Landmarks68]:
        """Landmarks of every face (anything with a `box` and `kps5`, e.g. a Detection), in one session run."""
        if not faces:
            return []
        frame = check_bgr_frame(frame)
        matrices = [roi_matrix(face.box, face.kps5) for face in faces]
        # Warped from the BGR frame, the crops turned to RGB: the same pixels as from an RGB copy of the
        # frame (each channel is warped alone), without converting a whole 4K frame for a few faces.
        crops = [cv2.warpAffine(frame, m, (CROP_SIZE, CROP_SIZE), flags=cv2.INTER_LINEAR,
                                borderMode=cv2.BORDER_CONSTANT) for m in matrices]
        points, flags = run_model(self._session, self.model, self.OUTPUTS, {self.INPUT: _rgb_blob(crops)})
        if points.size != len(faces) * MESH_POINTS * 3 or flags.size != len(faces):
            raise contract_error(self.model, f"expected outputs of {MESH_POINTS * 3} and 1 values per face, got "
                                             f"shapes {tuple(points.shape)} and {tuple(flags.shape)}")
        points = points.reshape(len(faces), MESH_POINTS, 3)
        scores = 1.0 / (1.0 + np.exp(-flags.reshape(-1).astype(np.float64)))
        return [Landmarks68(transform_points(mesh_to_68(mesh), invert_affine(m)), score,
                            face=score >= MIN_FACE_PRESENCE)
                for mesh, m, score in zip(points, matrices, scores)]


def _rgb_blob(crops: list[np.ndarray]) -> np.ndarray:
    """(N, 3, 192, 192) float32 RGB in 0..1 of BGR uint8 crops, each channel written once where it
    goes (the same float32 products as converting, then scaling, without the copies between)."""
    bgr = np.stack(crops)
    blob = np.empty((len(crops), 3, CROP_SIZE, CROP_SIZE), np.float32)
    for channel in range(3):
        np.multiply(bgr[..., 2 - channel], np.float32(1 / 255), out=blob[:, channel], dtype=np.float32)
    return blob
