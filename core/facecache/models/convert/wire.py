"""Protocol Buffers wire format: read the fields of a message, write fields.

The model converters read TensorFlow GraphDefs and write ONNX ModelProtos, both
protobuf messages. A message on the wire is a sequence of (field number, wire
type, value) records (protobuf's documented encoding): varints (type 0),
64-bit (1), length-delimited bytes (2: strings, sub-messages, packed arrays) and
32-bit (5). That is all the converters need, so no `protobuf` runtime (nor
generated code) is required inside Blender.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import numpy as np

VARINT, FIXED64, BYTES, FIXED32 = 0, 1, 2, 5
MAX_PACKED_VALUES = 1 << 20  # values of one packed field read as Python numbers (weights come as raw bytes)


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message."""


def read_varint(buf, at: int) -> tuple[int, int]:
    """(value, next position) of the varint at `at`."""
    value = shift = 0
    while True:
        if at >= len(buf):
            raise WireError("a varint runs past the end of the message: the file is truncated or damaged")
        byte = buf[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7
        if shift > 63:
            raise WireError("a varint is longer than 10 bytes: the file is damaged")


def fields(buf) -> Iterator[tuple[int, int, object]]:
    """(field number, wire type, value) of each field of one message, in order.

    Values: int for varints, bytes for fixed 32/64-bit fields (unpack them by
    their declared type), a memoryview for length-delimited fields.
    """
    view = memoryview(buf)
    at, end = 0, len(view)
    while at < end:
        key, at = read_varint(view, at)
        number, wire = key >> 3, key & 7
        if wire == VARINT:
            value, at = read_varint(view, at)
        elif wire == BYTES:
            length, at = read_varint(view, at)
            if at + length > end:
                raise WireError(f"field {number} claims {length} bytes past the end of the message")
            value, at = view[at: at + length], at + length
        elif wire in (FIXED64, FIXED32):
            size = 8 if wire == FIXED64 else 4
            if at + size > end:
                raise WireError(f"field {number} runs past the end of the message")
            value, at = bytes(view[at: at + size]), at + size
        else:
            raise WireError(f"field {number} has wire type {wire}, which protobuf 3 does not use")
        yield number, wire, value


def signed64(value: int) -> int:
    """A varint read as int64 (negative numbers are stored as 10-byte two's complement)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def packed_varints(value, wire: int) -> list[int]:
    """A repeated integer field's values: one unpacked varint, or a packed run of them (at most
    MAX_PACKED_VALUES)."""
    if wire == VARINT:
        return [signed64(value)]
    if wire != BYTES:
        raise WireError(f"an integer field has wire type {wire}")
    out, at = [], 0
    while at < len(value):
        if len(out) == MAX_PACKED_VALUES:
            raise WireError(f"a packed field holds more than {MAX_PACKED_VALUES} values")
        number, at = read_varint(value, at)
        out.append(signed64(number))
    return out


def packed_floats(value, wire: int) -> list[float]:
    """A repeated float field's values: one fixed32, or a packed run of them (at most MAX_PACKED_VALUES)."""
    if wire == FIXED32:
        return [struct.unpack("<f", value)[0]]
    if wire != BYTES or len(value) % 4:
        raise WireError("a float field is neither one float nor a packed run of them")
    if len(value) // 4 > MAX_PACKED_VALUES:
        raise WireError(f"a packed field holds more than {MAX_PACKED_VALUES} values")
    return np.frombuffer(bytes(value), "<f4").tolist()


def text(value) -> str:
    """A string field as text; WireError when it is not UTF-8."""
    try:
        return bytes(value).decode("utf-8")
    except (UnicodeDecodeError, TypeError):
        raise WireError("a name or string is not UTF-8 text") from None


# --- writing -------------------------------------------------------------------------------------

def varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64  # int64 negatives take ten bytes
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def key(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def int_field(number: int, value: int) -> bytes:
    return key(number, VARINT) + varint(int(value))


def float_field(number: int, value: float) -> bytes:
    return key(number, FIXED32) + struct.pack("<f", value)


def bytes_field(number: int, value: bytes | str) -> bytes:
    data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    return key(number, BYTES) + varint(len(data)) + data


def packed_ints_field(number: int, values) -> bytes:
    return bytes_field(number, b"".join(varint(int(v)) for v in values))


def packed_floats_field(number: int, values) -> bytes:
    return bytes_field(number, np.asarray(values, "<f4").tobytes())
