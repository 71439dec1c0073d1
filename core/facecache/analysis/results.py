"""Typed results of the analysis stage (numpy float32 arrays inside dataclasses)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

#: Order of the five key points in every ``kps5`` array. "left" means the
#: image's left (the subject's right eye is the "left eye" in a frontal view).
KPS5_ORDER = ("left_eye", "right_eye", "nose", "left_mouth", "right_mouth")


class FaceLike(Protocol):
    """What the landmarkers and recognizers need of a face: a Detection or a cached Face."""

    box: np.ndarray   # (4,) x1, y1, x2, y2
    kps5: np.ndarray  # (5, 2)


def _float32_array(value, shape: tuple[int, ...], what: str) -> np.ndarray:
    array = np.array(value, dtype=np.float32)  # always a private copy
    if array.shape != shape:
        raise ValueError(f"{what} must have shape {shape}, got {array.shape}")
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class Detection:
    """One detected face.

    box:   (4,) float32 ``x1, y1, x2, y2`` in frame pixels (not clipped to the
           frame: a face cut by the frame edge keeps its true extent).
    score: detector confidence in 0..1.
    kps5:  (5, 2) float32 ``x, y`` of left eye, right eye, nose, left mouth
           corner, right mouth corner ("left" = image-left).
    """

    box: np.ndarray
    score: float
    kps5: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "box", _float32_array(self.box, (4,), "Detection.box"))
        object.__setattr__(self, "kps5", _float32_array(self.kps5, (5, 2), "Detection.kps5"))
        object.__setattr__(self, "score", float(self.score))

    @property
    def width(self) -> float:
        return float(self.box[2] - self.box[0])

    @property
    def height(self) -> float:
        return float(self.box[3] - self.box[1])


@dataclass(frozen=True, eq=False)
class Landmarks68:
    """68 facial landmarks in the iBUG 300-W order, in frame pixels.

    points: (68, 2) float32 ``x, y``.
    score:  0..1 confidence of the landmarker.
    face:   False when the landmarker sees no face in the region at all (a false detection,
            e.g. a pattern on poker chips): the analysis drops it.
    """

    points: np.ndarray
    score: float
    face: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "points", _float32_array(self.points, (68, 2), "Landmarks68.points"))
        object.__setattr__(self, "score", float(self.score))

    def kps5(self) -> np.ndarray:
        """The five key points (eye centres, nose tip, mouth corners) from the 68."""
        p = self.points
        return np.stack([p[36:42].mean(axis=0), p[42:48].mean(axis=0), p[30], p[48], p[54]]).astype(np.float32)


@dataclass(frozen=True)
class HeadPose:
    """Head orientation in degrees, relative to a face looking into the camera.

    pitch: > 0 when the face looks up.
    yaw:   > 0 when the face turns towards the image's right (nose points right).
    roll:  > 0 when the head tilts clockwise on screen.
    """

    pitch: float
    yaw: float
    roll: float
