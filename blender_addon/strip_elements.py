"""Image strip elements whose recorded image size is never garbage.

`strip.elements.append(name)` (Blender 4.2-5.0) grows the strip's element array with a realloc and
leaves the new element's recorded image size (`orig_width`, `orig_height`) uninitialised. Blender
sizes the placeholder of a *missing* image from it: garbage such as 22090 x 1151272144 made it ask for
100 TB and crash (`Calloc returns null ... in imb_alloc_buffer`, exit 139) when one overlay frame was
deleted, the cache cleared or the project moved. Here each appended element records the size Blender
itself records once it loads the overlay: the original movie's frame size (overlays are made at that
size). A missing overlay then renders as Blender renders any missing image: nothing, or solid magenta
where the sequencer's "Show Missing Media" is on (the default in new files since 4.2).
RNA has these fields read-only and no API creates several elements at once outside a sequencer editor,
so they are written in the element's own memory (DNA `StripElem`: a 256-byte file name, then
`int orig_width, orig_height`), after checking that layout against what RNA reads.
"""

from __future__ import annotations

import ctypes
import logging

log = logging.getLogger("vse_faceswap.strip_elements")

_NAME_BYTES = 256  # StripElem.filename[256]
_WIDTH, _HEIGHT = _NAME_BYTES, _NAME_BYTES + ctypes.sizeof(ctypes.c_int)


def append_frames(strip, names, size: tuple[int, int]) -> None:
    """Append elements (file names in `strip.directory`), each recording `size` (width, height;
    (0, 0) when unknown) as its image size."""
    for name in names:
        strip.elements.append(name)
    for element in strip.elements:
        record_size(element, *size)


def record_size(element, width: int, height: int) -> bool:
    """Set an element's recorded image size; False (with a warning) when the memory layout is not the
    one expected, in which case nothing is written."""
    base = element.as_pointer()
    stored_width = ctypes.c_int.from_address(base + _WIDTH)
    stored_height = ctypes.c_int.from_address(base + _HEIGHT)
    name = ctypes.string_at(base, _NAME_BYTES).split(b"\0", 1)[0].decode("utf-8", "replace")
    if (name, stored_width.value, stored_height.value) != (element.filename, element.orig_width, element.orig_height):
        log.warning("this Blender lays out strip elements differently; a missing swapped frame may not render "
                    "safely: run Update to remake missing frames before rendering")
        return False
    stored_width.value, stored_height.value = max(0, int(width)), max(0, int(height))
    return (element.orig_width, element.orig_height) == (stored_width.value, stored_height.value)
