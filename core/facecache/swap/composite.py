"""The composite stage: swapped crops back into the frame, cheap and parameterised.

Inputs are the original frame and the cached swap results; nothing here runs
a model, so changing ``CompositeParams`` only reruns this module. Each
result's mask is the minimum of a box mask with faded edges and the
swapper's own mask; the crop (optionally colour-matched to the original
frame's face) and the mask are warped back into the frame only inside the
face's bounding region, and blended as ``frame * (1 - m) + crop * m`` with
``m = mask * opacity``. Where every mask is 0, output pixels are the
original's exactly.

Several faces combine with the "over" operator in list order, so
``paste_back`` and ``overlay`` (an RGBA layer for the sequencer to lay over
the untouched strip) describe the same picture.
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Sequence

import cv2
import numpy as np

from facecache import choices
from facecache.analysis.align import warp
from facecache.analysis.frames import check_bgr_frame
from facecache.swap.color import ColorTransfer
from facecache.swap.masks import box_mask, check_padding, combine_masks
from facecache.swap.result import SwapResult

COMPOSITE_FORMAT = "composite/4"  # 2: colour match by the fitted transfer, detail and range kept;
#                                   3: and the light's direction; 4: no a* or b* carried past neutral
# Fade of the box mask that weighs colour statistics for a swapper without a mask of its own.
FIT_MASK_BLUR = 0.3


@dataclass(frozen=True)
class CompositeParams:
    """Blend settings (all cheap to change).

    mask_blur:    fade of the box mask's edges, as a fraction of the crop size (0..1).
    mask_padding: (top, right, bottom, left) cut from the box mask, in percent of the crop.
    color_match:  strength (0..1) of the transfer of the original face's colours onto the
                  swapped face (``swap.color``), for every swapper: 1 = the original's
                  skin tone and lighting, 0 = the swapper's own colours.
    opacity:      0..1, how much of the swapped face shows.
    """

    mask_blur: float = choices.MASK_BLUR.default
    mask_padding: tuple[float, float, float, float] = (0, 0, 0, 0)
    color_match: float = choices.COLOR_MATCH.default
    opacity: float = choices.OPACITY.default

    def __post_init__(self) -> None:
        object.__setattr__(self, "mask_padding", check_padding(self.mask_padding))
        for number in choices.COMPOSITE:
            value = float(getattr(self, number.name))
            if not number.holds(value):
                raise ValueError(f"composite {number.name} must be in {number.minimum:g}..{number.maximum:g}, "
                                 f"got {getattr(self, number.name)!r}")
            object.__setattr__(self, number.name, value)

    def describe(self) -> dict:
        """A stable, JSON-ready dict of the settings (for cache keys): equal settings, equal dicts."""
        rounded = lambda value: round(float(value), 6)  # noqa: E731 - hides float noise such as 0.30000000000000004
        return {
            "format": COMPOSITE_FORMAT,
            "mask_blur": rounded(self.mask_blur),
            "mask_padding": [rounded(v) for v in self.mask_padding],
            "color_match": rounded(self.color_match),
            "opacity": rounded(self.opacity),
        }


def color_transfer(result: SwapResult, frame: np.ndarray) -> ColorTransfer | None:
    """The transfer giving the result's crop the original face's colours: the one the swap stage
    fitted, else fitted now from the frame under the swapper's mask (or a box mask)."""
    if result.color is not None:
        return ColorTransfer.from_array(result.color)
    weights = result.mask if result.mask is not None else box_mask(result.size, FIT_MASK_BLUR)
    return ColorTransfer.fit(result.crop, warp(frame, result.matrix, result.size), weights)


def with_color_transfer(result: SwapResult, frame: np.ndarray) -> SwapResult:
    """The result with its colour transfer fitted (done once, in the swap stage, and cached)."""
    transfer = color_transfer(result, frame)
    return result if transfer is None else result.with_color(transfer.as_array())


def crop_mask(result: SwapResult, params: CompositeParams, box: np.ndarray | None = None) -> np.ndarray:
    """The result's blend mask in crop pixels: box mask (``box`` when already made for this
    size and params) and swapper mask combined by minimum."""
    if box is None:
        box = box_mask(result.size, params.mask_blur, params.mask_padding)
    return combine_masks([box, result.mask])


def paste_back(frame: np.ndarray, results: Sequence[SwapResult], params: CompositeParams = CompositeParams()) -> np.ndarray:
    """A new frame with every swapped face blended in; pixels outside all masks are ``frame``'s exactly."""
    frame = check_bgr_frame(frame)
    output = frame.copy()
    for x, y, colour, alpha in _render(frame, results, params):
        height, width = alpha.shape
        region = frame[y:y + height, x:x + width]
        blended = np.rint(region * (1.0 - alpha)[..., None] + colour)
        output[y:y + height, x:x + width] = np.where((alpha > 0)[..., None], np.clip(blended, 0, 255),
                                                     region).astype(np.uint8)
    return output


