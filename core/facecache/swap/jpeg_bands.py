"""JPEGs made of bands: each row of MCUs (16 pixel rows at 4:2:0) ends in a restart marker, so its bytes
depend on its own pixels alone, and a band can be replaced by the same band of a JPEG encoded from a strip of
those rows (libjpeg-turbo's colour conversion, chroma averaging and DCT see no other rows). A preview whose
faces changed is then made by encoding the faces' bands, not the whole frame (1080p: 5.5 ms a frame, one face's
bands about 1).

A band JPEG carries a comment (COM segment) the caller writes: what the picture is, to tell whether an old
file's other bands still hold. Baseline JPEG (ITU-T T.81): markers are 0xFF and a code; in the entropy-coded
data a 0xFF byte is always followed by 0x00, so a restart marker (0xFFD0-0xFFD7) found there is one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import cv2
import numpy as np

_SOI, _EOI = b"\xff\xd8", b"\xff\xd9"
_COM, _SOS, _SOF0, _DRI = 0xFE, 0xDA, 0xC0, 0xDD
_RESTART = re.compile(rb"\xff[\xd0-\xd7]")
BAND_ROWS = 16  # an MCU at 4:2:0: two luma blocks high


@dataclass(frozen=True)
class BandJpeg:
    """A band JPEG taken apart: its segments up to and including the scan's header (the frame header's
    height zeroed, at `height_at`; the comment left out), its comment, its height, and each band's
    entropy-coded bytes."""

    header: bytes
    height_at: int
    note: bytes
    height: int
    bands: tuple[bytes, ...]


def encode(picture: np.ndarray, quality: int, note: bytes) -> bytes:
    """`picture` (BGR) as a baseline 4:2:0 band JPEG at `quality`, carrying `note` (none where it is empty)."""
    mcus_across = -(-picture.shape[1] // 16)
    ok, data = cv2.imencode(".jpg", picture, [cv2.IMWRITE_JPEG_QUALITY, quality,
                                               cv2.IMWRITE_JPEG_SAMPLING_FACTOR, cv2.IMWRITE_JPEG_SAMPLING_FACTOR_420,
                                               cv2.IMWRITE_JPEG_RST_INTERVAL, mcus_across])
    if not ok:
        raise RuntimeError("OpenCV could not encode a preview JPEG")
    data = data.tobytes()
    return _SOI + _comment(note) + data[2:]


def parse(data: bytes) -> BandJpeg | None:
    """`data` taken apart, or None where it is not a whole band JPEG (another encoder's, cut short, damaged)."""
    if not data.startswith(_SOI) or not data.endswith(_EOI):
        return None
    header, note, height, height_at, width, restart, at = bytearray(), b"", 0, 0, 0, 0, 2
    while True:
        if at + 4 > len(data) or data[at] != 0xFF:
            return None
        code, length = data[at + 1], int.from_bytes(data[at + 2:at + 4], "big")
        segment = data[at:at + 2 + length]
        if len(segment) != 2 + length or length < 2:
            return None
        if code == _COM:
            note = segment[4:]
        elif code == _SOF0:
            if length != 17 or segment[9] != 3 or segment[11] != 0x22:
                return None  # not three components with the luma sampled 2x2 (4:2:0)
            height, width = int.from_bytes(segment[5:7], "big"), int.from_bytes(segment[7:9], "big")
            height_at = len(header) + 5
            header += segment[:5] + b"\0\0" + segment[7:]
        elif code == _DRI and length == 4:
            restart = int.from_bytes(segment[4:6], "big")
            header += segment
        elif code in (0xC1, 0xC2, 0xC3) or 0xC5 <= code <= 0xCF and code != 0xCC:
            return None  # not baseline
        else:
            header += segment
        at += 2 + length
        if code == _SOS:
            break
    if not height or restart != -(-width // 16):
        return None  # a restart interval other than one row of MCUs
    bands = _split(data[at:-2])
    if len(bands) != -(-height // BAND_ROWS):
        return None
    return BandJpeg(bytes(header), height_at, note, height, tuple(bands))


def spliced(old: BandJpeg, strips: Sequence[tuple[int, bytes]], note: bytes) -> bytes | None:
    """`old` with the bands from each (first band, band JPEG of those rows) of `strips` in place of its own,
    carrying `note`; None where a strip is not encoded as `old` is (another quality, width or table)."""
    bands = list(old.bands)
    for first, data in strips:
        strip = parse(data)
        if strip is None or strip.header != old.header or first + len(strip.bands) > len(bands):
            return None
        bands[first:first + len(strip.bands)] = strip.bands
    return assembled(old, bands, note)


def assembled(old: BandJpeg, bands: Sequence[bytes], note: bytes) -> bytes:
    """The JPEG of `old`'s header and height with `bands` and `note`."""
    at = old.height_at
    header = old.header[:at] + old.height.to_bytes(2, "big") + old.header[at + 2:]
    body = bytearray()
    for number, band in enumerate(bands):
        if number:
            body += bytes((0xFF, 0xD0 + (number - 1) % 8))
        body += band
    return _SOI + _comment(note) + header + bytes(body) + _EOI


def _split(entropy_coded: bytes) -> list[bytes]:
    """The scan's bytes cut at its restart markers (the markers left out)."""
    bands, start = [], 0
    for marker in _RESTART.finditer(entropy_coded):
        bands.append(entropy_coded[start:marker.start()])
        start = marker.end()
    bands.append(entropy_coded[start:])
    return bands


def _comment(note: bytes) -> bytes:
    if not note:
        return b""
    if len(note) > 65533:
        raise ValueError("a JPEG comment holds at most 65,533 bytes")
    return bytes((0xFF, _COM)) + (len(note) + 2).to_bytes(2, "big") + note
