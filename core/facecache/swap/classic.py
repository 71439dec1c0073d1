"""The classic face swap: the embedded default, with no model weights.

The source face is aligned onto the target face through a common crop: both
faces' five key points are fitted (similarity: rotation, uniform scale,
translation) to one template, so the source's aligned crop already sits where
the target's face is in *its* aligned crop. When both faces have 68 landmarks,
the source is then warped piecewise onto the target's landmarks
(``swap.piecewise``, both meshes untangled so a turned or tilted head folds no
triangle), so the target's expression (an open mouth, a turn of the jaw)
survives (a source's mouth open wider than the target's leaves the target's own folds below it:
``swap.mouth_folds``), and the mask is the target's face from the jaw to the brows (the hull
of its 68 points) and, where both faces show skin, on to the forehead, the
temples and a margin below the jaw, less an open mouth. Otherwise the mask is the region both faces share
(a key-point outline of brows, eyes, nose, mouth, cheeks and chin). The swap
result is that crop (optionally Poisson-blended into the target), the target's
frame-to-crop matrix and the feathered mask, which never reaches past what the
source picture shows. Colour is applied by the composite stage (``swap.color``), so
the blend setting ``color_match`` is the one colour setting; with 68 landmarks the
swap fits the transfer itself, from the jaw to the brows (where both are faces).

Detail: each crop is as large as the target face is in the frame (so the
composite places it about one to one), but no larger than the source face
itself (more pixels would hold no more detail), within ``min_crop..max_crop``.
The source is resampled once, from the level of its image pyramid nearest the
crop's scale, bicubic.

    swapper = ClassicSwapper()
    source = swapper.prepare_source(source_image, source_face)   # once per source
    result = swapper.swap(frame, target_face, source)             # per frame and face
    composited = paste_back(frame, [result], CompositeParams())
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import cv2
import numpy as np

from facecache.analysis.align import TEMPLATES, alignment_matrix, invert_affine, linear_det, transform_points, warp
from facecache.analysis.frames import check_bgr_frame
from facecache.swap.color import ColorTransfer
from facecache.swap.edge_light import edge_lighting
from facecache.swap.eye_follow import Eye, carried, follow_map, with_own_lids
from facecache.swap.face_region import (beyond_landmarks, brow_band, brows_under_skin, face_mask, outline,
                                        skin_likeness, skin_patch, thin_dark_lines, with_forehead, without_fringe)
from facecache.swap.faces import face_kps5, face_landmarks68
from facecache.swap.far_side import flip_amount, mirrored
from facecache.swap.grey_source import is_grey, with_original_chroma
from facecache.swap.masks import smoothstep
from facecache.swap.mouth_folds import opening, with_own_mouth_folds
from facecache.swap.piecewise import TRIANGLES, border_points, inner_mouth, piecewise_map, untangle
from facecache.swap.result import SwapResult

CLASSIC_VERSION = 15  # 2: crops sized by the face, bicubic from a pyramid, colour left to the composite,
#                        a piecewise warp over 68 landmarks; 3: meshes untangled, only what the source
#                        shows, the mask beyond the landmarks, a source turned the other way mirrored;
#                        4: skin told by the cheeks' colours, the source's hair cut firmly, the colour
#                        transfer fitted from the jaw to the brows; 5: the original's lighting faded in
#                        at the mask's top edge (``swap.edge_light``); 6: the target's thin dark lines
#                        at the eyes' and brows' height (glasses' rims and arms) taken in with its skin;
#                        7: the source's forehead without its fringe's edge (``without_fringe``), the
#                        edge lighting's colour transfer applied to its shrunk crop; 8: a source's
#                        wide-open mouth onto a closed one leaves the target's own folds below it;
#                        9: the target's skin lit paler than its cheeks counts as skin (``skin_likeness``);
#                        10: the brows taken whole (``brow_band``); 11: the edge lighting's lightness
#                        bound 8 -> 12 (``edge_light._MAX_CHANGE``); 12: the source's hair filled
#                        down to the nose's tip (its sideburns), not only above the eyes (``without_fringe``);
#                        13: the colour transfer takes no a* or b* past neutral, which the edge light reads through
#                        14: a grey source takes the original's chroma, blurred (``grey_source``)
#                        15: the edge lighting's bound up to four times higher at the fade itself
_SIZE_STEP = 16
# The template crop side the face sizes are measured at.
_REFERENCE_SIDE = 128
# Lines on the target's skin up to this share of the crop's side wide are closed over (a glasses'
# arm is 1-3 % of the crop: the eye distance is 27 % of it).
_LINE_WIDTH = 0.05
# An inner-lip gap wider than this share of the eye distance is an open mouth (the target's shows).
_OPEN_MOUTH = 0.06
# Rows beyond a crop's square that its warps may read: bilinear sampling's next row, and one for rounding.
_READ_MARGIN = 2


@dataclass(frozen=True)
class ClassicSettings:
    """Everything that changes the classic swap's result (so, part of its cache key).

    template:  5-point alignment template both faces are fitted to.
    min_crop:  smallest crop side in pixels (small faces).
    max_crop:  largest crop side in pixels (bounds the cache's bytes per face).
    feather:   width of the mask's inward fade, as a fraction of the crop size.
    seamless:  Poisson-blend the source into the target inside the mask
               (gradient-domain: keeps the source's detail, takes the
               target's lighting at the face's edge).
    """

    template: str = "arcface_128"
    min_crop: int = 128
    max_crop: int = 512
    feather: float = 0.08
    seamless: bool = False

    def __post_init__(self) -> None:
        if not 32 <= int(self.min_crop) <= int(self.max_crop) <= 2048:
            raise ValueError(f"classic swap crop sides must satisfy 32 <= min_crop <= max_crop <= 2048, "
                             f"got {self.min_crop} and {self.max_crop}")
        if self.template not in TEMPLATES:
            raise ValueError(f"unknown alignment template {self.template!r}; choose one of {sorted(TEMPLATES)}")
        if not 0.0 <= float(self.feather) <= 0.5:
            raise ValueError(f"classic swap feather is a fraction of the crop size in 0..0.5, got {self.feather}")


@dataclass(frozen=True, eq=False)
class ClassicSource:
    """A source face prepared once: its image pyramid, key points and outline (source pixels)."""

    pyramid: tuple[np.ndarray, ...]  # the image, then each level half the size of the one before
    kps5: np.ndarray
    outline: np.ndarray
    side: float  # the crop side at which the source face is one to one
    landmarks68: np.ndarray | None = None  # with them, the face is warped piecewise onto the target's
    eyes: tuple[Eye, Eye] | None = None  # (image-left, image-right) as the iris model reads them, source pixels


class ClassicSwapper:
    """Swaps by warping the source face's pixels onto each target face (no model)."""

    def __init__(self, settings: ClassicSettings = ClassicSettings()) -> None:
        self.settings = settings

    def describe(self) -> dict:
        """What changes this swapper's results (for cache keys)."""
        return {"swapper": "classic", "version": CLASSIC_VERSION, **asdict(self.settings)}

    def prepare_source(self, image: np.ndarray, face, eyes: tuple[Eye, Eye] | None = None) -> ClassicSource:
        """Prepare the source face (a ``Face`` or ``Detection``: kps5, optional landmarks68) in ``image``;
        ``eyes``: its (image-left, image-right) eye as the iris model reads it (``swap.eye_follow``), for
        swaps whose eyes follow the target's."""
        image = check_bgr_frame(image)
        kps5 = face_kps5(face, "source face")
        levels = [image]
        while min(levels[-1].shape[:2]) >= 2 * _REFERENCE_SIDE:
            levels.append(cv2.pyrDown(levels[-1]))
        for level in levels:
            level.setflags(write=False)
        landmarks68 = face_landmarks68(face)
        points = outline(kps5, landmarks68)
        for array in (points, kps5, landmarks68):
            if array is not None:
                array.setflags(write=False)
        return ClassicSource(pyramid=tuple(levels), kps5=kps5, outline=points, side=self._side_of(kps5),
                             landmarks68=landmarks68, eyes=eyes)

    def crop_side(self, target_kps5: np.ndarray, source: ClassicSource) -> int:
        """The crop side for a target face: its size in the frame, at most the source's own,
        rounded up to a multiple of 16 within min_crop..max_crop."""
        s = self.settings
        side = min(self._side_of(target_kps5), source.side)
        return int(min(max(math.ceil(side / _SIZE_STEP) * _SIZE_STEP, s.min_crop), s.max_crop))

    def swap(self, frame: np.ndarray, target_face, source: ClassicSource,
             target_eyes: tuple[Eye, Eye] | None = None) -> SwapResult:
        """The swapped crop of ``target_face`` in ``frame``, with its matrix and feathered mask. With
        ``target_eyes`` (its eyes as the iris model reads them, frame pixels) and the source's, and 68
        landmarks on both faces, the source's lids and iris follow the target's (``swap.eye_follow``)."""
        frame = check_bgr_frame(frame)
        s = self.settings
        kps5 = face_kps5(target_face, "target face")
        size = self.crop_side(kps5, source)
        matrix = alignment_matrix(kps5, s.template, size)
        target68 = face_landmarks68(target_face)
        target_outline = transform_points(outline(kps5, target68), matrix)  # with 68 points: and the forehead
        source_matrix = alignment_matrix(source.kps5, s.template, size)
        feather = s.feather * size
        original = warp(frame, matrix, size)  # the target face in the crop
        if source.landmarks68 is not None and target68 is not None:
            # The source takes the target's shape and expression; the mask is the target's face from
            # the jaw to the forehead, less an open mouth (the target's own mouth shows through it).
            # Both meshes are untangled in the face's own frame, so a turned or tilted head never
            # folds a triangle (the mask keeps the target's own outline).
            target_points = transform_points(target68, matrix)
            target_mesh = untangle(target_outline, size)
            source_mesh = with_forehead(transform_points(source.landmarks68, source_matrix))
            follow = None if target_eyes is None or source.eyes is None else \
                [(transform_points(lids, matrix), transform_points(iris, matrix)) for lids, iris in target_eyes]
            crop, coverage = _warped_source(source, source_matrix, source_mesh, target_mesh, size, follow)
            if follow is not None:  # the target's lowered or closed lids, in the swapped face's colours
                crop = with_own_lids(crop, original, follow)
            jaw_to_brows = face_mask(target_points, size, feather)
            # Beyond the landmarks (forehead, temples, below the jaw) the swapped face goes where both
            # faces show skin (like their own cheeks): not the source's hair, cap, collar or
            # background, nor the target's hair or background; thin lines on the target's skin are
            # covered, and at the eyes' and brows' height so are its thin dark lines (glasses' rims
            # and arms: left half blended at the mask's edge, they show). The source's hair is cut
            # firmly: half taken, a fringe over a bare forehead is a grey band. The target's fades:
            # it is the target's own picture.
            # The brows are the face's whatever their colour: where a bare forehead lies above them, the
            # source's, warped onto the target's, are taken whole, not half.
            beyond = face_mask(beyond_landmarks(target_outline), size, feather)
            brows = brow_band(target_points, size)
            source_skin = skin_likeness(crop, skin_patch(target_mesh[:68], size), firm=True)
            source_skin = np.maximum(source_skin, brows_under_skin(brows, source_skin, target_points))
            crop = without_fringe(crop, source_skin, face_mask(target_points, size, 0.0))
            target_skin = np.maximum(_skin_under_lines(frame, matrix, size, target_points),
                                     thin_dark_lines(original, target_points))
            target_skin = np.maximum(target_skin, brows_under_skin(brows, target_skin, target_points))
            beyond *= source_skin * target_skin
            closed_mouth = 1.0 - _open_mouth(target_points, size)
            mask = np.maximum(jaw_to_brows, beyond) * closed_mouth
            # The colour transfer is fitted from the jaw to the brows, where both are faces: never on
            # a target's hair that the mask's soft edge half takes beyond them.
            fit_weights = jaw_to_brows * closed_mouth
        else:
            fit_weights = None
            crop, coverage = _resample(source.pyramid, source_matrix, size)
            # The region both faces cover: the source's skin, over the target's.
            mask = np.minimum(face_mask(transform_points(source.outline, source_matrix), size, feather),
                              face_mask(target_outline, size, feather))
        if coverage is not None:  # only what the source picture shows (its edge repeated is a smear)
            shown = _faded(coverage, feather)
            mask = mask * shown
            fit_weights = None if fit_weights is None else fit_weights * shown
        if s.seamless:
            crop = _poisson_blend(crop, original, mask)
        if fit_weights is None:  # the composite fits the colour transfer under the mask
            return SwapResult(crop=crop, matrix=matrix.astype(np.float32), mask=mask)
        if is_grey(crop, fit_weights):  # a black-and-white source: no flat tint from the transfer
            crop = with_original_chroma(crop, original)
        transfer = ColorTransfer.fit(crop, original, fit_weights)
        # After the colour fit, which is to read the source's own skin, not the target's folds.
        crop = with_own_mouth_folds(crop, original, target_points, source.landmarks68)
        if transfer is not None:  # the original's lighting at the top of the mask's edge
            crop = edge_lighting(crop, frame, matrix, mask, transfer)
        return SwapResult(crop=crop, matrix=matrix.astype(np.float32), mask=mask,
                          color=None if transfer is None else transfer.as_array())

    def rows_read(self, target_face, source: ClassicSource, height: int) -> tuple[int, int]:
        """The rows (top, bottom) of a frame `height` rows high that `swap` (and the composite of its
        result) reads for ``target_face``: its crop's square mapped into the frame, with the two rows
        around it that bilinear sampling reads (every read of the frame is a warp by the crop's matrix)."""
        kps5 = face_kps5(target_face, "target face")
        size = self.crop_side(kps5, source)
        corners = np.array([[0, 0], [size, 0], [0, size], [size, size]], np.float64)
        ys = transform_points(corners, invert_affine(alignment_matrix(kps5, self.settings.template, size)))[:, 1]
        return max(math.floor(ys.min()) - _READ_MARGIN, 0), min(math.ceil(ys.max()) + _READ_MARGIN + 1, height)

    def _side_of(self, kps5: np.ndarray) -> float:
        """The crop side at which a face with these key points is one to one (pixel for pixel)."""
        matrix = alignment_matrix(kps5, self.settings.template, _REFERENCE_SIDE)
        return _REFERENCE_SIDE / math.sqrt(abs(linear_det(matrix)))


def _resample(pyramid: tuple[np.ndarray, ...], matrix: np.ndarray, size: int,
              crop_map: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """(the source in a ``size`` crop, where the crop lies inside the source picture or None when
    all of it does). The source is warped by ``matrix`` (source to crop), then, when given, by
    ``crop_map`` (for each crop pixel, the crop position to read), in one bicubic resampling
    from the pyramid level that needs the least shrinking beyond a half (so detail is averaged,
    not aliased)."""
    scale = math.sqrt(abs(linear_det(matrix)))
    level = 0
    while level + 1 < len(pyramid) and scale * 2 ** (level + 1) <= 1.0:
        level += 1
    matrix = np.asarray(matrix, np.float64).copy()
    matrix[:, :2] *= 2 ** level  # level pixels are 2**level source pixels
    image = pyramid[level]
    height, width = image.shape[:2]
    if crop_map is None:
        crop = cv2.warpAffine(image, matrix, (size, size), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_REPLICATE)
        corners = transform_points(border_points(size)[::2], invert_affine(matrix))
        if np.all((corners >= 0) & (corners <= (width - 1, height - 1))):
            return crop, None
        inside = cv2.warpAffine(np.ones((height, width), np.uint8), matrix, (size, size), flags=cv2.INTER_NEAREST,
                                borderMode=cv2.BORDER_CONSTANT, borderValue=0)
        return crop, inside.astype(bool)
    back = invert_affine(matrix)  # crop position -> level pixel
    map_x, map_y = crop_map
    level_x = (back[0, 0] * map_x + back[0, 1] * map_y + back[0, 2]).astype(np.float32)
    level_y = (back[1, 0] * map_x + back[1, 1] * map_y + back[1, 2]).astype(np.float32)
    crop = cv2.remap(image, level_x, level_y, cv2.INTER_CUBIC, borderMode=cv2.BORDER_REPLICATE)
    inside = (level_x >= 0) & (level_x <= width - 1) & (level_y >= 0) & (level_y <= height - 1)
    return crop, None if inside.all() else inside


def _warped_source(source: ClassicSource, source_matrix: np.ndarray, source_points: np.ndarray,
                   target_mesh: np.ndarray, size: int,
                   target_eyes: list[Eye] | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """(the source warped piecewise onto ``target_mesh`` in a ``size`` crop, where it lies inside
    the source picture: ``_resample``). A source turned the other way from the target is read
    mirrored (``swap.far_side``), its 78 ``source_points`` (crop pixels) mirrored with it; within
    the short range where that fades in, both readings are mixed. With ``target_eyes`` (crop
    pixels), the source's eyes are then moved onto them (``swap.eye_follow``)."""
    amount = flip_amount(source_points, target_mesh)
    crop = inside = None  # (None for ``inside``: all of it, as from ``_resample``)
    for weight, points, mirror in ((1.0 - amount, source_points, False), (amount, mirrored(source_points, size), True)):
        if weight <= 0.0:
            continue
        points = untangle(points, size)
        map_x, map_y = piecewise_map(points, target_mesh, TRIANGLES, size)
        if target_eyes is not None:
            map_x, map_y = _eyes_followed(map_x, map_y, _source_eyes(source, source_matrix, size, mirror),
                                          points, target_mesh, target_eyes, size)
        if mirror:
            map_x = (size - 1.0) - map_x  # read back in the source's own (unmirrored) crop
        read, covered = _resample(source.pyramid, source_matrix, size, (map_x, map_y))
        crop = read if crop is None else cv2.addWeighted(crop, 1.0 - weight, read, weight, 0.0)
        inside = covered if inside is None else inside if covered is None else inside & covered
    return crop, inside


def _source_eyes(source: ClassicSource, source_matrix: np.ndarray, size: int, mirror: bool) -> list[Eye]:
    """The source's (image-left, image-right) eyes in its crop; mirrored, they trade places (the iris model
    reads the image-right eye mirrored, so its points already run as a mirrored image-left eye's)."""
    eyes = [(transform_points(lids, source_matrix), transform_points(iris, source_matrix)) for lids, iris in source.eyes]
    if not mirror:
        return eyes
    flipped = [tuple(np.stack([(size - 1.0) - part.reshape(-1, 2)[:, 0], part.reshape(-1, 2)[:, 1]], axis=1)
                     for part in eye) for eye in eyes]
    return flipped[::-1]


def _eyes_followed(map_x: np.ndarray, map_y: np.ndarray, source_eyes: list[Eye], source_mesh: np.ndarray,
                   target_mesh: np.ndarray, target_eyes: list[Eye], size: int) -> tuple[np.ndarray, np.ndarray]:
    """The piecewise warp's (map_x, map_y) composed with the local warp that moves the source's eyes (source
    crop), where that warp carries them, onto ``target_eyes`` (``swap.eye_follow``)."""
    carried_eyes = []
    for lids, iris in source_eyes:
        moved = carried(np.vstack([lids, np.reshape(iris, (1, 2))]), source_mesh, target_mesh, TRIANGLES, size)
        carried_eyes.append((moved[:-1], moved[-1]))
    follow_x, follow_y = follow_map(carried_eyes, target_eyes, size)
    return (cv2.remap(map_x, follow_x, follow_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE),
            cv2.remap(map_y, follow_x, follow_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE))


def _skin_under_lines(frame: np.ndarray, matrix: np.ndarray, size: int, landmarks68: np.ndarray) -> np.ndarray:
    """``skin_likeness`` of the target (``frame`` in the crop of ``matrix``; ``landmarks68`` in
    crop pixels) with thin lines across the skin closed over (a glasses' arm or rim, a wrinkle):
    skin on both sides of a line makes the line skin too; hair and background, wider than a line,
    stay what they are. Worked out on a quarter-size crop (it is smooth anyway)."""
    small = max(16, size // 4)
    image = warp(frame, np.asarray(matrix, np.float64) * (small / size), small)  # the same crop, smaller
    likeness = skin_likeness(image, skin_patch(landmarks68 * (small / size), small), lit=True)
    width = max(3, int(round(_LINE_WIDTH * small)) | 1)
    closed = cv2.morphologyEx(likeness, cv2.MORPH_CLOSE, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (width, width)))
    return cv2.resize(closed, (size, size), interpolation=cv2.INTER_LINEAR)


def _faded(inside: np.ndarray, feather: float) -> np.ndarray:
    """A mask of ``inside`` (bool, crop pixels) that rises from 0 at its edge over ``feather`` px."""
    distance = cv2.distanceTransform(inside.astype(np.uint8), cv2.DIST_L2, cv2.DIST_MASK_PRECISE)
    return smoothstep(distance / max(float(feather), 1.0))


def _open_mouth(points68: np.ndarray, size: int) -> np.ndarray:
    """A soft (size, size) mask of the inner-lip opening when the mouth is open, else zeros."""
    mouth = np.zeros((size, size), np.float32)
    if opening(points68) < _OPEN_MOUTH:
        return mouth
    cv2.fillPoly(mouth, [np.round(inner_mouth(points68) * 4).astype(np.int32)], 1.0, lineType=cv2.LINE_AA, shift=2)
    return cv2.GaussianBlur(mouth, (0, 0), max(1.0, 0.006 * size))


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
