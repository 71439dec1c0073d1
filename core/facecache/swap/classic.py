"""The classic face swap: the embedded default, with no model weights.

The source face is aligned onto the target face through a common crop: both
faces' five key points are fitted (similarity: rotation, uniform scale,
translation) to one template at one crop size, so the source's aligned crop
already sits where the target's face is in *its* aligned crop. The swap
result is that crop (colour-matched to the target, optionally Poisson-blended
into it) with the target's frame-to-crop matrix and a feathered mask of the
face region both faces share (the hull of their 68 landmarks when known, else
a key-point outline of brows, eyes, nose, mouth, cheeks and chin).

    swapper = ClassicSwapper()
    source = swapper.prepare_source(source_image, source_face)   # once per source
    result = swapper.swap(frame, target_face, source)             # per frame and face
    composited = paste_back(frame, [result], CompositeParams())
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import cv2
import numpy as np

from facecache.analysis.align import TEMPLATES, alignment_matrix, transform_points, warp
from facecache.analysis.frames import check_bgr_frame
from facecache.swap.color import match_color
from facecache.swap.face_region import face_mask, outline
from facecache.swap.faces import face_kps5, face_landmarks68
from facecache.swap.result import SwapResult

CLASSIC_VERSION = 1


@dataclass(frozen=True)
class ClassicSettings:
    """Everything that changes the classic swap's result (so, part of its cache key).

    crop_size:   side of the aligned crop in pixels.
    template:    5-point alignment template both faces are fitted to.
    feather:     width of the mask's inward fade, as a fraction of the crop size.
    color_match: strength (0..1) of the L*a*b* mean/spread transfer towards the
                 target's skin done here; 0 leaves colour to the composite
                 stage's ``color_match``.
    seamless:    Poisson-blend the source into the target inside the mask
                 (gradient-domain: keeps the source's detail, takes the
                 target's lighting at the face's edge).
    """

    crop_size: int = 256
    template: str = "arcface_128"
    feather: float = 0.08
    color_match: float = 1.0
    seamless: bool = False

    def __post_init__(self) -> None:
        if not 32 <= int(self.crop_size) <= 2048:
            raise ValueError(f"classic swap crop_size must be 32..2048 pixels, got {self.crop_size}")
        if self.template not in TEMPLATES:
            raise ValueError(f"unknown alignment template {self.template!r}; choose one of {sorted(TEMPLATES)}")
        if not 0.0 <= float(self.feather) <= 0.5:
            raise ValueError(f"classic swap feather is a fraction of the crop size in 0..0.5, got {self.feather}")
        if not 0.0 <= float(self.color_match) <= 1.0:
            raise ValueError(f"classic swap color_match must be in 0..1, got {self.color_match}")


@dataclass(frozen=True, eq=False)
class ClassicSource:
    """A source face prepared once: its aligned crop and its outline in crop pixels."""

    crop: np.ndarray
    outline: np.ndarray


class ClassicSwapper:
    """Swaps by warping the source face's pixels onto each target face (no model)."""

    def __init__(self, settings: ClassicSettings = ClassicSettings()) -> None:
        self.settings = settings

    def describe(self) -> dict:
        """What changes this swapper's results (for cache keys)."""
        return {"swapper": "classic", "version": CLASSIC_VERSION, **asdict(self.settings)}

    def prepare_source(self, image: np.ndarray, face) -> ClassicSource:
        """Align the source face (a ``Face`` or ``Detection``: kps5, optional landmarks68) in ``image``."""
        image = check_bgr_frame(image)
        size, template = self.settings.crop_size, self.settings.template
        kps5 = face_kps5(face, "source face")
        matrix = alignment_matrix(kps5, template, size)
        crop = warp(image, matrix, size)
        points = transform_points(outline(kps5, face_landmarks68(face)), matrix)
        crop.setflags(write=False)
        points.setflags(write=False)
        return ClassicSource(crop=crop, outline=points)

    def swap(self, frame: np.ndarray, target_face, source: ClassicSource) -> SwapResult:
        """The swapped crop of ``target_face`` in ``frame``, with its matrix and feathered mask."""
        frame = check_bgr_frame(frame)
        s = self.settings
        if source.crop.shape != (s.crop_size, s.crop_size, 3):
            raise ValueError(f"the source was prepared at {source.crop.shape[:2]}, this swapper uses "
                             f"{s.crop_size} px crops; prepare it again with this swapper")
        kps5 = face_kps5(target_face, "target face")
        matrix = alignment_matrix(kps5, s.template, s.crop_size)
        target_crop = warp(frame, matrix, s.crop_size)
        target_outline = transform_points(outline(kps5, face_landmarks68(target_face)), matrix)
        feather = s.feather * s.crop_size
        # The region both faces cover: the source's skin, over the target's.
        mask = np.minimum(face_mask(source.outline, s.crop_size, feather),
                          face_mask(target_outline, s.crop_size, feather))
        crop = match_color(source.crop, target_crop, mask, s.color_match)
        if s.seamless:
            crop = _poisson_blend(crop, target_crop, mask)
        return SwapResult(crop=crop, matrix=matrix.astype(np.float32), mask=mask)


def _poisson_blend(source: np.ndarray, target: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``source`` cloned into ``target`` where ``mask`` > 0 (OpenCV's seamless clone), in place."""
    region = (mask > 0).astype(np.uint8) * 255
    ys, xs = np.nonzero(region)
    if len(xs) == 0:
        return source
    # Keep the region one pixel clear of the crop's border, as seamlessClone requires.
    region[[0, -1], :] = 0
    region[:, [0, -1]] = 0
    x0, x1, y0, y1 = xs.min(), xs.max(), ys.min(), ys.max()
    # seamlessClone centres the mask's bounding box on ``center``; for an odd
    # width it rounds down, hence the (size) // 2 form, which keeps it in place.
    center = (int(x0 + (x1 - x0 + 1) // 2), int(y0 + (y1 - y0 + 1) // 2))
    return cv2.seamlessClone(source, target, region, center, cv2.NORMAL_CLONE)
