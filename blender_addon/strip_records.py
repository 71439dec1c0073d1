"""Timing values Blender keeps in a movie strip's own records but not in its Python API, read (never
written) from the strip's memory once that memory is checked against what the API shows of it:

- whether the strip plays at its clip's own frame rate ("Adjust Playback Rate", Blender's default when
  a clip is added whose rate differs from the scene's): the strip flag `SEQ_AUTO_PLAYBACK_RATE`;
- the content fraction each retiming key holds (the API gives only each key's timeline frame).

The layouts are Blender's DNA (`Strip`/`Sequence`, `SeqRetimingKey`), found by probing the bpy modules
4.2.23, 4.5.15, 5.0.1, 5.1.2 and 5.2.3 and checked by tests/blender/test_blender_frame_mapping.py on each
(5.1.2 and 5.2.3 in the Debian 13 root, scripts/debian_root.sh), and in Debian's Blender 4.3.2. A Blender
whose layout is not listed here, or a record that does not read as expected, gives None, and the caller
refuses the strip with a message: nothing is mapped by guess.
"""

from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass

import bpy

from . import compat

_NAME_BYTES = 64
_MOVIE = 3  # SEQ_TYPE_MOVIE
AUTO_PLAYBACK_RATE = 1 << 17
# Flag bits the Python API shows: all must agree with the record before its other bits are trusted.
_SHOWN_FLAGS = {"select": 1 << 0, "mute": 1 << 5, "use_reverse_frames": 1 << 7, "use_flip_x": 1 << 11,
                "use_flip_y": 1 << 12, "lock": 1 << 14}


@dataclass(frozen=True)
class _StripRecord:
    name: int  # bytes from a strip's start to `char name[64]` ("SQ" + the strip's name)
    flag: int  # to `int flag`
    type: int  # to `int type`


def _strip_record() -> _StripRecord | None:
    """Where this Blender keeps a strip's name, flags and type: 4.2-5.0 start the record with four pointers
    (next, prev, tmp, lib), 5.1 and 5.2 with two (next, prev)."""
    version = tuple(bpy.app.version[:2])
    if (4, 2) <= version < (5, 1):
        return _StripRecord(32, 96, 100)
    if (5, 1) <= version < (5, 3):
        return _StripRecord(16, 80, 84)
    return None


def plays_at_clip_rate(strip) -> bool | None:
    """Whether a movie strip plays at its clip's frame rate rather than one media frame per timeline
    frame; None when this Blender's strip record is not known or the strip's does not read as expected."""
    record = _strip_record()
    if record is None:
        return None
    raw = ctypes.string_at(strip.as_pointer(), max(record.name + _NAME_BYTES, record.flag, record.type) + 4)
    name = b"SQ" + strip.name.encode("utf-8")
    (flag,), (kind,) = struct.unpack_from("=I", raw, record.flag), struct.unpack_from("=i", raw, record.type)
    if (raw[record.name:record.name + _NAME_BYTES].split(b"\0", 1)[0] != name or kind != _MOVIE
            or any(bool(flag & bit) != bool(getattr(strip, prop)) for prop, bit in _SHOWN_FLAGS.items())):
        return None
    return bool(flag & AUTO_PLAYBACK_RATE)


@dataclass(frozen=True)
class RetimingKey:
    position: float  # frame index in the strip's timeline (after the playback rate), from its start
    factor: float  # content fraction 0..1 shown there
    flag: int


@dataclass(frozen=True)
class _KeyRecord:
    factor_offset: int  # bytes from a key's start (double position, int flag) to its content fraction
    last_is_one: bool  # a fraction of 1 is the last content frame (len - 1); else one past it (len)


def _key_record() -> _KeyRecord | None:
    """How this Blender stores a retiming key: 4.2-4.5 pad the flag to 8 bytes and count fractions up to
    the last content frame; 5.0-5.2 pack the fraction after the flag and count up to the content's end."""
    version = tuple(bpy.app.version[:2])
    if (4, 2) <= version < (5, 0):
        return _KeyRecord(16, True)
    if (5, 0) <= version < (5, 3):
        return _KeyRecord(12, False)
    return None


def retiming_span(length: int) -> int:
    """Content frames (from the first) that a retiming fraction of 1 stands for, for a strip whose
    content is `length` frames long."""
    record = _key_record()
    return length - 1 if record is not None and record.last_is_one else length


def retiming_keys(strip) -> tuple[RetimingKey, ...] | None:
    """The strip's retiming keys (() when it is not retimed); None when this Blender's key record is not
    known or the keys read are not a retiming curve: starting at 0/0, positions and fractions never
    decreasing, up to a last fraction above 0."""
    shown = compat.retiming_keys(strip)
    if len(shown) < 2:
        return ()
    record = _key_record()
    if record is None:
        return None
    keys = tuple(_read_key(key.as_pointer(), record.factor_offset) for key in shown)
    return keys if _plausible(keys) else None


def _read_key(pointer: int, factor_offset: int) -> RetimingKey:
    raw = ctypes.string_at(pointer, factor_offset + 4)
    position, flag = struct.unpack_from("=di", raw, 0)
    (factor,) = struct.unpack_from("=f", raw, factor_offset)
    return RetimingKey(position, factor, flag)


def _plausible(keys: tuple[RetimingKey, ...]) -> bool:
    positions, fractions = [k.position for k in keys], [k.factor for k in keys]
    return (positions[0] == 0.0 and fractions[0] == 0.0 and 0.0 < fractions[-1] <= 1.0
            and all(0 <= k.flag < 32 for k in keys)
            and all(a <= b for a, b in zip(positions, positions[1:]))
            and all(a <= b + 1e-6 for a, b in zip(fractions, fractions[1:])))
