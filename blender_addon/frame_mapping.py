"""Timeline frame -> media frame of a movie strip, as Blender computes it: the ONE place that knows
Blender's timing properties.

What Blender 4.2-5.2 shows of a strip at timeline frame t (the sequencer's `give_frame_index`, then the
movie reader; checked frame by frame against Blender's own mapping in tests/blender on 4.2, 4.3, 4.5, 5.0,
5.1 and 5.2):
    i = t - content_start                        reversed: content_start + length - 1 - t, length = the
                                                 content's frames on the timeline
    i = max(i, 0) * playback rate                media fps / scene fps, for strips added with
                                                 "Adjust Playback Rate" (Blender's default)
    i = retiming(i) * span                       retimed strips: keys map positions to content fractions
                                                 of a span of content length (5.0) or length - 1 (4.x)
    i = clamp(i, 0, content length - 1)          holds before the start or after the end
    i = i - (i mod strobe)                       strobed strips
    media frame = round(i) + content_trim_start
A meta strip shows its content the same way (no retiming), at inner frame `content_start + round(i)`.
The timing properties have these names since 5.1 (`frame_start`, `animation_offset_start`, ... before it);
`compat` reads them by the names this Blender has.

The playback rate flag and the retiming keys' content fractions are not in the Python API: they are read
from Blender's own records by `strip_records`, the only module that reads a strip's memory.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import bpy
from numpy import float32 as f32

from . import compat, strip_records


class UnsupportedStrip(Exception):
    """A strip whose timing this add-on cannot map; the message says what to change."""


# Retiming key flags (Blender's eSeqRetimingKeyFlag): the two ends of a smooth speed transition.
SPEED_TRANSITION = 1 | 2


def retiming_keys(strip) -> list[strip_records.RetimingKey]:
    """The strip's retiming keys with their content fractions; [] when it is not retimed.

    The Python API gives each key's `timeline_frame` only (and in the bpy 5.0.1 module that value is
    wrong for a strip whose scene holds other strips), not the content fraction it holds: both are read
    from Blender's own key records (`strip_records`). Keys that cannot be read there refuse the strip
    with what to do, never map it by guess."""
    keys = strip_records.retiming_keys(strip)
    if keys is None:
        raise UnsupportedStrip(f"strip {strip.name!r} is retimed in a way this Blender version does not let Face "
                               "Swap read: reset its retiming (Strip > Retiming > Reset) or render the retimed clip "
                               "to a file and swap faces on that")
    if any(k.flag & SPEED_TRANSITION for k in keys):
        raise UnsupportedStrip(
            f"strip {strip.name!r} has a smooth speed transition (retiming), which Face Swap does not "
            "follow frame-exactly: remove the transition (keep plain speed keys) or render the retimed clip "
            "to a file and swap faces on that")
    return list(keys)


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
    key = (path, round(movie_fps(strip), 6), int(compat.content_duration(strip)))
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
    `content_duration` is that only while the strip is neither retimed nor played at another rate."""
    trimmed = int(sum(compat.content_trim(strip)))
    if strip.type == "IMAGE":
        return len(strip.elements) - trimmed
    if strip.type == "MOVIE" and (_has_keys(strip) or abs(movie_fps(strip) - scene_fps(strip)) > 1e-3):
        total = movie_frame_count(strip)
        if total is not None:
            return total - trimmed
    return int(compat.content_duration(strip))


def _has_keys(strip) -> bool:
    return len(compat.retiming_keys(strip)) >= 2


def playback_rate(strip) -> float:
    """Media frames per timeline frame before retiming: 1, or media fps / scene fps for a movie strip
    added with "Adjust Playback Rate" (Blender's default when the clip's rate differs)."""
    fps = movie_fps(strip) if strip.type == "MOVIE" else 0.0
    if fps <= 0 or abs(fps - scene_fps(strip)) <= 1e-3:
        return 1.0
    adjusted = strip_records.plays_at_clip_rate(strip)
    if adjusted is None:
        raise UnsupportedStrip(f"strip {strip.name!r} comes from a {fps:g} fps clip in a {scene_fps(strip):g} fps "
                               "scene, and this Blender version does not let Face Swap read at which rate it plays: "
                               "set the scene's frame rate to the clip's, or convert the clip to the scene's rate")
    return fps / scene_fps(strip) if adjusted else 1.0


