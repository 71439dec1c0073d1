"""Content digests of frames and files.

A frame fingerprint is XXH3-128 over a small header (dtype and shape) followed by
the pixel bytes. It costs about 0.3 ms for a 1080p RGB frame on a 2-core machine,
against about 4.4 ms for SHA-256 (see `facecache bench cache`). It is a content
key, not a security boundary: the cache also checksums what it stores.
"""

from __future__ import annotations

import os

import numpy as np
import xxhash

from facecache.files import hash_file

FINGERPRINT_HEX_LEN = 32  # 128 bits


def frame_fingerprint(frame: np.ndarray) -> str:
    """Return the 128-bit content key (32 hex digits) of a decoded frame."""
    frame = np.ascontiguousarray(frame)
    hasher = xxhash.xxh3_128()
    hasher.update(f"{frame.dtype.str}|{'x'.join(map(str, frame.shape))}|".encode())
    hasher.update(memoryview(frame).cast("B"))
    return hasher.hexdigest()


def bytes_digest(data: bytes | memoryview) -> str:
    """128-bit digest (32 hex digits) of a byte string."""
    return xxhash.xxh3_128_hexdigest(data)


def file_digest(path: str | os.PathLike) -> str:
    """128-bit digest (32 hex digits) of a whole file, read in chunks."""
    return hash_file(path).digest


def is_digest(text: str) -> bool:
    """True for a well-formed 32-digit lowercase hex digest, the only names the cache accepts."""
    return (
        isinstance(text, str)
        and len(text) == FINGERPRINT_HEX_LEN
        and all(c in "0123456789abcdef" for c in text)
    )
