"""Is a video's frame rate variable? Read from the MP4/MOV container itself.

Frame-accurate seeking by frame number needs a constant frame rate: with a
variable one, frame N's timestamp cannot be computed from N, and OpenCV's
seek can land on a neighbour. The video track's time-to-sample table (`stts`)
lists runs of equal frame durations; more than one distinct duration means a
variable frame rate. Other containers are not inspected (AVI is constant by
design).
"""

from __future__ import annotations

import struct
from pathlib import Path

_MAX_BOX_READ = 64 * 1024 * 1024  # the moov box; far larger only in hours-long files with huge tables


def frame_durations(path: str | Path) -> set[int] | None:
    """The distinct frame durations (in track time units) of the first video track of an
    MP4/MOV file, or None when the file is not one or has no readable video track."""
    with open(path, "rb") as handle:
        moov = _find_top_level(handle, b"moov")
    if moov is None:
        return None
    for trak in _children(moov, b"trak"):
        mdia = next(_children(trak, b"mdia"), None)
        if mdia is None:
            continue
        hdlr = next(_children(mdia, b"hdlr"), None)
        if hdlr is None or hdlr[8:12] != b"vide":
            continue
        stbl = _descend(mdia, (b"minf", b"stbl"))
        stts = next(_children(stbl, b"stts"), None) if stbl is not None else None
        if stts is None or len(stts) < 8:
            return None
        (count,) = struct.unpack(">I", stts[4:8])
        entries = stts[8:8 + 8 * count]
        if len(entries) < 8 * count:
            return None
        return {struct.unpack(">II", entries[i:i + 8])[1] for i in range(0, len(entries), 8)}
    return None


def is_variable_frame_rate(path: str | Path) -> bool:
    durations = frame_durations(path)
    return durations is not None and len(durations) > 1


def _find_top_level(handle, kind: bytes) -> bytes | None:
    while True:
        header = handle.read(8)
        if len(header) < 8:
            return None
        size, box = struct.unpack(">I4s", header)
        header_len = 8
        if size == 1:
            size = struct.unpack(">Q", handle.read(8))[0]
            header_len = 16
        elif size == 0:
            return handle.read(_MAX_BOX_READ) if box == kind else None
        if size < header_len:
            return None
        if box == kind:
            return handle.read(min(size - header_len, _MAX_BOX_READ))
        handle.seek(size - header_len, 1)


def _children(payload: bytes, kind: bytes):
    """Payloads of the direct child boxes of `kind` inside a container box's payload."""
    offset = 0
    while offset + 8 <= len(payload):
        size, box = struct.unpack(">I4s", payload[offset:offset + 8])
        header_len = 8
        if size == 1 and offset + 16 <= len(payload):
            size = struct.unpack(">Q", payload[offset + 8:offset + 16])[0]
            header_len = 16
        if size < header_len or offset + size > len(payload):
            return
        if box == kind:
            yield payload[offset + header_len:offset + size]
        offset += size


def _descend(payload: bytes, path: tuple[bytes, ...]) -> bytes | None:
    for kind in path:
        payload = next(_children(payload, kind), None)
        if payload is None:
            return None
    return payload
