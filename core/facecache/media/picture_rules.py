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
  tagged HDR (BT.2020 with HLG or PQ) through its colour space, 4.5 and 4.2 as its code values; 5.2 also
  shows BT.709 tagged with gamma 2.2 through its g2.2 space;
- time: frame N of the strip shows the last frame whose timestamp is at or before
  round(N / (fps * time_base)) + start_time, fps being FFmpeg's guess (av_guess_frame_rate): a variable
  frame rate repeats or skips frames to follow the clock; the strip's length comes from the stream's
  duration.

A video's frames are keyed by the name of the rules whose picture they are (`key_name`), so a change of
rules never serves a record of another picture. Rules that differ from older ones only on some streams'
tags (5.2 from 5.0) key every other stream by the older rules' name: those pictures are the same, and so
Blender 5.0, 5.1 and 5.2 share their caches but for the clips 5.2 shows otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from facecache import choices
from facecache.media.display_spaces import GAMMA22_SPACE, HDR_SPACES


@dataclass(frozen=True)
class PictureRules:
    name: str  # one of choices.PICTURE_RULES
    rotate: bool  # apply the display matrix's quarter turns
    nearest_chroma: bool  # each pixel takes the chroma sample it lies in (else FFmpeg 6.1 swscale's bilinear)
    # the (primaries, transfer) tags shown through a colour space of Blender's view (display_spaces.py)
    display_spaces: frozenset[tuple[int, int]]
    # the older rules that show every stream alike but those tagged as one of their display spaces differ
    same_but_spaces_as: str | None = None

    def key_name(self, colour_tags: Callable[[], tuple[int, int]]) -> str:
        """The name a video's frames are keyed by under these rules: the older rules' where they show the
        stream alike. `colour_tags` gives its (primaries, transfer), asked for only where they matter."""
        if self.same_but_spaces_as is None:
            return self.name
        older = RULES[self.same_but_spaces_as]
        tags = colour_tags()
        shown_alike = (tags in self.display_spaces) == (tags in older.display_spaces)
        return older.key_name(lambda: tags) if shown_alike else self.name


RULES = {rules.name: rules for rules in (
    PictureRules("blender-5.2", rotate=True, nearest_chroma=True, display_spaces=HDR_SPACES | GAMMA22_SPACE,
                 same_but_spaces_as="blender-5"),
    PictureRules("blender-5", rotate=True, nearest_chroma=True, display_spaces=HDR_SPACES),
    PictureRules("blender-4.5", rotate=True, nearest_chroma=True, display_spaces=frozenset()),
    PictureRules("blender-4.2", rotate=False, nearest_chroma=False, display_spaces=frozenset()),
)}
assert set(RULES) == set(choices.names(choices.PICTURE_RULES))
assert all((rules.rotate, rules.nearest_chroma) == (RULES[rules.same_but_spaces_as].rotate,
                                                    RULES[rules.same_but_spaces_as].nearest_chroma)
           for rules in RULES.values() if rules.same_but_spaces_as)
NEWEST = RULES[choices.DEFAULTS["picture_rules"]]


def picture_rules(name: str) -> PictureRules:
    return RULES[name]
