"""Contact sheets of swapped faces, to be looked at as a viewer would: each face at twice its
size in the picture (target | swapped | source), its figures written under it.

    views = face_views(frame, output, face_box, source_image, source_box)
    write_sheet(path, [(views, lines), ...])
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


def around(image: np.ndarray, box, margin: float = _MARGIN) -> np.ndarray:
    """The part of ``image`` around ``box`` (x1, y1, x2, y2), grown by ``margin`` of its size."""
    x1, y1, x2, y2 = (float(v) for v in box)
    pad = margin * max(x2 - x1, y2 - y1)
    height, width = image.shape[:2]
    x1, y1 = max(int(x1 - pad), 0), max(int(y1 - pad), 0)
    x2, y2 = min(int(np.ceil(x2 + pad)), width), min(int(np.ceil(y2 + pad)), height)
    return image[y1:y2, x1:x2]


def face_views(frame: np.ndarray, output: np.ndarray, box, source_image: np.ndarray,
               source_box) -> list[np.ndarray]:
    """[target, swapped, source]: the face before and after at SCALE (at most MAX_PANEL_HEIGHT
    tall), and the source face at the same height."""
    target, swapped = around(frame, box), around(output, box)
    height = min(round(SCALE * target.shape[0]), MAX_PANEL_HEIGHT)
    return [to_height(view, height) for view in (target, swapped, around(source_image, source_box))]


def to_height(image: np.ndarray, height: int) -> np.ndarray:
    scale = height / image.shape[0]
    # Nearest-neighbour when enlarging: the pixels are shown as they are, not smoothed.
    return cv2.resize(image, (max(1, round(image.shape[1] * scale)), height),
                      interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_NEAREST)


def row(views: list[np.ndarray], lines: list[str]) -> np.ndarray:
    """The views side by side with ``lines`` of text under them, on black."""
    height = views[0].shape[0]
    gap = np.zeros((height, _GAP, 3), np.uint8)
    pictures = np.concatenate([part for view in views for part in (view, gap)][:-1], axis=1)
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
