"""A minimal reader of FlatBuffers tables (the container format of `.tflite` files).

Only what reading a TFLite model needs: tables through their vtables, scalars, strings,
vectors of scalars and of tables, unions. Everything is bounds-checked, so a damaged file
raises `FlatBufferError` instead of reading garbage. Written here rather than vendoring the
`flatbuffers` runtime: reading is ~100 lines and the extension then ships no extra wheel.

Layout facts (FlatBuffers' documented binary format, little-endian):
- the buffer starts with a uint32 offset to the root table;
- a table starts with an int32 `soffset`; its vtable is at `table - soffset`;
- a vtable holds uint16 (vtable bytes, table bytes, then one uint16 per field: the field's
  offset inside the table, 0 = absent, the schema default applies);
- references (tables, vectors, strings) are uint32 offsets relative to where they are stored;
- a vector or string is a uint32 length followed by its elements (strings add a 0 byte).
"""

from __future__ import annotations

import struct

import numpy as np


class FlatBufferError(ValueError):
    """The bytes are not a well-formed FlatBuffer of the expected shape."""


_SCALARS = {"b": 1, "B": 1, "?": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "Q": 8, "f": 4, "d": 8}


class Table:
    """One table inside `buf`, starting at byte `pos`."""

    __slots__ = ("buf", "pos", "_vtable", "_vtable_size")

    def __init__(self, buf: bytes | memoryview, pos: int):
        self.buf = buf
        self.pos = pos
        soffset = _unpack(buf, "<i", pos)
        self._vtable = pos - soffset
        self._vtable_size = _unpack(buf, "<H", self._vtable)
        if self._vtable_size < 4 or self._vtable_size % 2:
            raise FlatBufferError(f"bad vtable size {self._vtable_size} at byte {self._vtable}")
        _check(buf, self._vtable, self._vtable_size)

    @classmethod
    def root(cls, buf: bytes | memoryview, identifier: bytes | None = None) -> "Table":
        if identifier is not None and bytes(buf[4:8]) != identifier:
            raise FlatBufferError(f"file identifier {bytes(buf[4:8])!r}, expected {identifier!r}")
        return cls(buf, _unpack(buf, "<I", 0))

    def _field(self, index: int) -> int:
        """Byte position of field `index`, or 0 when absent."""
        slot = 4 + 2 * index
        if slot >= self._vtable_size:
            return 0
        offset = _unpack(self.buf, "<H", self._vtable + slot)
        return self.pos + offset if offset else 0

    def has(self, index: int) -> bool:
        return self._field(index) != 0

    def scalar(self, index: int, fmt: str, default=0):
        at = self._field(index)
        return _unpack(self.buf, "<" + fmt, at) if at else default

    def _target(self, index: int) -> int:
        at = self._field(index)
        return at + _unpack(self.buf, "<I", at) if at else 0

    def table(self, index: int) -> "Table | None":
        at = self._target(index)
        return Table(self.buf, at) if at else None

    def string(self, index: int, default: str = "") -> str:
        at = self._target(index)
        if not at:
            return default
        length = _unpack(self.buf, "<I", at)
        _check(self.buf, at + 4, length)
        return bytes(self.buf[at + 4: at + 4 + length]).decode("utf-8", "replace")

    def vector(self, index: int, fmt: str) -> np.ndarray:
        """A vector of scalars as a read-only numpy array (empty when absent)."""
        dtype = np.dtype("<" + fmt)
        at = self._target(index)
        if not at:
            return np.zeros(0, dtype)
        length = _unpack(self.buf, "<I", at)
        _check(self.buf, at + 4, length * dtype.itemsize)
        return np.frombuffer(self.buf, dtype, count=length, offset=at + 4)

    def bytes(self, index: int) -> memoryview:
        """A [ubyte] vector without copying it."""
        at = self._target(index)
        if not at:
            return memoryview(b"")
        length = _unpack(self.buf, "<I", at)
        _check(self.buf, at + 4, length)
        return memoryview(self.buf)[at + 4: at + 4 + length]

    def tables(self, index: int) -> list["Table"]:
        """A vector of tables."""
        at = self._target(index)
        if not at:
            return []
        length = _unpack(self.buf, "<I", at)
        _check(self.buf, at + 4, 4 * length)
        out = []
        for i in range(length):
            slot = at + 4 + 4 * i
            out.append(Table(self.buf, slot + _unpack(self.buf, "<I", slot)))
        return out


def _check(buf, start: int, length: int) -> None:
    if start < 0 or length < 0 or start + length > len(buf):
        raise FlatBufferError(f"a reference to bytes {start}..{start + length} lies outside the "
                              f"{len(buf)}-byte buffer: the file is truncated or damaged")


def _unpack(buf, fmt: str, at: int):
    _check(buf, at, _SCALARS[fmt[-1]])
    return struct.unpack_from(fmt, buf, at)[0]