def overlay(frame: np.ndarray, results: Sequence[SwapResult], params: CompositeParams = CompositeParams()) -> np.ndarray:
    """A full-frame (H, W, 4) uint8 BGRA layer (straight alpha, OpenCV channel order): the
    swapped faces, alpha 0 (and colour 0) everywhere else. Laid "over" the original frame it
    gives ``paste_back``'s picture, up to 8-bit rounding of the alpha.
    """
    frame = check_bgr_frame(frame)
    layer = np.zeros((*frame.shape[:2], 4), dtype=np.uint8)
    for x, y, bgra in overlay_patches(frame, results, params):
        layer[y:y + bgra.shape[0], x:x + bgra.shape[1]] = bgra
    return layer


def overlay_patches(frame: np.ndarray, results: Sequence[SwapResult], params: CompositeParams = CompositeParams(),
                    pool: Executor | None = None) -> list[tuple[int, int, np.ndarray]]:
    """``overlay`` as the parts that hold faces: ``(x, y, bgra)`` placed at column ``x``, row
    ``y`` of the frame, one per group of overlapping faces; the patches do not overlap, and
    ``overlay`` is zero outside them. Empty when no face shows (all masks 0). Six faces spread
    over a frame cover a tenth of it: only that is converted and encoded. With `pool`, the groups
    are composited on its threads (OpenCV and numpy release the GIL): a preview waits for its one
    frame, and six 4K faces one after another took 29 ms. The patches are the same either way."""
    frame = check_bgr_frame(frame)
    groups = _groups(frame, results, params)
    if pool is not None and len(groups) > 1:
        return list(pool.map(lambda group: _patch(frame, group, params), groups))
    return [_patch(frame, group, params) for group in groups]


def _patch(frame: np.ndarray, group: list, params: CompositeParams) -> tuple[int, int, np.ndarray]:
    """(x, y, bgra) of one group of overlapping faces."""
    # OpenCV's conversions round half to even (as np.rint) and saturate, each in one pass:
    # numpy's temporaries were a third of a 4K face's composite.
    if len(group) == 1:  # a face alone: its straight colour is the warped crop itself
        face, m, (x, y, _, _) = _warped(frame, *group[0], params)
        alpha8 = cv2.convertScaleAbs(m, alpha=255.0)
        colour = cv2.copyTo(face, alpha8)  # a new array: zeros where alpha8 is 0
    else:
        x, y, premultiplied, alpha = _render_group(frame, group, params)
        alpha8 = cv2.convertScaleAbs(alpha, alpha=255.0)
        shown = (alpha8 > 0)[..., None]
        # 0 where nothing shows (the division's default)
        colour = cv2.convertScaleAbs(np.divide(premultiplied, alpha[..., None], out=np.zeros_like(premultiplied),
                                               where=shown))
    return x, y, cv2.merge((*cv2.split(colour), alpha8))


def _render(frame: np.ndarray, results: Sequence[SwapResult], params: CompositeParams):
    """[(x, y, premultiplied colour (h, w, 3) float32, alpha (h, w) float32)], one per group of
    faces whose regions overlap; empty when nothing shows."""
    return [_render_group(frame, group, params) for group in _groups(frame, results, params)]


def _groups(frame: np.ndarray, results: Sequence[SwapResult], params: CompositeParams) -> list[list]:
    """The faces that show, as (result, blend mask, frame box) grouped by overlapping boxes
    (faces of one group combine in list order)."""
    height, width = frame.shape[:2]
    box_masks: dict[int, np.ndarray] = {}  # one per crop size: the same for every face
    pieces = []
    for result in results:
        if not isinstance(result, SwapResult):
            raise TypeError(f"paste_back takes SwapResult objects, got {type(result).__name__}")
        if result.size not in box_masks:
            box_masks[result.size] = box_mask(result.size, params.mask_blur, params.mask_padding)
        mask = crop_mask(result, params, box_masks[result.size]) * np.float32(params.opacity)
        box = _frame_region(result.matrix, mask, width, height)
        if box is not None:
            pieces.append((result, mask, box))
    return _overlapping_groups(pieces)


def _overlapping_groups(pieces: list) -> list[list]:
    """The pieces split into groups whose bounding boxes do not overlap (faces overlapping, directly
    or through others, or lying inside another group's box, are one group); list order is kept
    inside each group."""
    groups = [[i] for i in range(len(pieces))]

    def bounds(group: list[int]) -> tuple[int, int, int, int]:
        boxes = [pieces[i][2] for i in group]
        return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))

    merged = True
    while merged:
        merged = False
        for i in range(len(groups)):
            other = next((j for j in range(i) if _overlap(bounds(groups[i]), bounds(groups[j]))), None)
            if other is not None:
                groups[other] = sorted(groups[other] + groups.pop(i))
                merged = True
                break
    return [[pieces[i] for i in group] for group in groups]


