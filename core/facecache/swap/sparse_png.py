"""PNG encoding of an overlay that is transparent except for a few rectangles (the faces).

An overlay frame is mostly alpha-0 rows. A PNG's image data is one zlib stream
over all rows, but a raw deflate stream may be the concatenation of segments
that each end on a byte boundary (a sync flush), and the stream's Adler-32 can
be carried across a run of zero bytes arithmetically. So only the bands of rows
that cross a face are compressed per frame; the runs of empty rows between them
are compressed once per (width, row count) and reused. A 1080p overlay costs a
fraction of encoding the whole frame, and the file decodes like any PNG (RGBA,
8 bits). zlib's run-length strategy would encode a little faster and smaller but
inflates 5x slower (distance-1 copies, byte by byte): 62 against 13 ms for a 4K
overlay, paid by Blender on every frame of playback.

The rows crossing faces are stored unfiltered (PNG filter 0) and deflated by zlib-ng
at level 1 (its "quick" deflate, fixed Huffman codes): on a real 4K face band, 6.8 ms
against zlib's 20.7 ms, and the output inflates as fast. zlib-ng's levels 2+ and ISA-L
compress smaller or faster still but find distance-1 matches in the zeros beside the
face, which inflate 2-3x slower. Its Adler-32 is 20x zlib's.

Why unfiltered (measured 2026-12-01, 2 cores, Blender 5.0.1's own decode, `imbuf.load`:
OpenImageIO, libpng 1.6.50, zlib 1.3.1, whose inflate decodes a symbol at a time): Sub (each byte minus the byte 4 before
it) made the six-face 1080p overlays 6 % smaller (443 against 473 KB a frame) but
their decode 0.4-0.6 ms slower (9.7 against 9.0-9.3 ms; a fully transparent frame
7.6-8.0), the 4K ones 17 % smaller (1.52 against 1.84 MB) and 2.0-2.6 ms slower (38.2
against 35.6-36.3; transparent 30.5): libpng undoes Sub pixel by pixel, and Sub's
bytes deflate into five times as many short matches (17,800 against 3,600 in a 1080p
frame), each dearer to inflate than the literals it replaces. Up decoded slower still
(10.2-10.3 ms); Sub rows deflated by zlib's levels 1-6 or zlib-ng's 6-9, 10.3-13.7 ms;
unfiltered ones by zlib's level 1, 9.7 ms. Unfiltered rows also encode faster (2.2 against 2.7 ms at 1080p, 9.7 against 10.3 at 4K): the band is
written straight into its scanlines, filter byte and all.

A band is deflated in pieces of about a megabyte (sync-flushed segments
again, their Adler-32 sums combined), so an encoder given a thread pool spreads a
large band over several cores (a 4K face's band is 10 MB: deflating it was a third
of a 4K preview step). The pieces do not depend on the pool: the bytes are the same
with or without one.
"""

from __future__ import annotations

import struct
import threading
import zlib
from collections import OrderedDict
from concurrent.futures import Executor, Future
from typing import Sequence

import cv2
import numpy as np
from zlib_ng import zlib_ng

from facecache.swap import deflate_blocks

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_ADLER_MOD = 65521
_LEVEL = 1  # the empty rows: compressed once, so zlib's output that inflates fastest


class SparseOverlayEncoder:
    """Encodes (width, height, [(x, y, bgra patch), ...]) as a full-size RGBA PNG. Keeps a small
    cache of compressed empty-row runs, shared by the threads that encode through it. With `pool`,
    the pieces of the face bands are deflated on its threads (zlib-ng releases the GIL)."""

    def __init__(self, cache_entries: int = 64, pool: Executor | None = None):
        self._empty_runs: OrderedDict[tuple[int, int], bytes] = OrderedDict()
        self._empty_runs_lock = threading.Lock()
        self._cache_entries = cache_entries
        self._pool = pool

    def encode(self, width: int, height: int, patches: Sequence[tuple[int, int, np.ndarray]]) -> bytes:
        """The PNG of a width x height overlay, transparent but for `patches`: (x, y, bgra)
        rectangles at column x, row y, not overlapping (as `composite.overlay_patches` gives)."""
        for x, y, bgra in patches:
            if x < 0 or y < 0 or x + bgra.shape[1] > width or y + bgra.shape[0] > height:
                raise ValueError("an overlay patch lies outside the frame")
        # The stream's parts in order, each (deflate segment, Adler-32 from 1, length) or a Future of one:
        # the empty runs from the cache, the face bands.
        parts, row = [], 0
        for top, bottom, crossing in _bands(patches):
            parts.append(self._empty_part(width, top - row))
            parts.append(self._pool.submit(_band_part, top, bottom, crossing, width) if self._pool
                         else _band_part(top, bottom, crossing, width))
            row = bottom
        parts.append(self._empty_part(width, height - row))
        segments, adler = [], 1
        for part in parts:
            segment, part_adler, length = part.result() if isinstance(part, Future) else part
            segments.append(segment)
            adler = _adler_combine(adler, part_adler, length)
        # An empty final block closes the stream (BFINAL=1, fixed Huffman, end-of-block).
        stream = b"\x78\x01" + b"".join(segments) + b"\x03\x00" + struct.pack(">I", adler)
        header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
        return _SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", stream) + _chunk(b"IEND", b"")

    def _empty_part(self, width: int, rows: int) -> tuple[bytes, int, int]:
        """(deflate segments, Adler-32 from 1, length) of `rows` empty rows."""
        length = rows * (1 + 4 * width)
        return self._empty_run(width, rows), _adler_zeros(1, length), length

    def _empty_run(self, width: int, rows: int) -> bytes:
        """Deflate segments of `rows` empty rows, made of runs of 1, 2, 4, ... rows compressed once
        each: faces move from frame to frame, and every new row count would otherwise compress
        megabytes of zeros again (a 4K frame's empty rows are 30 MB)."""
        return b"".join(self._empty_power(width, 1 << bit) for bit in range(rows.bit_length()) if rows >> bit & 1)

    def _empty_power(self, width: int, rows: int) -> bytes:
        key = (width, rows)
        with self._empty_runs_lock:
            run = self._empty_runs.get(key)
            if run is not None:
                self._empty_runs.move_to_end(key)
                return run
        run = _deflate(bytes((1 + 4 * width) * rows), final=False)  # two threads may both: same bytes
        with self._empty_runs_lock:
            self._empty_runs[key] = run
            if len(self._empty_runs) > self._cache_entries:
                self._empty_runs.popitem(last=False)
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


