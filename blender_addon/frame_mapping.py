"""Timeline frame -> media frame of a movie strip, as Blender computes it: the ONE place that knows
Blender's timing properties.

What Blender 5.0 shows of a strip at timeline frame t (the sequencer's `give_frame_index`, then the
movie reader; checked frame by frame against Blender's own mapping in tests/blender):
    i = t - frame_start                          reversed: frame_start + frame_duration - 1 - t
    i = max(i, 0) * playback rate                media fps / scene fps, for strips added with
                                                 "Adjust Playback Rate" (Blender's default)
    i = retiming(i) * content length             retimed strips: keys map positions to content fractions
    i = clamp(i, 0, content length - 1)          holds before the start or after the end
    i = i - (i mod strobe)                       strobed strips
    media frame = round(i) + animation_offset_start
A meta strip shows its content the same way (no retiming), at inner frame `frame_start + round(i)`.

Retiming keys: the Python API exposes only each key's timeline frame, not the content position it
holds, so `retiming_keys` reads Blender's own key records (see there). Nothing else here touches memory.
"""

from __future__ import annotations

import ctypes
import math
import os
import struct
from dataclasses import dataclass

import bpy
from numpy import float32 as f32

from . import compat


class UnsupportedStrip(Exception):
    """A strip whose timing this add-on cannot map; the message says what to change."""


# Retiming key flags (Blender's eSeqRetimingKeyFlag): the two ends of a smooth speed transition.
SPEED_TRANSITION = 1 | 2


@dataclass(frozen=True)
class RetimingKey:
    position: float  # frame index in the strip's timeline (after the playback rate), from its start
    factor: float  # content fraction 0..1 shown there
    flag: int


def _read_key(pointer: int, factor_offset: int) -> RetimingKey:
    raw = ctypes.string_at(pointer, 20)
    position, flag = struct.unpack_from("=di", raw, 0)
    (factor,) = struct.unpack_from("=f", raw, factor_offset)
    return RetimingKey(position, factor, flag)


# Where a key's content fraction lies in Blender's SeqRetimingKey record: after the position (double)
# and the flag (int), either directly (Blender 5.0) or after a padding int (some 4.x releases).
_FACTOR_OFFSETS = (12, 16)


def retiming_keys(strip) -> list[RetimingKey]:
    """The strip's retiming keys with their content fractions; [] when it is not retimed.

    The Python API gives each key's `timeline_frame` only (and in the bpy 5.0.1 module that value is
    wrong for a strip whose scene holds other strips), not the content fraction it holds. Both are read
    from the key's own record (`as_pointer()`); a layout is accepted only when the keys start at 0/0,
    and positions and fractions never decrease up to a last fraction above 0. Otherwise the strip is
    refused with what to do, never mapped by guess."""
    keys = list(compat.retiming_keys(strip))
    if len(keys) < 2:
        return []
    for offset in _FACTOR_OFFSETS:
        read = [_read_key(key.as_pointer(), offset) for key in keys]
        if _plausible(read):
            if any(k.flag & SPEED_TRANSITION for k in read):
                raise UnsupportedStrip(
                    f"strip {strip.name!r} has a smooth speed transition (retiming), which Face Swap does not "
                    "follow frame-exactly: remove the transition (keep plain speed keys) or render the retimed clip "
                    "to a file and swap faces on that")
            return read
    raise UnsupportedStrip(f"strip {strip.name!r} is retimed in a way this Blender version does not let Face Swap "
                           "read: reset its retiming (Strip > Retiming > Reset) or render the retimed clip to a "
                           "file and swap faces on that")


def _plausible(keys: list[RetimingKey]) -> bool:
    positions, fractions = [k.position for k in keys], [k.factor for k in keys]
    return (positions[0] == 0.0 and fractions[0] == 0.0 and 0.0 < fractions[-1] <= 1.0
            and all(0 <= k.flag < 32 for k in keys)
            and all(a <= b for a, b in zip(positions, positions[1:]))
            and all(a <= b + 1e-6 for a, b in zip(fractions, fractions[1:])))


def round_half_up(value: float) -> int:
    """C's round-half-away-from-zero for the values Blender rounds (`round_fl_to_int`)."""
    return int(math.floor(value + 0.5)) if value >= 0 else -int(math.floor(-value + 0.5))


def scene_fps(strip) -> float:
    render = strip.id_data.render
    return render.fps / render.fps_base


