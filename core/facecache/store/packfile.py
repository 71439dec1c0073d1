"""The pack file format: one msgpack metadata block plus `.npy` arrays in one file.

Layout (all integers little-endian):

    header   24 bytes  magic b"FCPK", u16 format version, u16 reserved (0),
                       u32 entry count, u32 metadata length, u64 arrays length
    metadata           msgpack map; its "arrays" item lists [name, offset, length]
                       of each `.npy` blob inside the arrays region
    arrays             `.npy` blobs, back to back
    trailer  16 bytes  XXH3-128 of everything before it

A pack is stored under the hex of its trailer digest, so the name is a second
checksum and identical content is never written twice.

Decoding trusts nothing: every length is checked against the file size before
anything is allocated, msgpack runs with limits sized from the input and no
extension hooks, `.npy` headers are parsed by numpy's header reader and only
plain numeric dtypes are accepted, so no pickle is ever loaded.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass

import msgpack
import numpy as np
import xxhash

from facecache.errors import CorruptPack

MAGIC = b"FCPK"
FORMAT_VERSION = 1
HEADER = struct.Struct("<4sHHIIQ")
TRAILER_LEN = 16
MAX_PACK_BYTES = 256 * 1024 * 1024
MAX_META_BYTES = 16 * 1024 * 1024
MAX_ARRAYS = 4096
_NPY_MAX_HEADER = 10_000
_NPY_PREAMBLE = 12  # magic (6), version (2), header length (2 or 4)
_ALLOWED_KINDS = "biuf"


@dataclass
class Pack:
    """Decoded pack content: a metadata map and named arrays."""

    meta: dict
    arrays: dict[str, np.ndarray]
    entries: int


def encode(meta: dict, arrays: dict[str, np.ndarray], entries: int) -> tuple[str, bytes]:
    """Serialise a pack; returns (digest hex used as its file name, bytes)."""
    blobs = []
    table = []
    offset = 0
    for name, array in arrays.items():
        array = np.ascontiguousarray(array)
        if array.dtype.kind not in _ALLOWED_KINDS:
            raise TypeError(f"array {name!r} has dtype {array.dtype}; only numeric arrays are stored")
        buffer = io.BytesIO()
        np.lib.format.write_array(buffer, array, allow_pickle=False)
        blob = buffer.getvalue()
        table.append([name, offset, len(blob)])
        blobs.append(blob)
        offset += len(blob)
    meta_bytes = msgpack.packb({**meta, "arrays": table}, use_bin_type=True)
    body = b"".join([HEADER.pack(MAGIC, FORMAT_VERSION, 0, entries, len(meta_bytes), offset), meta_bytes, *blobs])
    digest = xxhash.xxh3_128_digest(body)
    return digest.hex(), body + digest


def read_entry_count(head: bytes) -> int:
    """Entry count from the first HEADER.size bytes of a pack (for cheap stats)."""
    magic, version, _, entries, _, _ = _unpack_header(head)
    return entries


def decode(data: bytes, expected_digest: str | None = None) -> Pack:
    """Parse and verify a pack; raises CorruptPack on any defect."""
    if len(data) > MAX_PACK_BYTES:
        raise CorruptPack(f"pack of {len(data)} bytes exceeds the {MAX_PACK_BYTES}-byte limit")
    if len(data) < HEADER.size + TRAILER_LEN:
        raise CorruptPack("truncated pack (shorter than header and checksum)")
    body, trailer = memoryview(data)[:-TRAILER_LEN], data[-TRAILER_LEN:]
    if xxhash.xxh3_128_digest(body) != trailer:
        raise CorruptPack("checksum mismatch")
    if expected_digest is not None and trailer.hex() != expected_digest:
        raise CorruptPack("file name does not match its checksum")
    _, _, _, entries, meta_len, arrays_len = _unpack_header(data[: HEADER.size])
    if meta_len > MAX_META_BYTES or HEADER.size + meta_len + arrays_len != len(body):
        raise CorruptPack("section lengths do not match the file size")
    meta_end = HEADER.size + meta_len
    meta = _unpack_meta(body[HEADER.size:meta_end])
    arrays = _read_arrays(meta.pop("arrays", None), body[meta_end:])
    return Pack(meta=meta, arrays=arrays, entries=entries)


def _unpack_header(head: bytes) -> tuple:
    if len(head) < HEADER.size:
        raise CorruptPack("truncated header")
    fields = HEADER.unpack(head[: HEADER.size])
    if fields[0] != MAGIC:
        raise CorruptPack("not a facecache pack (bad magic)")
    if fields[1] != FORMAT_VERSION:
        raise CorruptPack(f"pack format version {fields[1]} is not {FORMAT_VERSION}")
    return fields


def _unpack_meta(raw: memoryview) -> dict:
    try:
        # Limits default to the input length; no ext_hook/object_hook: plain data only.
        meta = msgpack.unpackb(raw, raw=False, strict_map_key=True, use_list=True)
    except Exception as exc:  # msgpack raises several unrelated types on bad input
        raise CorruptPack(f"unreadable metadata: {exc.__class__.__name__}") from None
    if not isinstance(meta, dict):
        raise CorruptPack("metadata is not a map")
    return meta


def _read_arrays(table, region: memoryview) -> dict[str, np.ndarray]:
    if not isinstance(table, list) or len(table) > MAX_ARRAYS:
        raise CorruptPack("bad array table")
    arrays = {}
    for item in table:
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str)
                and all(isinstance(v, int) and not isinstance(v, bool) for v in item[1:])):
            raise CorruptPack("bad array table entry")
        name, offset, length = item
        if offset < 0 or length < 0 or offset + length > len(region) or name in arrays:
            raise CorruptPack(f"array {name!r} lies outside the pack")
        arrays[name] = _read_npy(region[offset:offset + length])
    return arrays


def _read_npy(blob: memoryview) -> np.ndarray:
    stream = io.BytesIO(blob[:_NPY_PREAMBLE + _NPY_MAX_HEADER])  # the header only: BytesIO copies
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream, max_header_size=_NPY_MAX_HEADER)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream, max_header_size=_NPY_MAX_HEADER)
        else:
            raise CorruptPack(f"unsupported .npy version {version}")
    except CorruptPack:
        raise
    except Exception as exc:  # numpy raises ValueError/SyntaxError/... on hostile headers
        raise CorruptPack(f"bad .npy header: {exc.__class__.__name__}") from None
    if dtype.hasobject or dtype.kind not in _ALLOWED_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise CorruptPack(f".npy dtype {dtype} is not a plain numeric type")
    if len(shape) > 32 or any(not isinstance(n, int) or isinstance(n, bool) or n < 0 for n in shape):
        raise CorruptPack("bad .npy shape")
    count = 1
    for n in shape:
        count *= n
    start = stream.tell()  # within the header part, which is where the data starts
    if count * dtype.itemsize != len(blob) - start:
        raise CorruptPack(".npy data length does not match its header")
    try:
        if count == 0:  # a zero dimension beside huge ones passes the length check
            return np.empty(shape, dtype=dtype)
        array = np.frombuffer(blob, dtype=dtype, count=count, offset=start)
        array = array.reshape(shape, order="F" if fortran else "C")
        # A view of the pack's private buffer (no copy of a ~100 MB swap pack), unless it is
        # read-only or misaligned (OpenCV and some numpy paths want aligned data).
        return array if array.flags.writeable and array.flags.aligned else array.copy()
    except (ValueError, TypeError, OverflowError):
        raise CorruptPack(f".npy shape {shape} cannot be built") from None