def _band_part(top: int, bottom: int, crossing: list, width: int) -> tuple[bytes, int, int]:
    """(deflate segment, Adler-32 from the start value 1, length) of the band's PNG scanlines: in
    each row, the bytes from the first to the last non-zero pixel of each face, in that row or the
    row above, as stored blocks; the rest as zeros copied from the row above (`deflate_blocks`).
    Above the band lie empty rows, or nothing at the top of the frame, whose first row is then
    stored whole."""
    rows, row_bytes = bottom - top, 1 + 4 * width
    scanlines = np.zeros((rows, row_bytes), np.uint8)  # filter byte 0 (none), then RGBA
    rgba = scanlines[:, 1:].reshape(rows, width, 4)
    visible: list[list[tuple[int, int]]] = [[] for _ in range(rows + 1)]  # byte ranges a row, one row more
    for x, y, bgra in crossing:
        cv2.cvtColor(bgra, cv2.COLOR_BGRA2RGBA, dst=rgba[y - top:y - top + bgra.shape[0], x:x + bgra.shape[1]])
        # Pixels with any byte set (alpha 0 with colour is kept too), four bytes read as one.
        held = np.ascontiguousarray(bgra).view(np.uint32)[..., 0] != 0
        firsts = held.argmax(axis=1)
        lasts = held.shape[1] - held[:, ::-1].argmax(axis=1)
        for index in np.flatnonzero(held[np.arange(held.shape[0]), firsts]).tolist():
            visible[y - top + index].append((1 + 4 * (x + int(firsts[index])), 1 + 4 * (x + int(lasts[index]))))
    flat = scanlines.reshape(-1)
    writer = deflate_blocks.BandWriter(row_bytes)
    end = 0  # bytes of the band written
    for band_row in range(rows):
        base = band_row * row_bytes
        if band_row == 0 and top == 0:
            runs = [(0, row_bytes)]
        else:
            runs = _merged(visible[band_row] + (visible[band_row - 1] if band_row else []))
        for start, stop in runs:
            writer.zeros(base + start - end)
            writer.data(flat[base + start:base + stop])
            end = base + stop
    writer.zeros(flat.size - end)
    return writer.finish(), zlib_ng.adler32(flat), flat.size


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Byte ranges sorted and merged."""
    merged: list[tuple[int, int]] = []
    for start, stop in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], stop))
        else:
            merged.append((start, stop))
    return merged


def _deflate(data, final: bool) -> bytes:
    """Raw deflate of `data`, ending byte-aligned (sync flush) unless final."""
    compressor = zlib.compressobj(_LEVEL, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush(zlib.Z_FINISH if final else zlib.Z_SYNC_FLUSH)


def _adler_zeros(adler: int, count: int) -> int:
    """Adler-32 after `count` more zero bytes: the sum a is unchanged, b grows by count * a."""
    a, b = adler & 0xFFFF, adler >> 16
    b = (b + count * a) % _ADLER_MOD
    return (b << 16) | a


def _adler_combine(first: int, second: int, second_length: int) -> int:
    """Adler-32 of two byte strings one after the other, from each one's Adler-32 (started at 1)
    and the second one's length: a = 1 + sum of the bytes, b = the sum of a after each byte."""
    a1, b1 = first & 0xFFFF, first >> 16
    a2, b2 = second & 0xFFFF, second >> 16
    a = (a1 + a2 - 1) % _ADLER_MOD
    b = (b1 + b2 + second_length * (a1 - 1)) % _ADLER_MOD
    return (b << 16) | a


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