_frame_counts: dict[tuple[str, float, int], int] = {}
_movie_rates: dict[str, float] = {}


def movie_fps(strip) -> float:
    """A movie strip's own frame rate. Blender answers `strip.fps` by opening the movie (about 25 ms
    each time in the bpy module; the live preview and the coverage bars ask on every frame), so it is
    remembered per file: a movie's rate is a property of the file."""
    path = bpy.path.abspath(strip.filepath)
    if path not in _movie_rates:
        _movie_rates[path] = float(strip.fps)
    return _movie_rates[path]


def movie_frame_count(strip) -> int | None:
    """Frames in the strip's movie file as Blender's own decoder counts them (a movie clip datablock
    opened and dropped again, once per file as the strip knows it); None when Blender cannot open it, or
    may not add a datablock now (while drawing). Remembered by the strip's path, rate and length, not
    by the file's stat: drawing calls this and never touches the file system (a file replaced on disk
    keeps its count until the strip is reloaded, as Blender's own strip does)."""
    path = os.path.abspath(bpy.path.abspath(strip.filepath))
    key = (path, round(movie_fps(strip), 6), int(strip.frame_duration))
    if key not in _frame_counts:
        try:
            clip = bpy.data.movieclips.load(path, check_existing=False)
        except (RuntimeError, AttributeError):
            return None
        _frame_counts[key] = int(clip.frame_duration)
        bpy.data.movieclips.remove(clip)
    return _frame_counts[key]


def content_length(strip) -> int:
    """Blender's `len`: media frames the strip's content spans (the file less its animation offsets).
    `frame_duration` is that only while the strip is neither retimed nor played at another rate."""
    trimmed = int(strip.animation_offset_start + strip.animation_offset_end)
    if strip.type == "IMAGE":
        return len(strip.elements) - trimmed
    if strip.type == "MOVIE" and (_has_keys(strip) or abs(movie_fps(strip) - scene_fps(strip)) > 1e-3):
        total = movie_frame_count(strip)
        if total is not None:
            return total - trimmed
    return int(strip.frame_duration)


def _has_keys(strip) -> bool:
    return len(compat.retiming_keys(strip)) >= 2


def playback_rate(strip) -> float:
    """Media frames per timeline frame before retiming: 1, or media fps / scene fps for a movie strip
    added with "Adjust Playback Rate" (Blender's default when the clip's rate differs). That flag is
    not in the Python API; the strip's length on the timeline tells which rate Blender uses."""
    fps = movie_fps(strip) if strip.type == "MOVIE" else 0.0
    if fps <= 0 or abs(fps - scene_fps(strip)) <= 1e-3:
        return 1.0
    rate = fps / scene_fps(strip)
    keys = retiming_keys(strip)
    if keys:  # the last key ends the content: the strip's length is its position at that rate
        return min((1.0, rate), key=lambda r: abs(round_half_up(keys[-1].position / r) + 1 - strip.frame_duration))
    total = movie_frame_count(strip)
    if total is None:
        return 1.0
    length = total - strip.animation_offset_start - strip.animation_offset_end
    return rate if int(strip.frame_duration) == int(length / rate) != length else 1.0


def _retiming_fraction(keys: list[RetimingKey], index: float) -> float:
    """Blender's retiming curve at frame index `index`: straight segments between keys (a freeze frame
    is a segment with equal fractions), in single precision as Blender computes it, so that a content
    position of exactly n + 0.5 rounds the way Blender's does."""
    start = 0
    for i, key in enumerate(keys[:-1]):
        if key.position > index:
            break
        start = i
    a, b = keys[start], keys[start + 1]
    segment = int(b.position - a.position)
    step = f32(f32(f32(b.factor) - f32(a.factor)) / f32(segment)) if segment else f32(0.0)
    return min(1.0, float(f32(f32(a.factor) + f32(step * f32(f32(index) - a.position)))))


