"""The quality bench's checks with models the swap does not use: where a swapped face's points went
(MediaPipe's BlazeFace, ``analysis.blazeface``), and what became of its eyes' lids and gaze (MediaPipe's
iris model, ``analysis.iris``); each face's figures, for ``quality_bench`` to add to its own."""

from __future__ import annotations

import numpy as np

from facecache.analysis.blazeface import KeyPoints
from facecache.analysis.iris import EyeReading, IrisChecker
from facecache.bench import quality_metrics as qm
from facecache.store.records import Face

# The independent check's points (``analysis.blazeface``): eyes, nose tip, mouth centre; its ear points
# are left out, being guesses wherever the head hides an ear.
CHECK_MODEL = "blazeface_short_range"
CHECK_POINTS = slice(0, 4)
EYE_MODEL = "iris_landmark"
# Frontal faces: turned up to this many degrees of yaw. Both their eyes are read (beyond it, the nearer one),
# and the identity goal is for them (``quality_bench``).
FRONTAL_YAW = 30.0


def independent_shift(original: KeyPoints | None, swapped: KeyPoints | None) -> dict:
    """The independent check of one face: its points on the swapped picture against its points on the
    original, in the original's eye distances. Nothing when it finds no face on the original (it
    cannot judge that face); ``independent_found`` False when it finds one there but none on the swap."""
    if original is None:
        return {}
    if swapped is None:
        return {"independent_found": False}
    eyes = float(np.linalg.norm(original.points[1] - original.points[0]))
    return {"independent_found": True, "independent_shift": rounded(
        qm.point_shift(swapped.points[CHECK_POINTS], original.points[CHECK_POINTS], eyes))}


def eyes_read(eye_checker: IrisChecker, frame: np.ndarray, output: np.ndarray,
               faces: list[Face]) -> list[list[tuple[EyeReading, EyeReading]]]:
    """Per face, (original, swapped) readings of the eyes it shows: both eyes of a face turned up to
    FRONTAL_YAW, else the one nearer the camera (the wider in the target's landmarks; the far eye of a turned
    head is hidden behind the nose, and what the model reads there is a guess). Nothing for a face without
    68 landmarks. Both pictures are read in the squares the target's landmarks place."""
    landmarks = [face.landmarks68 for face in faces if face.landmarks68 is not None]
    pairs = iter(zip(eye_checker.read(frame, landmarks), eye_checker.read(output, landmarks)))
    eyes = []
    for face in faces:
        if face.landmarks68 is None:
            eyes.append([])
            continue
        original, swapped = next(pairs)
        shown = list(zip(original, swapped))
        if face.pose is not None and abs(float(face.pose[1])) > FRONTAL_YAW:
            shown = [max(shown, key=lambda pair: pair[0].width)]
        eyes.append(shown)
    return eyes


def eye_changes(eyes: list[tuple[EyeReading, EyeReading]]) -> dict:
    """The eye check of one face: the largest change of an eye's lid opening and of its iris centre, swapped
    against original, in the original eye's widths; the original's openings beside them."""
    if not eyes:
        return {}
    return {"eye_opening_target": [rounded(original.opening) for original, _ in eyes],
            "eye_opening_change": rounded(max(abs(swapped.opening - original.opening) for original, swapped in eyes)),
            "iris_shift": rounded(max(float(np.linalg.norm(swapped.iris[0] - original.iris[0])) / max(original.width, 1e-6)
                                       for original, swapped in eyes))}


def rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)
