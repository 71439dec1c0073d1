"""Timeline frame <-> media frame of a movie strip: the ONE place that knows Blender's timing properties.

For a strip without retiming, reversal or strobe (checked in Blender 5.0 against OpenCV-decoded frames):
    media = t - frame_start + animation_offset_start
Retimed, reversed and strobed strips are refused with a message (`UnsupportedStrip`).
"""

from __future__ import annotations

from . import compat


class UnsupportedStrip(Exception):
    """A strip whose timing this add-on does not map; the message says what to change."""


def check_supported(strip) -> None:
    if getattr(strip, "use_reverse_frames", False):
        raise UnsupportedStrip(f"strip {strip.name!r} plays in reverse: face swap does not support reversed "
                               "strips; untick Reverse Frames (or render the reversed clip to a file first)")
    if getattr(strip, "strobe", 1.0) > 1.0:
        raise UnsupportedStrip(f"strip {strip.name!r} is strobed: set Strobe to 1 to swap faces on it")
    keys = compat.retiming_keys(strip)
    if len(keys) > 2:
        raise UnsupportedStrip(f"strip {strip.name!r} is retimed: face swap does not support retimed strips; "
                               "reset its retiming (Strip > Retiming > Reset) to swap faces on it")


def media_frame(strip, timeline_frame: int) -> int:
    return int(round(timeline_frame - strip.frame_start + strip.animation_offset_start))


def timeline_frame(strip, media_index: int) -> int:
    return int(round(media_index + strip.frame_start - strip.animation_offset_start))


def media_length(strip) -> int:
    """Frames in the strip's media file."""
    return int(strip.frame_duration + strip.animation_offset_start + strip.animation_offset_end)


def used_media_range(strip, frames: range | None = None) -> range:
    """The media frames the strip shows (its trimmed, visible part), clipped to the file's frames;
    with `frames` (timeline frames), only those it shows on them."""
    check_supported(strip)
    first = media_frame(strip, strip.frame_final_start)
    stop = media_frame(strip, strip.frame_final_end)
    if frames is not None:
        first, stop = max(first, media_frame(strip, frames.start)), min(stop, media_frame(strip, frames.stop))
    content_first = int(strip.animation_offset_start)
    content_stop = content_first + int(strip.frame_duration)
    return range(max(first, content_first), max(min(stop, content_stop), max(first, content_first)))