def timeline_length(strip) -> int:
    """Frames the strip's content spans on the timeline (after retiming and the playback rate), from its
    handles: Blender 4.2's `frame_duration` is the media's length whatever the retiming or rate."""
    return round_half_up(compat.right_handle(strip) + compat.handle_offsets(strip)[1] - compat.content_start(strip))


def _retiming_fraction(keys: list[strip_records.RetimingKey], index: float) -> float:
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
    duration: int  # timeline frames of the content
    length: int  # content frames
    span: int  # content frames a retiming fraction of 1 reaches past the first
    reverse: bool
    strobe: float
    rate: float
    keys: tuple[strip_records.RetimingKey, ...]

    @classmethod
    def of(cls, strip) -> "Timing":
        keys = tuple(retiming_keys(strip)) if strip.type != "META" else ()
        length = content_length(strip)
        return cls(compat.content_start(strip), timeline_length(strip), length, strip_records.retiming_span(length),
                   bool(getattr(strip, "use_reverse_frames", False)), max(1.0, getattr(strip, "strobe", 1.0)),
                   playback_rate(strip), keys)

    def index(self, t: int) -> int:
        """Content frame index (0-based) shown at timeline frame t."""
        end = self.start + self.duration - 1
        i = f32((end - t) if self.reverse else (t - self.start))
        i = f32(max(i, f32(0.0)) * f32(self.rate))
        if self.keys:
            i = f32(f32(_retiming_fraction(list(self.keys), float(i))) * f32(self.span))
        i = min(max(i, f32(0.0)), f32(self.length - 1))
        if self.strobe > 1.0:
            i = f32(i - f32(math.fmod(float(i), self.strobe)))
        return int(math.floor(f32(i + f32(0.5))))


def check_supported(strip) -> None:
    """Raises UnsupportedStrip when the strip's timing cannot be read (see `retiming_keys`,
    `playback_rate`)."""
    retiming_keys(strip)
    playback_rate(strip)


def visible_frames(strip) -> list[int]:
    """The strip's own timeline frames that reach the picture: its trimmed range, narrowed to the frames
    every enclosing meta strip shows of its content (a meta's handles, reversal and strobe)."""
    frames = range(compat.left_handle(strip), compat.right_handle(strip))
    meta = strip.parent_meta()
    if meta is None:
        return list(frames)
    timing = Timing.of(meta)
    if timing.length != _meta_content_length(meta):  # a retimed meta: its mapping is not readable
        return list(frames)
    shown = {int(compat.content_start(meta)) + timing.index(t) for t in visible_frames(meta)}
    return [t for t in frames if t in shown]


def _meta_content_length(meta) -> int:
    inner = compat.meta_contents(meta)
    if not len(inner):
        return int(compat.content_duration(meta))
    return (max(compat.right_handle(s) for s in inner) - min(compat.left_handle(s) for s in inner)
            - int(sum(compat.content_trim(meta))))


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
    offset = int(compat.content_trim(strip)[0])
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
        if not compat.left_handle(outer) <= frame < compat.right_handle(outer):
            return None
        frame = int(compat.content_start(outer)) + timing.index(frame)
    if not compat.left_handle(strip) <= frame < compat.right_handle(strip):
        return None
    return chain[-1][1].index(frame) + int(compat.content_trim(strip)[0])


def shown_media_frames(strip) -> dict[int, int]:
    """{timeline frame: media frame} for every frame of the strip that reaches the picture."""
    timing = Timing.of(strip)
    offset = int(compat.content_trim(strip)[0])
    return {t: timing.index(t) + offset for t in visible_frames(strip)}


def used_media_frames(strip, frames: range | None = None) -> set[int]:
    """The media frames the strip shows (the frames a job must cover); with `frames` (the sequencer's
    timeline frames, e.g. a render farm's chunk), only those it shows on them."""
    if frames is None:
        found = layout(strip)
        return set(found.used) if found is not None else set()
    chain = _timings_down_to(strip)
    outermost = chain[0][0]
    span = range(max(frames.start, compat.left_handle(outermost)), min(frames.stop, compat.right_handle(outermost)))
    return {m for m in (media_frame_at(strip, t, chain) for t in span) if m is not None}
