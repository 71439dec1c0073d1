"""What the GUI tests check on the host: words read from screenshots, colours of pixels, the cache as the
engine reads it."""

from __future__ import annotations

import numpy as np


def words(result: dict, name: str) -> str:
    """Every word read on the pages of the sidebar under `name`, in one lower-case string."""
    return " ".join(w[0] for page in result["read"][name] for w in page).lower()


def has_colour(pixels_bgr: np.ndarray, rgba, tolerance: int = 4) -> bool:
    """Whether any pixel is `rgba` (0-1) drawn with its alpha over whatever lay beneath: each channel between
    alpha * c and alpha * c + (1 - alpha), in 0-255."""
    red, green, blue, alpha = rgba
    low = np.array([alpha * c * 255 - tolerance for c in (blue, green, red)])
    high = low + (1 - alpha) * 255 + 2 * tolerance
    inside = np.all((pixels_bgr >= low) & (pixels_bgr <= high), axis=-1)
    return bool(inside.any())


def cache_coverage(request: dict, media: str) -> tuple[set[int], set[int]]:
    """(analysed, swapped) media frames of `media` as the engine reads them from the cache now (the engine's
    coverage request, run on the host)."""
    from facecache.engine import run_job

    summary = run_job(request, lambda message: None)
    return ({int(f) for f in summary["analysed"].get(media, ())}, {int(f) for f in summary["swapped"].get(media, ())})


def magenta_share(screenshot_path, rect: list[int]) -> float:
    """The share of the frame's rectangle on the screen painted Blender's missing-media magenta."""
    import cv2

    x, y, width, height = rect
    pixels = cv2.imread(str(screenshot_path), cv2.IMREAD_COLOR)[y:y + height, x:x + width].astype(np.int16)
    blue, green, red = pixels[..., 0], pixels[..., 1], pixels[..., 2]
    return float(((red > 180) & (blue > 180) & (green < 60)).mean())
