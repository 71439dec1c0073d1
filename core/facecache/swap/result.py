"""The result of the swap stage for one target face: what the cache keeps.

A swap result is the swapped face as an aligned square crop, the affine matrix
that took frame pixels onto that crop, and the swapper's own soft mask when it
has one. Everything the composite stage needs besides the original frame is
here, so a change of blend settings never reruns a swapper.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from facecache.analysis.align import linear_det
from facecache.errors import FaceCacheError
from facecache.swap.color import TRANSFER_SHAPE


class SwapResultError(FaceCacheError, ValueError):
    """Arrays that do not form a valid swap result (wrong shape, dtype or range)."""


def _frozen(array: np.ndarray) -> np.ndarray:
    array = np.array(array, copy=True, order="C")
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class SwapResult:
    """One swapped face.

    crop:   (S, S, 3) uint8 BGR, the swapped face aligned like the swapper's input.
    matrix: (2, 3) float32 affine taking frame pixels onto crop pixels.
    mask:   (S, S) float32 in 0..1 (1 = use the crop), or None when the swapper
            has no mask of its own (the composite's box mask then decides alone).
    color:  (4, 3) float32 gain, offset, light's direction and top of the L*a*b* transfer that
            gives the crop the original face's colours and lighting (``swap.color.ColorTransfer``), fitted once in
            the swap stage; the composite applies it at its ``color_match`` strength.
            None: not fitted (the composite then fits it from the frame when it needs it).

    The arrays are private read-only copies. S may differ between results: a swapper
    may size each crop by its face.
    """

    crop: np.ndarray
    matrix: np.ndarray
    mask: np.ndarray | None = None
    color: np.ndarray | None = None

    def __post_init__(self) -> None:
        crop = np.asarray(self.crop)
        if crop.dtype != np.uint8 or crop.ndim != 3 or crop.shape[2] != 3 or crop.shape[0] != crop.shape[1] or crop.shape[0] < 2:
            raise SwapResultError(
                f"a swap result's crop must be a square BGR uint8 image (S, S, 3), got {crop.dtype} {crop.shape}; "
                "convert model output with (x * 255).round().clip(0, 255).astype(numpy.uint8)")
        matrix = np.asarray(self.matrix)
        if matrix.shape != (2, 3) or not np.all(np.isfinite(matrix)):
            raise SwapResultError(f"a swap result's matrix must be a finite (2, 3) affine, got shape {matrix.shape}")
        if abs(linear_det(matrix)) < 1e-12:
            raise SwapResultError("a swap result's matrix is singular; the face's key points are degenerate, "
                                  "re-run the analysis of this frame")
        size = crop.shape[0]
        mask = None
        if self.mask is not None:
            mask = np.asarray(self.mask)
            if mask.shape != (size, size) or mask.dtype.kind != "f":
                raise SwapResultError(f"a swap result's mask must be float ({size}, {size}) like its crop, "
                                      f"got {mask.dtype} {mask.shape}")
            mask = mask.astype(np.float32)
            if not np.all(np.isfinite(mask)) or float(mask.min(initial=0.0)) < 0.0 or float(mask.max(initial=0.0)) > 1.0:
                raise SwapResultError("a swap result's mask must hold values in 0..1; clip it with numpy.clip(mask, 0, 1)")
            mask = _frozen(mask)
        color = None
        if self.color is not None:
            color = np.asarray(self.color)
            if color.shape != TRANSFER_SHAPE or color.dtype.kind != "f" or not np.all(np.isfinite(color)):
                raise SwapResultError(f"a swap result's colour transfer must be a finite float {TRANSFER_SHAPE} array "
                                      f"(gain, offset, light, top), got {color.dtype} {color.shape}")
            color = _frozen(color.astype(np.float32))
        object.__setattr__(self, "crop", _frozen(crop))
        object.__setattr__(self, "matrix", _frozen(matrix.astype(np.float32)))
        object.__setattr__(self, "mask", mask)
        object.__setattr__(self, "color", color)

    def with_color(self, color: np.ndarray | None) -> "SwapResult":
        """The same result with a colour transfer (see ``color``)."""
        return SwapResult(self.crop, self.matrix, self.mask, color)

    @property
    def size(self) -> int:
        """The crop's side S in pixels."""
        return int(self.crop.shape[0])

    def as_arrays(self) -> dict[str, np.ndarray]:
        """Plain arrays for storage: ``crop``, ``matrix`` and (when present) ``mask`` and ``color``."""
        arrays = {"crop": self.crop, "matrix": self.matrix}
        for name in ("mask", "color"):
            if getattr(self, name) is not None:
                arrays[name] = getattr(self, name)
        return arrays

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> "SwapResult":
        """The inverse of ``as_arrays``; SwapResultError when anything is missing or malformed."""
        try:
            crop, matrix = arrays["crop"], arrays["matrix"]
        except KeyError as missing:
            raise SwapResultError(f"stored swap result lacks the array {missing}; discard it and swap the frame again") from None
        return cls(crop, matrix, arrays.get("mask"), arrays.get("color"))