def _overlap(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _render_group(frame: np.ndarray, pieces: list, params: CompositeParams):
    x0 = min(box[0] for _, _, box in pieces)
    y0 = min(box[1] for _, _, box in pieces)
    x1 = max(box[2] for _, _, box in pieces)
    y1 = max(box[3] for _, _, box in pieces)
    colour = np.zeros((y1 - y0, x1 - x0, 3), dtype=np.float32)
    alpha = np.zeros((y1 - y0, x1 - x0), dtype=np.float32)
    for piece in pieces:
        face, m, (bx0, by0, bx1, by1) = _warped(frame, *piece, params)
        ys, xs = slice(by0 - y0, by1 - y0), slice(bx0 - x0, bx1 - x0)
        keep = 1.0 - m
        colour[ys, xs] = colour[ys, xs] * keep[..., None] + face.astype(np.float32) * m[..., None]
        alpha[ys, xs] = alpha[ys, xs] * keep + m
    return x0, y0, colour, alpha


def _warped(frame: np.ndarray, result: SwapResult, mask: np.ndarray, box: tuple[int, int, int, int],
            params: CompositeParams) -> tuple[np.ndarray, np.ndarray, tuple[int, int, int, int]]:
    """The face (uint8 BGR) and its blend mask (float32 0..1) warped onto the frame box."""
    crop = result.crop
    if params.color_match > 0.0:
        transfer = color_transfer(result, frame)
        if transfer is not None:  # only where the face shows
            crop = transfer.apply(crop, params.color_match, _mask_box(mask), used=_bicubic_reach(mask))
    bx0, by0, bx1, by1 = box
    # Frame pixel (bx0 + u, by0 + v) reads the crop at matrix @ (bx0 + u, by0 + v, 1).
    to_crop = result.matrix.astype(np.float64).copy()
    to_crop[:, 2] += to_crop[:, :2] @ np.array([bx0, by0], dtype=np.float64)
    size = (bx1 - bx0, by1 - by0)
    # Bicubic for the face: bilinear at a fractional offset averages neighbours and softens detail
    # even one to one; the smooth mask needs no more than bilinear.
    face = cv2.warpAffine(crop, to_crop, size, flags=cv2.INTER_CUBIC | cv2.WARP_INVERSE_MAP,
                          borderMode=cv2.BORDER_REPLICATE)
    # Bicubic overshoots at a highlight or a black rim; a swapped pixel stays off the limits
    # (0 and 255 read as clipped; one level less is invisible).
    np.clip(face, 1, 254, out=face)
    m = cv2.warpAffine(mask, to_crop, size, flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                       borderMode=cv2.BORDER_CONSTANT, borderValue=0.0)
    return face, np.clip(m, 0.0, 1.0), box


def _bicubic_reach(mask: np.ndarray) -> np.ndarray:
    """The crop pixels that frame pixels where the warped ``mask`` is above 0 read: a frame pixel's
    bilinear mask reads a 2x2 neighbourhood, its bicubic face the 4x4 around it (one more on each
    side), so two pixels around the mask's non-zero part. The face is used nowhere else (multiplied by
    a mask of 0, or cut by an alpha of 0)."""
    return cv2.dilate((mask > 0).astype(np.uint8), np.ones((5, 5), np.uint8)) > 0


def _mask_box(mask: np.ndarray) -> tuple[int, int, int, int]:
    """(x0, y0, x1, y1) of the mask's non-zero part, two pixels wider for bicubic sampling."""
    ys, xs = np.nonzero(mask > 0)
    height, width = mask.shape
    return (max(int(xs.min()) - 2, 0), max(int(ys.min()) - 2, 0),
            min(int(xs.max()) + 3, width), min(int(ys.max()) + 3, height))


def _frame_region(matrix: np.ndarray, mask: np.ndarray, width: int, height: int) -> tuple[int, int, int, int] | None:
    """Frame box (x0, y0, x1, y1), end-exclusive, holding the mask's non-zero part; None if empty."""
    ys, xs = np.nonzero(mask > 0)
    if len(xs) == 0:
        return None
    # The non-zero pixels' box, one pixel wider for bilinear sampling, mapped back into the frame.
    corners = np.array([[xs.min() - 1, ys.min() - 1], [xs.max() + 1, ys.min() - 1],
                        [xs.min() - 1, ys.max() + 1], [xs.max() + 1, ys.max() + 1]], dtype=np.float64)
    to_frame = cv2.invertAffineTransform(np.asarray(matrix, dtype=np.float64))
    points = corners @ to_frame[:, :2].T + to_frame[:, 2]
    x0 = max(int(np.floor(points[:, 0].min())) - 1, 0)
    y0 = max(int(np.floor(points[:, 1].min())) - 1, 0)
    x1 = min(int(np.ceil(points[:, 0].max())) + 2, width)
    y1 = min(int(np.ceil(points[:, 1].max())) + 2, height)
    if x1 <= x0 or y1 <= y0:
        return None
    return x0, y0, x1, y1
