"""Raw deflate blocks for an overlay's face bands: the face bytes as stored blocks, the zeros beside
them as copies of the row above.

Blender inflates overlays with zlib 1.3.1 (inside OpenImageIO), which decodes one Huffman symbol at
a time; a stored block is one memcpy, and a match that copies from a row back (7.7 KB at 1080p)
copies as fast as the zero rows do. Deflating the face bytes saved few bytes (photographs: a
six-face 1080p frame was 473 KB unfiltered and deflated, is 480 KB stored) and cost Blender
1.2-1.6 ms a frame to inflate. Measured in `sparse_png`'s docstring.

A band is written as items: zero runs and data runs, in order. A zero run must only cover bytes
whose byte one row above is zero too; the caller guarantees it (the data runs of a row cover the
faces of that row and of the row above).
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from functools import lru_cache

MAX_DISTANCE = 32768  # deflate's window: a zero run copies from one row above, so rows up to this
_MIN_ZERO_RUN = 8  # shorter zero runs go into the stored blocks
_LENGTH_BASES = (3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
                 163, 195, 227, 258)
_LENGTH_EXTRA = (0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0)
_DISTANCE_BASES = (1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
                   2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577)
_DISTANCE_EXTRA = (0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13)


class BandWriter:
    """Collects a band's items as deflate blocks; `finish` returns them ending on a byte boundary."""

    def __init__(self, row_distance: int):
        if row_distance > MAX_DISTANCE:
            raise ValueError(f"overlay rows longer than {MAX_DISTANCE} bytes (8191 pixels) are not supported")
        self._distance = row_distance
        self._out = bytearray()
        self._stored_header_open = False  # the last zero block already wrote the next stored block's header

    def zeros(self, count: int) -> None:
        if count >= _MIN_ZERO_RUN:
            self._out += _zero_block(count, self._distance)
            self._stored_header_open = True
        elif count:
            self.data(bytes(count))

    def data(self, data) -> None:
        """`data` (at most a row, so under a stored block's 65535 bytes) as a stored block."""
        if not self._stored_header_open:
            self._out.append(0)  # BFINAL 0, BTYPE 00 (stored), padded to the byte
        self._out += struct.pack("<HH", len(data), len(data) ^ 0xFFFF)
        self._out += memoryview(data)
        self._stored_header_open = False

    def finish(self) -> bytes:
        if self._stored_header_open:  # an empty stored block closes the header left open
            self._out += b"\x00\x00\xff\xff"
        return bytes(self._out)


@lru_cache(maxsize=8192)
def _zero_block(count: int, distance: int) -> bytes:
    """A fixed-Huffman block of `count` zero bytes copied from `distance` back, then the header of
    a stored block (which pads to the byte boundary): the next item's stored data follows, or an
    empty stored block closes it."""
    # Matches of 258 bytes, then what is left (`count` is 8 or more)
    whole, rest = divmod(count, 258)
    if 0 < rest < 3:  # a match is at least 3 bytes long: the last 258 and the rest make two
        whole, tail = whole - 1, [255 + rest, 3]
    else:
        tail = [rest] if rest else []
    bits = _Bits()
    bits.put(0b010, 3)  # BFINAL 0, BTYPE 01 (fixed codes), least significant bit first
    if whole:  # one match's bits repeated `whole` times: a geometric series, without a loop in Python
        value, length = _match_bits(258, distance)
        bits.put(value * ((1 << whole * length) - 1) // ((1 << length) - 1), whole * length)
    for length in tail:
        bits.put(*_match_bits(length, distance))
    bits.put(0, 7)  # end of block: symbol 256, code 0000000
    bits.put(0, 3)  # the stored block's header: BFINAL 0, BTYPE 00
    return bits.aligned()


@lru_cache(maxsize=1024)
def _match_bits(length: int, distance: int) -> tuple[int, int]:
    """(bits, how many) of one match of `length` bytes from `distance` back."""
    bits = _Bits()
    _put_match(bits, length, distance)
    return bits.value, bits.count


def _put_match(bits: "_Bits", length: int, distance: int) -> None:
    # the last base not above the value (the tables ascend): a cold overlay writes about a thousand matches
    code = bisect_right(_LENGTH_BASES, length) - 1
    symbol = 257 + code
    if symbol < 280:
        bits.put_code(symbol - 256, 7)
    else:
        bits.put_code(0xC0 + symbol - 280, 8)
    bits.put(length - _LENGTH_BASES[code], _LENGTH_EXTRA[code])
    code = bisect_right(_DISTANCE_BASES, distance) - 1
    bits.put_code(code, 5)
    bits.put(distance - _DISTANCE_BASES[code], _DISTANCE_EXTRA[code])


class _Bits:
    """Deflate's bit order: values least significant bit first, Huffman codes most significant first."""

    def __init__(self):
        self.value = 0
        self.count = 0

    def put(self, value: int, count: int) -> None:
        self.value |= value << self.count
        self.count += count

    def put_code(self, code: int, count: int) -> None:
        self.put(_reversed_bits(code, count), count)

    def aligned(self) -> bytes:
        return self.value.to_bytes((self.count + 7) // 8, "little")


@lru_cache(maxsize=1024)
def _reversed_bits(code: int, count: int) -> int:
    """`code`'s `count` bits in reverse order (a Huffman code, most significant bit first)."""
    return int(format(code, f"0{count}b")[::-1], 2)
