"""PNG encoding of an overlay that is transparent except for a few rectangles (the faces).

An overlay frame is mostly alpha-0 rows. A PNG's image data is one zlib stream
over all rows, but a raw deflate stream may be the concatenation of segments
that each end on a byte boundary (a sync flush), and the stream's Adler-32 can
be carried across a run of zero bytes arithmetically. So only the bands of rows
that cross a face are compressed per frame; the runs of empty rows between them
are compressed once per (width, row count) and reused. A 1080p overlay costs a
fraction of encoding the whole frame, and the file decodes like any PNG (RGBA,
8 bits). The rows crossing faces use PNG's Sub filter (each byte minus the same
channel of the pixel to its left): measured on a 4K face band, 17.2 ms and 362 KB
against 18.7 ms and 652 KB unfiltered (photographs barely compress unfiltered).
zlib's run-length strategy would encode a little faster and smaller but inflates
5x slower (distance-1 copies, byte by byte): 62 against 13 ms for a 4K overlay,
paid by Blender on every frame of playback.
"""

from __future__ import annotations

import struct
import zlib
from collections import OrderedDict
from typing import Sequence

import cv2
import numpy as np

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_ADLER_MOD = 65521
_LEVEL = 1  # fastest; the empty rows are compressed once anyway


class SparseOverlayEncoder:
    """Encodes (width, height, [(x, y, bgra patch), ...]) as a full-size RGBA PNG. Keeps a small
    cache of compressed empty-row runs; one encoder per thread."""

    def __init__(self, cache_entries: int = 64):
        self._empty_runs: OrderedDict[tuple[int, int], bytes] = OrderedDict()
        self._cache_entries = cache_entries

    def encode(self, width: int, height: int, patches: Sequence[tuple[int, int, np.ndarray]]) -> bytes:
        """The PNG of a width x height overlay, transparent but for `patches`: (x, y, bgra)
        rectangles at column x, row y, not overlapping (as `composite.overlay_patches` gives)."""
        row_bytes = 1 + 4 * width  # filter byte (0: none) + RGBA
        for x, y, bgra in patches:
            if x < 0 or y < 0 or x + bgra.shape[1] > width or y + bgra.shape[0] > height:
                raise ValueError("an overlay patch lies outside the frame")
        segments, adler, row = [], 1, 0
        for top, bottom, crossing in _bands(patches):
            segments.append(self._empty_run(width, top - row))
            adler = _adler_zeros(adler, (top - row) * row_bytes)
            rgba = np.zeros((bottom - top, width, 4), np.uint8)
            for x, y, bgra in crossing:
                cv2.cvtColor(bgra, cv2.COLOR_BGRA2RGBA, dst=rgba[y - top:y - top + bgra.shape[0], x:x + bgra.shape[1]])
            band = _sub_filtered(rgba.reshape(bottom - top, 4 * width))
            segments.append(_deflate(band, final=False))
            adler = zlib.adler32(band, adler)
            row = bottom
        segments.append(self._empty_run(width, height - row))
        adler = _adler_zeros(adler, (height - row) * row_bytes)
        # An empty final block closes the stream (BFINAL=1, fixed Huffman, end-of-block).
        stream = b"\x78\x01" + b"".join(segments) + b"\x03\x00" + struct.pack(">I", adler)
        header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
        return _SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", stream) + _chunk(b"IEND", b"")

    def _empty_run(self, width: int, rows: int) -> bytes:
        """Deflate segments of `rows` empty rows, made of runs of 1, 2, 4, ... rows compressed once
        each: faces move from frame to frame, and every new row count would otherwise compress
        megabytes of zeros again (a 4K frame's empty rows are 30 MB)."""
        return b"".join(self._empty_power(width, 1 << bit) for bit in range(rows.bit_length()) if rows >> bit & 1)

    def _empty_power(self, width: int, rows: int) -> bytes:
        key = (width, rows)
        run = self._empty_runs.get(key)
        if run is None:
            run = _deflate(bytes((1 + 4 * width) * rows), final=False)
            self._empty_runs[key] = run
            if len(self._empty_runs) > self._cache_entries:
                self._empty_runs.popitem(last=False)
        else:
            self._empty_runs.move_to_end(key)
        return run


def _bands(patches: Sequence[tuple[int, int, np.ndarray]]) -> list[tuple[int, int, list]]:
    """(top, bottom, patches crossing) for each run of rows crossed by patches, top to bottom."""
    bands: list[tuple[int, int, list]] = []
    for patch in sorted(patches, key=lambda p: p[1]):
        top, bottom = patch[1], patch[1] + patch[2].shape[0]
        if bands and top <= bands[-1][1]:
            last_top, last_bottom, crossing = bands[-1]
            bands[-1] = (last_top, max(last_bottom, bottom), crossing + [patch])
        else:
            bands.append((top, bottom, [patch]))
    return bands


def _sub_filtered(rows: np.ndarray) -> np.ndarray:
    """PNG scanlines (filter byte 1, then each byte minus the byte 4 before it, modulo 256) of
    (rows, 4 * width) RGBA bytes."""
    out = np.empty((rows.shape[0], rows.shape[1] + 1), np.uint8)
    out[:, 0] = 1
    out[:, 1:5] = rows[:, :4]
    np.subtract(rows[:, 4:], rows[:, :-4], out=out[:, 5:])
    return out


def _deflate(data, final: bool) -> bytes:
    """Raw deflate of `data`, ending byte-aligned (sync flush) unless final."""
    compressor = zlib.compressobj(_LEVEL, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush(zlib.Z_FINISH if final else zlib.Z_SYNC_FLUSH)


def _adler_zeros(adler: int, count: int) -> int:
    """Adler-32 after `count` more zero bytes: the sum a is unchanged, b grows by count * a."""
    a, b = adler & 0xFFFF, adler >> 16
    b = (b + count * a) % _ADLER_MOD
    return (b << 16) | a


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
