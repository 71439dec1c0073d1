"""Output folder and file names that mean the same on Windows, macOS and Linux.

A studio's output folders are shared: a Linux render node writes what a Windows workstation reads. A
clip's stem may be fine where the clip was made and still name no usable folder on Windows: `aux`,
`CON` or `nul.backup` are devices there (`CON_`'s folder would be unreachable), `a:b` holds a character
Windows refuses, and `take.` loses its trailing dot (so `take..mp4` and `take.mp4` would share a folder).
`portable_name` changes only such names, the same way on every platform, so every machine agrees on
where a clip's outputs are.

Standard library only: the Blender add-on loads this module in Blender's own process.
"""

from __future__ import annotations

import re

# Windows' reserved device names: with any extension ("nul.txt"), in any case, with trailing spaces.
_DEVICES = frozenset({"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"}
                     | {f"{port}{n}" for port in ("COM", "LPT") for n in (*"123456789", "¹", "²", "³")})
_NOT_ON_WINDOWS = re.compile(r'[<>:"/\\|?*\x00-\x1f]')


def portable_name(name: str) -> str:
    """`name` as a file or folder name valid on every platform: characters Windows refuses become `_`,
    a name ending in a dot or a space (which Windows drops) gets a `_` appended, and a device name gets
    a `_` after its base (`CON` -> `CON_`, `nul.backup` -> `nul_.backup`). Other names are unchanged."""
    name = _NOT_ON_WINDOWS.sub("_", name) or "_"
    if name.endswith((".", " ")):
        name += "_"
    base, dot, rest = name.partition(".")
    if base.rstrip(" ").upper() in _DEVICES:
        name = f"{base}_{dot}{rest}"
    return name
