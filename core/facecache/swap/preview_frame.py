"""The "sequencer" form's preview of a frame with faces: the frame with its overlay laid over it, opaque,
as JPEGs that Blender reads as the swapped strip's proxies at 100 % and 50 % (`output_layout.preview_path`).

Why. Blender decodes, copies and blends a full-frame RGBA overlay for about 10 ms a 1080p frame whatever it
holds, on top of the movie below it. An opaque picture in an alpha-over strip hides the strips below it
(the sequencer's render.cc stops at an opaque top strip), so the movie is not decoded at all. The preview
reads an image strip's proxy where one exists and a final render never does (proxies are used only at the
preview's proxy sizes), so renders keep the exact overlays and only the preview sees this lossy picture.
"""

from __future__ import annotations

from typing import Sequence

import cv2
import numpy as np

# JPEG quality of the preview pictures: 90 keeps a face's detail (the editor judges the swap from the preview);
# 75 decoded 0.7 ms faster at 1080p, measured in `./dev bench-playback`.
QUALITY = 90


def composited(frame: np.ndarray, patches: Sequence[tuple[int, int, np.ndarray]]) -> np.ndarray:
    """`frame` (BGR) with the overlay's `patches` ((x, y, straight-alpha BGRA), not overlapping) laid over it,
    as alpha-over shows them; a new array, the frame is left as it is."""
    picture = frame.copy()
    for x, y, bgra in patches:
        height, width = bgra.shape[:2]
        region = picture[y:y + height, x:x + width]
        alpha = bgra[..., 3:].astype(np.float32) * np.float32(1 / 255)
        blended = region + (bgra[..., :3].astype(np.float32) - region) * alpha
        np.rint(blended, out=blended)
        region[...] = blended  # only the patches are converted: six faces cover a tenth of a frame
    return picture


def at_size(picture: np.ndarray, size: int) -> np.ndarray:
    """`picture` at the preview's proxy size `size` (percent), as large as Blender makes a strip's proxy there
    (proxy.cc: size x the image's side / 100, rounded down); averaged, where Blender's own builder samples."""
    if size == 100:
        return picture
    height, width = picture.shape[:2]
    return cv2.resize(picture, (max(1, width * size // 100), max(1, height * size // 100)),
                      interpolation=cv2.INTER_AREA)


def encode(picture: np.ndarray, quality: int = QUALITY) -> bytes:
    ok, data = cv2.imencode(".jpg", picture, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise RuntimeError("OpenCV could not encode a preview JPEG")
    return data.tobytes()
