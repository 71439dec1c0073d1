"""PNG encoding of an overlay that is transparent except for a few rectangles (the faces).

An overlay frame is mostly alpha-0 rows. A PNG's image data is one zlib stream
over all rows, but a raw deflate stream may be the concatenation of segments
that each end on a byte boundary (a sync flush), and the stream's Adler-32 can
be carried across a run of zero bytes arithmetically. So only the bands of rows
that cross a face are compressed per frame; the runs of empty rows between them
are compressed once per (width, row count) and reused. A 1080p overlay costs a
fraction of encoding the whole frame, and the file decodes like any PNG (RGBA,
8 bits).

The rows crossing faces are unfiltered (PNG filter 0). In each of them the bytes from
the first to the last non-zero pixel of each face, in that row or the row above, go in
as stored blocks, and the zeros around them as fixed-Huffman blocks that copy the row
above (`deflate_blocks`): no deflating at all.

Why (measured 2026-12-01, 2 cores, Blender 5.0.1's own decode, `imbuf.load`: OpenImageIO,
libpng 1.6.50 and zlib 1.3.1, whose inflate decodes one Huffman symbol at a time; six
faces, issue 27's masks): the face rows used to be Sub-filtered and deflated by zlib-ng's
level 1 (its "quick" deflate: a 4K band in 6.8 ms against zlib's 20.7). Blender decoded
those 1080p overlays in 9.1-9.7 ms against a fully transparent frame's 7.3-8.0, 4K ones
in 38.2 against 30.5-32.5: inflating ~250,000 literals and 18,000 short matches a 1080p
frame, and undoing Sub pixel by pixel. Unfiltered rows deflated the same way decoded in
9.0-9.3 ms (4K 35.6-36.3); Up 10.2-10.3; zlib's levels 1-6 or zlib-ng's 6-9, 9.7-13.7.
Stored face bytes decode in 7.6-7.9 ms, as a transparent frame does (4K 30.1-32.3 against
31.1-32.5): a stored block is one copy, and copies from a row back run as fast as the
zero rows. Deflate barely compressed the faces, so the files grow by 8 % at 1080p and 25 %
at 4K (1080p: 443 KB a frame Sub-filtered and deflated, 473 unfiltered, 480 stored; 4K:
1.52, 1.84 and 1.91 MB). Encoding takes 2.1 ms a 1080p frame and 5.5 at 4K (deflated, Sub: 2.6-2.7 and
10.3). Copies from distance 1 (zlib's run-length strategy, or zlib-ng's levels 2+ in the
zeros beside a face) decode 2.6x slower: a frame of zeros 20 against 7.8 ms.

A band's blocks do not depend on a thread pool: an encoder given one builds the bands
on its threads, and the bytes are the same with or without it.
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

from facecache.media.row_bands import merged_spans
from facecache.swap import deflate_blocks

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_ADLER_MOD = 65521
_LEVEL = 1  # the empty rows: compressed once, so zlib's output that inflates fastest


class SparseOverlayEncoder:
    """Encodes (width, height, [(x, y, bgra patch), ...]) as a full-size RGBA PNG. Keeps a small
    cache of compressed empty-row runs, shared by the threads that encode through it. With `pool`,
    the face bands are built on its threads."""

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
    visible: list[list[tuple[int, int]]] = [[] for _ in range(rows)]  # non-zero byte ranges of each row
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
            runs = merged_spans(visible[band_row] + (visible[band_row - 1] if band_row else []))
        for start, stop in runs:
            writer.zeros(base + start - end)
            writer.data(flat[base + start:base + stop])
            end = base + stop
    writer.zeros(flat.size - end)
    return writer.finish(), zlib_ng.adler32(flat), flat.size


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