@dataclass(frozen=True)
class Timing:
    """A strip's timing, read once: turns timeline frames into content frame indices."""

    start: float
    duration: int
    length: int
    reverse: bool
    strobe: float
    rate: float
    keys: tuple[RetimingKey, ...]

    @classmethod
    def of(cls, strip) -> "Timing":
        keys = tuple(retiming_keys(strip)) if strip.type != "META" else ()
        return cls(strip.frame_start, int(strip.frame_duration), content_length(strip),
                   bool(getattr(strip, "use_reverse_frames", False)), max(1.0, getattr(strip, "strobe", 1.0)),
                   playback_rate(strip), keys)

    def index(self, t: int) -> int:
        """Content frame index (0-based) shown at timeline frame t."""
        end = self.start + self.duration - 1
        i = f32((end - t) if self.reverse else (t - self.start))
        i = f32(max(i, f32(0.0)) * f32(self.rate))
        if self.keys:
            i = f32(f32(_retiming_fraction(list(self.keys), float(i))) * f32(self.length))
        i = min(max(i, f32(0.0)), f32(self.length - 1))
        if self.strobe > 1.0:
            i = f32(i - f32(math.fmod(float(i), self.strobe)))
        return int(math.floor(f32(i + f32(0.5))))


def check_supported(strip) -> None:
    """Raises UnsupportedStrip when the strip's timing cannot be read (see `retiming_keys`)."""
    retiming_keys(strip)


def visible_frames(strip) -> list[int]:
    """The strip's own timeline frames that reach the picture: its trimmed range, narrowed to the frames
    every enclosing meta strip shows of its content (a meta's handles, reversal and strobe)."""
    frames = range(strip.frame_final_start, strip.frame_final_end)
    meta = strip.parent_meta()
    if meta is None:
        return list(frames)
    timing = Timing.of(meta)
    if timing.length != _meta_content_length(meta):  # a retimed meta: its mapping is not readable
        return list(frames)
    shown = {int(meta.frame_start) + timing.index(t) for t in visible_frames(meta)}
    return [t for t in frames if t in shown]


def _meta_content_length(meta) -> int:
    inner = compat.meta_contents(meta)
    if not len(inner):
        return int(meta.frame_duration)
    return (max(s.frame_final_end for s in inner) - min(s.frame_final_start for s in inner)
            - int(meta.animation_offset_start + meta.animation_offset_end))


@dataclass(frozen=True)
class Layout:
    """What a swapped strip must hold to mirror a movie strip frame for frame."""

    first: int  # timeline frame of its first element
    media: tuple[int, ...]  # media frame of each element, one per timeline frame from `first`
    used: frozenset[int]  # media frames that reach the picture (the frames a job must cover)


def layout(strip) -> Layout | None:
    """None when no frame of the strip reaches the picture."""
    visible = visible_frames(strip)
    if not visible:
        return None
    timing = Timing.of(strip)
    offset = int(strip.animation_offset_start)
    first, last = visible[0], visible[-1]
    media = tuple(timing.index(t) + offset for t in range(first, last + 1))
    return Layout(first, media, frozenset(media[t - first] for t in visible))


def _timings_down_to(strip) -> list:
    """[(strip or meta, its Timing)] from the outermost meta strip around `strip` down to `strip`."""
    chain = []
    while strip is not None:
        chain.insert(0, (strip, Timing.of(strip)))
        strip = strip.parent_meta()
    return chain


def media_frame_at(strip, frame: int, chain: list | None = None) -> int | None:
    """The media frame the strip shows at the sequencer's timeline frame `frame` (through the meta
    strips around it), or None when it shows nothing there."""
    chain = chain or _timings_down_to(strip)
    for outer, timing in chain[:-1]:
        if not outer.frame_final_start <= frame < outer.frame_final_end:
            return None
        frame = int(outer.frame_start) + timing.index(frame)
    if not strip.frame_final_start <= frame < strip.frame_final_end:
        return None
    return chain[-1][1].index(frame) + int(strip.animation_offset_start)


def shown_media_frames(strip) -> dict[int, int]:
    """{timeline frame: media frame} for every frame of the strip that reaches the picture."""
    timing = Timing.of(strip)
    offset = int(strip.animation_offset_start)
    return {t: timing.index(t) + offset for t in visible_frames(strip)}


def used_media_frames(strip, frames: range | None = None) -> set[int]:
    """The media frames the strip shows (the frames a job must cover); with `frames` (the sequencer's
    timeline frames, e.g. a render farm's chunk), only those it shows on them."""
    if frames is None:
        found = layout(strip)
        return set(found.used) if found is not None else set()
    chain = _timings_down_to(strip)
    outermost = chain[0][0]
    span = range(max(frames.start, outermost.frame_final_start), min(frames.stop, outermost.frame_final_end))
    return {m for m in (media_frame_at(strip, t, chain) for t in span) if m is not None}
