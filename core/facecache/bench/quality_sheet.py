"""Contact sheets of swapped faces, to be looked at as a viewer would: each face at twice its
size in the picture (target | swapped | source), its figures written under it.

    views = face_views(frame, output, face_box, source_image, source_box)
    write(path, stack([row(views, lines), ...]))

The bench's side-by-side pictures of a pair (all its swapped faces at once) are drawn with the same
pieces: `around`, `to_height`, `beside`, `write`.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

# Each face is shown at this scale of its size in the picture...
SCALE = 2.0
# ...unless its panel would be taller than this (a close-up's face is large enough as it is).
MAX_PANEL_HEIGHT = 480
# The face's box grown by this share of its size on every side: the mask's edge and what lies
# just outside it (temples, jaw, a glasses' arm) are in view.
_MARGIN = 0.35
_GAP = 6
_LINE_HEIGHT = 22
_FONT = cv2.FONT_HERSHEY_SIMPLEX
_WHITE = (255, 255, 255)


def around(image: np.ndarray, boxes, margin: float = _MARGIN) -> np.ndarray:
    """The part of ``image`` around ``boxes`` (each x1, y1, x2, y2), grown on every side by ``margin`` of
    their extent (several faces: by half as much, divided by their number); the whole image when none."""
    if len(boxes) == 0:
        return image
    boxes = np.asarray(boxes, np.float64)
    x1, y1 = boxes[:, :2].min(axis=0)
    x2, y2 = boxes[:, 2:].max(axis=0)
    size = max(x2 - x1, y2 - y1)
    pad = margin * size if len(boxes) == 1 else margin * 0.5 * size / len(boxes)
    height, width = image.shape[:2]
    x1, y1 = max(int(x1 - pad), 0), max(int(y1 - pad), 0)
    x2, y2 = min(int(np.ceil(x2 + pad)), width), min(int(np.ceil(y2 + pad)), height)
    return image[y1:y2, x1:x2]


def face_views(frame: np.ndarray, output: np.ndarray, box, source_image: np.ndarray,
               source_box) -> list[np.ndarray]:
    """[target, swapped, source]: the face before and after at SCALE (at most MAX_PANEL_HEIGHT
    tall), and the source face at the same height."""
    target, swapped = around(frame, [box]), around(output, [box])
    height = min(round(SCALE * target.shape[0]), MAX_PANEL_HEIGHT)
    return [to_height(view, height) for view in (target, swapped, around(source_image, [source_box]))]


def to_height(image: np.ndarray, height: int, enlarge: int = cv2.INTER_NEAREST) -> np.ndarray:
    """``image`` scaled to ``height``; enlarged with ``enlarge`` (by default nearest-neighbour: the
    pixels are shown as they are, not smoothed)."""
    scale = height / image.shape[0]
    return cv2.resize(image, (max(1, round(image.shape[1] * scale)), height),
                      interpolation=cv2.INTER_AREA if scale < 1 else enlarge)


def beside(views: list[np.ndarray], gap: int = _GAP, colour: int = 0) -> np.ndarray:
    """Views of one height side by side, ``gap`` pixels of ``colour`` between them."""
    between = np.full((views[0].shape[0], gap, 3), colour, np.uint8)
    return np.concatenate([part for view in views for part in (view, between)][:-1], axis=1)


def row(views: list[np.ndarray], lines: list[str]) -> np.ndarray:
    """The views side by side with ``lines`` of text under them, on black."""
    height = views[0].shape[0]
    pictures = beside(views)
    text_width = max((cv2.getTextSize(line, _FONT, 0.5, 1)[0][0] for line in lines), default=0) + 2 * _GAP
    width = max(pictures.shape[1], text_width)
    canvas = np.zeros((height + _LINE_HEIGHT * len(lines) + _GAP, width, 3), np.uint8)
    canvas[:height, :pictures.shape[1]] = pictures
    for number, line in enumerate(lines):
        cv2.putText(canvas, line, (_GAP, height + _LINE_HEIGHT * (number + 1) - 6), _FONT, 0.5, _WHITE, 1,
                    cv2.LINE_AA)
    return canvas


def stack(rows: list[np.ndarray]) -> np.ndarray:
    """Rows one under another, left-aligned, a gap between them."""
    width = max(r.shape[1] for r in rows)
    padded = []
    for r in rows:
        padded.append(cv2.copyMakeBorder(r, 0, _GAP, 0, width - r.shape[1], cv2.BORDER_CONSTANT, value=(0, 0, 0)))
    return np.concatenate(padded, axis=0)


def write(path: Path, picture: np.ndarray) -> Path:
    if not cv2.imwrite(str(path), picture):
        raise OSError(f"could not write {path}")
    return Path(path)
