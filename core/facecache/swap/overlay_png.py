"""Writing composite overlays (BGRA layers with alpha 0 outside the faces) as PNG files.

Encoder setting, measured with OpenCV 4.11 (tests/swap/measure_overlay_png.py,
1920x1080 BGRA overlay with one ~280x300 face, 2-core machine): the zlib RLE
strategy *without* an explicit compression level (OpenCV then uses its fast
path: the SUB row filter at zlib level 1) encodes in ~25 ms to ~156 KB. Any
``IMWRITE_PNG_COMPRESSION`` value makes libpng choose row filters adaptively:
70-230 ms for at best 17% fewer bytes. The full BGR frame takes ~85 ms and
2.4-3.2 MB with the same setting.
"""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np

from facecache.errors import FaceCacheError
from facecache.models.files import write_atomic

PNG_PARAMS = (cv2.IMWRITE_PNG_STRATEGY, cv2.IMWRITE_PNG_STRATEGY_RLE)


def encode_overlay(bgra: np.ndarray) -> bytes:
    """PNG bytes of a (H, W, 4) uint8 BGRA image (stored as RGBA, straight alpha, 8 bits)."""
    array = np.asarray(bgra)
    if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 4:
        raise ValueError(f"an overlay is a (height, width, 4) uint8 BGRA image, got {array.dtype} {array.shape}; "
                         "make one with facecache.swap.composite.overlay")
    ok, data = cv2.imencode(".png", np.ascontiguousarray(array), list(PNG_PARAMS))
    if not ok:
        raise FaceCacheError(f"OpenCV could not encode a {array.shape[1]}x{array.shape[0]} overlay as PNG")
    return data.tobytes()


def write_overlay(path: str | os.PathLike, bgra: np.ndarray) -> Path:
    """Write ``bgra`` to ``path`` as PNG, atomically (temporary file, fsync, rename; mode 0644),
    creating the folder if needed, and return the path. A reader (the sequencer refreshing its
    strip) never sees a half-written file.
    """
    data = encode_overlay(bgra)
    target = Path(path)
    try:
        return write_atomic(target, data)
    except OSError as error:
        raise FaceCacheError(f"cannot write the overlay {target} ({error.strerror or error}); "
                             "check that its folder is writable and the disk has room") from error
