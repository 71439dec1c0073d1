"""The stand-in for frames of a swapped strip that the engine has not made yet (a swap running, cancelled or
stopped, a frame range, a farm chunk): one transparent pixel, `pending.png` in the strip's folder, which every
such element names until its overlay exists. An element naming a missing file made Blender mark the whole face
swap group as missing media (red, with a warning sign) and, with Show Missing Media on (the default since 4.2),
paint the frame solid magenta over the shot (seen in the GUI suite's screenshots). The engine's listings only
count `<frame:06d>.png`, so the stand-in is never taken for a swapped frame.

Only where an editor looks: in background mode (render farms, scripts) a frame whose overlay is missing keeps
naming it, so that a render shows the gap as before instead of the shot without its swap.
Written with Blender's own image writer (the add-on does not encode pictures), into a temporary name first.
"""

from __future__ import annotations

import os

import bpy

NAME = "pending.png"


def in_use() -> bool:
    """Whether frames not made yet name the stand-in: in Blender's window, not in background mode."""
    return not bpy.app.background


def ensure(folder: str) -> bool:
    """Whether `folder` holds the stand-in, written now when missing; False when it cannot be written (a
    read-only cache: the elements then keep naming their overlays)."""
    path = os.path.join(folder, NAME)
    if os.path.isfile(path):
        return True
    temporary = f"{path}.{os.getpid()}.tmp"
    image = bpy.data.images.new("faceswap pending frame", 1, 1, alpha=True)
    try:
        os.makedirs(folder, exist_ok=True)
        image.pixels[:] = (0.0, 0.0, 0.0, 0.0)
        image.filepath_raw, image.file_format = temporary, "PNG"
        image.save()
        os.replace(temporary, path)
    except (OSError, RuntimeError):
        return False
    finally:
        bpy.data.images.remove(image)
        if os.path.exists(temporary):
            os.remove(temporary)
    return True
