"""The quality bench's pictures: sample photographs (``facecache.samples``), resampled to a
height or rolled in the picture's plane, so a head leaning sideways is measured too.

A rolled picture is the photograph turned about its centre on a larger grey canvas that holds
all of it (no corner is cut and nothing is mirrored in, so no face is invented at the border).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from facecache.media.reader import MediaReader
from facecache.samples import sample_image

# The canvas around a rolled photograph: a flat mid grey, which no detector takes for a face.
_CANVAS = (128, 128, 128)


@dataclass(frozen=True)
class Pair:
    source: str            # sample name
    target: str            # sample name
    target_height: int | None = None  # resample the target picture to this height (None: as it is)
    roll: float = 0.0         # turn the target picture by this many degrees (counter-clockwise)
    source_roll: float = 0.0  # turn the source picture by this many degrees
    target_frame: int | None = None  # the target is a movie sample: this frame of it, as the engine decodes it

    @property
    def label(self) -> str:
        source = self.source + (f"_rolled{self.source_roll:+g}" if self.source_roll else "")
        target = self.target + (f"_{self.target_height}p" if self.target_height else "") + (
            f"_frame{self.target_frame}" if self.target_frame is not None else "")
        return f"{source}_on_{target}" + (f"_rolled{self.roll:+g}" if self.roll else "")


def target_picture(pair: Pair) -> np.ndarray:
    """The target picture of ``pair`` (BGR), resampled and rolled as the pair says."""
    picture = load(pair.target, pair.target_height) if pair.target_frame is None else movie_frame(pair.target,
                                                                                                pair.target_frame)
    return rolled(picture, pair.roll)


def source_path(pair: Pair, folder: Path) -> Path:
    """A path to the source picture of ``pair``: the sample itself, or its rolled copy written
    into ``folder`` (the swap reads sources from files, as `facecache swap --source` does)."""
    path = sample_image(pair.source)
    if not pair.source_roll:
        return path
    copy = Path(folder) / f"{pair.source}_rolled{pair.source_roll:+g}.png"
    if not cv2.imwrite(str(copy), rolled(load(pair.source), pair.source_roll)):
        raise OSError(f"could not write {copy}")
    return copy


def load(name: str, height: int | None = None) -> np.ndarray:
    image = cv2.imread(str(sample_image(name)), cv2.IMREAD_COLOR)
    if image is None:
        raise OSError(f"could not decode the sample picture {name}")
    if height and image.shape[0] != height:
        scale = height / image.shape[0]
        image = cv2.resize(image, None, fx=scale, fy=scale,
                           interpolation=cv2.INTER_CUBIC if scale > 1 else cv2.INTER_AREA)
    return image


def movie_frame(name: str, index: int) -> np.ndarray:
    """Frame ``index`` of the movie sample ``name`` (BGR), as the engine decodes it for the newest Blender."""
    with MediaReader(sample_image(name)) as reader:
        ((_, frame),) = reader.frames([index])
    return frame


def rolled(image: np.ndarray, degrees: float) -> np.ndarray:
    """``image`` turned by ``degrees`` (counter-clockwise) about its centre, on a grey canvas
    just large enough to hold all of it."""
    if not degrees:
        return image
    height, width = image.shape[:2]
    matrix = cv2.getRotationMatrix2D(((width - 1) / 2.0, (height - 1) / 2.0), degrees, 1.0)
    cos, sin = abs(matrix[0, 0]), abs(matrix[0, 1])
    new_width, new_height = int(np.ceil(width * cos + height * sin)), int(np.ceil(width * sin + height * cos))
    matrix[:, 2] += ((new_width - width) / 2.0, (new_height - height) / 2.0)
    return cv2.warpAffine(image, matrix, (new_width, new_height), flags=cv2.INTER_CUBIC,
                          borderMode=cv2.BORDER_CONSTANT, borderValue=_CANVAS)
