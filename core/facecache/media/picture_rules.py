"""How a Blender version turns a movie's stream into the picture it shows: the rules the engine decodes by.

What the engine analyses and composites must be what Blender shows at that frame, and Blender's movie
reader changed between versions (its sources: `source/blender/imbuf/intern/anim_movie.cc` in 4.2,
`imbuf/movie/intern/movie_read.cc` from 4.4 on; the facts are gathered in shared/notes/blender-movie-facts.md
and checked against bpy's own renders by tests/blender/test_blender_footage.py):
- rotation: 4.4 and later turn the picture by the stream's display matrix (90, 180 or 270 degrees; a mirror is
  ignored); 4.2 shows the coded picture;
- colour: YUV to RGB by the matrix the stream is tagged with (BT.601 when untagged, whatever the height),
  in the range it is tagged with; 4.4 and later take each pixel's chroma from its own sample (swscale's SWS_POINT),
  4.2 interpolates it (SWS_BILINEAR, as FFmpeg 6.1's swscale does: swscale61.py); 5.0 and later show a clip
  tagged HDR (BT.2020 with HLG or PQ) through its colour space, 4.5 and 4.2 as its code values;
- time: frame N of the strip shows the last frame whose timestamp is at or before
  round(N / (fps * time_base)) + start_time, fps being FFmpeg's guess (av_guess_frame_rate): a variable
  frame rate repeats or skips frames to follow the clock; the strip's length comes from the stream's
  duration.

The rules' name is part of every video frame's cache key, so a change of rules never serves a record
of another picture.
"""

from __future__ import annotations

from dataclasses import dataclass

from facecache import choices


@dataclass(frozen=True)
class PictureRules:
    name: str  # one of choices.PICTURE_RULES
    rotate: bool  # apply the display matrix's quarter turns
    nearest_chroma: bool  # each pixel takes the chroma sample it lies in (else FFmpeg 6.1 swscale's bilinear)
    display_spaces: bool  # HDR and other tagged colour spaces shown through Blender's view (display_spaces.py)


RULES = {rules.name: rules for rules in (
    PictureRules("blender-5", rotate=True, nearest_chroma=True, display_spaces=True),
    PictureRules("blender-4.5", rotate=True, nearest_chroma=True, display_spaces=False),
    PictureRules("blender-4.2", rotate=False, nearest_chroma=False, display_spaces=False),
)}
assert set(RULES) == set(choices.names(choices.PICTURE_RULES))
NEWEST = RULES[choices.DEFAULTS["picture_rules"]]


def picture_rules(name: str) -> PictureRules:
    return RULES[name]
