"""Each output PNG carries the key it was made from, in a text chunk right after its header.

The manifest is the fast way to know an output is current (no file opened per frame). The
stamp is the ground truth it can fall back on when its entry is missing: a teammate's save
not yet listed by a network client (sshfs caches folder listings for up to 20 s), a save lost
with a killed job, a deleted manifest. The stamp is written with the picture in one atomic
rename, so the two can never disagree. Reading it costs one open and about 100 bytes.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_HEADER_END = 8 + 25  # signature, then the IHDR chunk (length, type, 13 bytes, crc)
_KEYWORD = b"facecache-output-key"
_KEY_LENGTH = 32  # hex digits of an output key


def stamp_png(png: bytes, key: str) -> bytes:
    """The PNG with a `tEXt` chunk holding `key` inserted after its IHDR chunk."""
    if png[:8] != _SIGNATURE or png[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    data = _KEYWORD + b"\0" + key.encode("ascii")
    chunk = struct.pack(">I", len(data)) + b"tEXt" + data + struct.pack(">I", zlib.crc32(b"tEXt" + data))
    return png[:_HEADER_END] + chunk + png[_HEADER_END:]


def read_stamp(path: Path) -> str | None:
    """The key an output PNG was stamped with; None when it has none or is not a PNG."""
    data_length = len(_KEYWORD) + 1 + _KEY_LENGTH
    try:
        with open(path, "rb") as handle:
            head = handle.read(_HEADER_END + 12 + data_length)
    except OSError:
        return None
    if head[:8] != _SIGNATURE or len(head) != _HEADER_END + 12 + data_length:
        return None
    length, kind = struct.unpack(">I4s", head[_HEADER_END:_HEADER_END + 8])
    data = head[_HEADER_END + 8:_HEADER_END + 8 + data_length]
    (crc,) = struct.unpack(">I", head[-4:])
    if (length, kind) != (data_length, b"tEXt") or crc != zlib.crc32(b"tEXt" + data):
        return None
    keyword, _, key = data.partition(b"\0")
    return key.decode("latin-1") if keyword == _KEYWORD else None
