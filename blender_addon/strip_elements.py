"""Image strip elements whose recorded image size is never garbage.

`strip.elements.append(name)` (Blender 4.2-5.0) grows the strip's element array with a realloc and
leaves the new element's recorded image size (`orig_width`, `orig_height`) uninitialised. Blender
sizes the placeholder of a *missing* image from it: garbage such as 22090 x 1151272144 made it ask for
100 TB and crash (`Calloc returns null ... in imb_alloc_buffer`, exit 139) when one overlay frame was
deleted, the cache cleared or the project moved. Here each appended element records the original movie's
frame size, the size of an overlay with faces (Blender records each image's own size once it loads it;
a frame without a face is one transparent pixel, and a placeholder of either size renders as nothing).
A missing overlay then renders as Blender renders any missing image: nothing, or solid magenta where
the sequencer's "Show Missing Media" is on (the default in new files since 4.2).
RNA has these fields read-only and no API creates several elements at once outside a sequencer editor,
so they are written in the elements' own memory (DNA `StripElem`, the same in 4.2-5.0: a 256-byte file
name, `int orig_width, orig_height`, `float orig_fps`, elements packed in one array), once every element
reads there as RNA reads it and the elements lie one record apart; otherwise nothing is written.
"""

from __future__ import annotations

import ctypes
import logging
import math

log = logging.getLogger("vse_faceswap.strip_elements")

_NAME_BYTES = 256  # StripElem.filename[256]
_WIDTH, _HEIGHT, _FPS = _NAME_BYTES, _NAME_BYTES + 4, _NAME_BYTES + 8
_ELEMENT_BYTES = _NAME_BYTES + 12


def append_frames(strip, names, size: tuple[int, int]) -> bool:
    """Append elements (file names in `strip.directory`), each recording `size` (width, height;
    (0, 0) when unknown) as its image size. False (with a warning) when the elements' memory is not laid
    out as expected, in which case no size is written."""
    before = len(strip.elements)
    for name in names:
        strip.elements.append(name)
    elements = list(strip.elements)
    if len(elements) == before:
        return True  # nothing appended: Blender recorded the sizes of the elements it made
    if not _laid_out_as_expected(elements):
        log.warning("this Blender lays out strip elements differently; a missing swapped frame may not render "
                    "safely: run Update to remake missing frames before rendering")
        return False
    width, height = max(0, int(size[0])), max(0, int(size[1]))
    for element in elements:
        base = element.as_pointer()
        ctypes.c_int.from_address(base + _WIDTH).value = width
        ctypes.c_int.from_address(base + _HEIGHT).value = height
    return all((e.orig_width, e.orig_height) == (width, height) for e in elements)


def _laid_out_as_expected(elements) -> bool:
    bases = [element.as_pointer() for element in elements]
    if len(bases) < 2 or any(b - a != _ELEMENT_BYTES for a, b in zip(bases, bases[1:])):
        return False
    return all(_reads_as_rna(element, base) for element, base in zip(elements, bases))


def _reads_as_rna(element, base: int) -> bool:
    name = ctypes.string_at(base, _NAME_BYTES).split(b"\0", 1)[0].decode("utf-8", "replace")
    width, height = ctypes.c_int.from_address(base + _WIDTH).value, ctypes.c_int.from_address(base + _HEIGHT).value
    fps = ctypes.c_float.from_address(base + _FPS).value
    same_fps = fps == element.orig_fps or (math.isnan(fps) and math.isnan(element.orig_fps))
    return (name, width, height) == (element.filename, element.orig_width, element.orig_height) and same_fps
