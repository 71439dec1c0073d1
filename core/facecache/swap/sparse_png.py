"""PNG encoding of an overlay that is transparent except for one rectangle.

An overlay frame is mostly alpha-0 rows. A PNG's image data is one zlib stream
over all rows, but a raw deflate stream may be the concatenation of segments
that each end on a byte boundary (a sync flush), and the stream's Adler-32 can
be carried across a run of zero bytes arithmetically. So only the rows that
cross the face rectangle are compressed per frame; the runs of empty rows
above and below are compressed once per (width, row count) and reused. A 1080p
overlay with one face costs a fraction of encoding the whole frame, and the
file decodes like any PNG (RGBA, 8 bits, no filter).
"""

from __future__ import annotations

import struct
import zlib
from collections import OrderedDict

import numpy as np

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_ADLER_MOD = 65521
_LEVEL = 1  # fastest; the empty rows are compressed once anyway


class SparseOverlayEncoder:
    """Encodes (width, height, x, y, bgra patch) as a full-size RGBA PNG. Keeps a small
    cache of compressed empty-row runs; one encoder per thread."""

    def __init__(self, cache_entries: int = 64):
        self._empty_runs: OrderedDict[tuple[int, int], bytes] = OrderedDict()
        self._cache_entries = cache_entries

    def encode(self, width: int, height: int, patch: tuple[int, int, np.ndarray] | None) -> bytes:
        row_bytes = 1 + 4 * width  # filter byte (0: none) + RGBA
        if patch is None:
            x = y = 0
            band = np.zeros((0, row_bytes), np.uint8)
        else:
            x, y, bgra = patch
            if x < 0 or y < 0 or x + bgra.shape[1] > width or y + bgra.shape[0] > height:
                raise ValueError("the overlay patch lies outside the frame")
            band = np.zeros((bgra.shape[0], row_bytes), np.uint8)
            pixels = band[:, 1:].reshape(bgra.shape[0], width, 4)
            pixels[:, x:x + bgra.shape[1]] = bgra[..., [2, 1, 0, 3]]  # BGRA -> RGBA
        below = height - y - len(band)
        segments = [self._empty_run(width, y), _deflate(band.tobytes(), final=False),
                    self._empty_run(width, below)]
        adler = _adler_zeros(1, y * row_bytes)
        adler = zlib.adler32(band.tobytes(), adler)
        adler = _adler_zeros(adler, below * row_bytes)
        # An empty final block closes the stream (BFINAL=1, fixed Huffman, end-of-block).
        stream = b"\x78\x01" + b"".join(segments) + b"\x03\x00" + struct.pack(">I", adler)
        header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
        return _SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", stream) + _chunk(b"IEND", b"")

    def _empty_run(self, width: int, rows: int) -> bytes:
        if rows <= 0:
            return b""
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


def _deflate(data: bytes, final: bool) -> bytes:
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
