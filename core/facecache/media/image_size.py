"""The width and height an image file declares in its header, read before anything is decoded.

A 270-byte PNG may declare 65535 x 65535 pixels: decoding it would ask for 12 GB (OpenCV refuses with
an exception of its own), and a 16000 x 16000 blank PNG took 18 s and 1.6 GB before "no face found".
So a still is measured from its header first and refused beyond `MAX_PIXELS`. The formats are those
OpenCV decodes for the engine's image suffixes, recognised by their signature (not their name), each
read from its published layout: PNG (IHDR), JPEG (the SOFn segment), BMP (the DIB header), TIFF (the
first IFD's ImageWidth and ImageLength tags) and WebP (the VP8, VP8L or VP8X chunk). At most a few
kilobytes are read, the JPEG segments before its frame header skipped by their lengths.
"""

from __future__ import annotations

import struct
from typing import BinaryIO

MAX_PIXELS = 8192 * 8192  # 67 megapixels, an 8K square; 8K UHD (7680 x 4320) is half of it
_JPEG_FRAME_MARKERS = set(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}  # SOF0..SOF15 (not DHT, JPG, DAC)
_JPEG_NO_LENGTH = set(range(0xD0, 0xDA)) | {0x01}  # RSTn, SOI, EOI, TEM: markers without a segment
_MAX_JPEG_SEGMENTS = 4096


class UnknownImage(ValueError):
    """Not an image of a known format, or a header that does not read as its format says."""


def image_size(handle: BinaryIO) -> tuple[int, int]:
    """(width, height) from the header of the image file open in `handle`; UnknownImage otherwise."""
    try:
        return _image_size(handle)
    except struct.error:  # a header cut short
        raise UnknownImage("an image whose header is cut short") from None


def _image_size(handle: BinaryIO) -> tuple[int, int]:
    head = handle.read(32)
    if head.startswith(b"\x89PNG\r\n\x1a\n") and head[12:16] == b"IHDR":
        return struct.unpack(">II", head[16:24])
    if head.startswith(b"\xff\xd8"):
        return _jpeg_size(handle)
    if head.startswith(b"BM") and len(head) >= 26:
        if struct.unpack("<I", head[14:18])[0] == 12:  # the old OS/2 core header: 16-bit sizes
            return struct.unpack("<HH", head[18:22])
        width, height = struct.unpack("<ii", head[18:26])
        return abs(width), abs(height)  # a negative height is a top-down bitmap
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return _tiff_size(handle, "<" if head[:2] == b"II" else ">")
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return _webp_size(head + handle.read(32))
    raise UnknownImage("not a PNG, JPEG, BMP, TIFF or WebP image")


def _jpeg_size(handle: BinaryIO) -> tuple[int, int]:
    handle.seek(2)
    for _segment in range(_MAX_JPEG_SEGMENTS):
        marker = handle.read(2)
        while marker[:1] == b"\xff" and marker[1:] == b"\xff":  # fill bytes before a marker
            marker = marker[1:] + handle.read(1)
        if len(marker) < 2 or marker[0] != 0xFF:
            break
        if marker[1] in _JPEG_NO_LENGTH:
            continue
        length_bytes = handle.read(2)
        if len(length_bytes) < 2:
            break
        length = struct.unpack(">H", length_bytes)[0]
        if marker[1] in _JPEG_FRAME_MARKERS:
            frame = handle.read(5)
            if len(frame) < 5:
                break
            height, width = struct.unpack(">HH", frame[1:5])
            return width, height
        if length < 2:
            break
        handle.seek(length - 2, 1)
    raise UnknownImage("a JPEG without a readable frame header")


def _tiff_size(handle: BinaryIO, order: str) -> tuple[int, int]:
    handle.seek(4)
    (offset,) = struct.unpack(order + "I", handle.read(4))
    handle.seek(offset)
    count_bytes = handle.read(2)
    if len(count_bytes) < 2:
        raise UnknownImage("a TIFF whose first image directory is missing")
    count = min(struct.unpack(order + "H", count_bytes)[0], 1024)
    found = {}
    entries = handle.read(12 * count)
    for start in range(0, len(entries) - 11, 12):
        tag, kind = struct.unpack(order + "HH", entries[start:start + 4])
        if tag in (256, 257) and kind in (3, 4):  # ImageWidth, ImageLength as SHORT or LONG
            value = entries[start + 8:start + 12]
            found[tag] = struct.unpack(order + ("H" if kind == 3 else "I"), value[:2] if kind == 3 else value)[0]
    if 256 not in found or 257 not in found:
        raise UnknownImage("a TIFF without its width and height")
    return found[256], found[257]


def _webp_size(data: bytes) -> tuple[int, int]:
    chunk = data[12:16]
    if chunk == b"VP8X" and len(data) >= 30:
        return 1 + int.from_bytes(data[24:27], "little"), 1 + int.from_bytes(data[27:30], "little")
    if chunk == b"VP8L" and len(data) >= 25 and data[20] == 0x2F:
        bits = int.from_bytes(data[21:25], "little")
        return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    if chunk == b"VP8 " and len(data) >= 30 and data[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    raise UnknownImage("a WebP without a readable frame header")
