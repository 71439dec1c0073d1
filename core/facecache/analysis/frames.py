"""Checks on the frames handed to the analysis stage."""

from __future__ import annotations

import numpy as np

from facecache.analysis.errors import FrameError


def check_bgr_frame(frame: object) -> np.ndarray:
    """Return ``frame`` (C-contiguous, copied only if it was a strided view)
    if it is a BGR uint8 image of shape (height, width, 3).

    Raises FrameError, saying how to convert, for anything else.
    """
    if not isinstance(frame, np.ndarray):
        raise FrameError(
            f"expected a frame as a numpy array, got {type(frame).__name__}; "
            "decode images with cv2.imread or the engine's media module"
        )
    if frame.dtype != np.uint8:
        raise FrameError(
            f"expected a uint8 frame, got dtype {frame.dtype}; convert float images in 0..1 with "
            "(frame * 255).clip(0, 255).astype(numpy.uint8)"
        )
    if frame.ndim == 3 and frame.shape[2] == 3:
        return np.ascontiguousarray(frame)
    if frame.ndim == 2 or (frame.ndim == 3 and frame.shape[2] == 1):
        hint = "convert grey frames with cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR)"
    elif frame.ndim == 3 and frame.shape[2] == 4:
        hint = "drop the alpha channel with cv2.cvtColor(frame, cv2.COLOR_BGRA2BGR)"
    else:
        hint = "pass one frame at a time"
    raise FrameError(f"expected a BGR frame of shape (height, width, 3), got shape {frame.shape}; {hint}")
