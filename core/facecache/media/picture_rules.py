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
- 8-bit 4:2:2 in 4.2's Windows build: FFmpeg 6.1's swscale there (built with MSVC) converts it with its plain C
  converter, which takes rows in pairs, so each odd row shows the chroma of the even row above it; Linux's and
  macOS's 4.2 read each row's own chroma (docs/platforms-windows.md);
- time: frame N of the strip shows the last frame whose timestamp is at or before
  round(N / (fps * time_base)) + start_time, fps being FFmpeg's guess (av_guess_frame_rate): a variable
  frame rate repeats or skips frames to follow the clock; the strip's length comes from the stream's
  duration.

A video's frames are keyed by the name of the rules whose picture they are (`key_name`), so a change of
rules never serves a record of another picture. Rules that differ from others only on some streams (5.2
from 5.0 on some colour tags, 4.2 on Windows from 4.2 on 8-bit 4:2:2) key every other stream by the other
rules' name: those pictures are the same, and so Blender 5.0, 5.1 and 5.2 share their caches, and a Linux
render node and a Windows workstation on 4.2, but for the clips shown otherwise. What decides it is read
from the stream's header (`StreamTags`), never decoded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from facecache import choices
from facecache.media.display_spaces import GAMMA22_SPACE, HDR_SPACES


# The 8-bit 4:2:2 formats FFmpeg 6.1's swscale converts to RGB with its unscaled YUV converter, at even heights
# (yuvj422p as yuv422p in the full range); with alpha, beyond 8 bits or at an odd height it takes its general path.
PAIRED_ROWS_FORMATS = frozenset({"yuv422p", "yuvj422p"})


def converted_in_row_pairs(pixel_format: str, height: int) -> bool:
    """Whether FFmpeg 6.1's unscaled converter takes frames of this format and height: the only ones that
    rules with `paired_rows` show otherwise."""
    return pixel_format in PAIRED_ROWS_FORMATS and height % 2 == 0


@dataclass(frozen=True)
class StreamTags:
    """What of a video stream's header picks the rules' key for it: its colour tags, pixel format and height,
    and whether its chroma steps unevenly (`uneven_chroma`)."""
    primaries: int  # AVColorPrimaries
    transfer: int  # AVColorTransferCharacteristic
    pixel_format: str  # FFmpeg's name, as the decoder will give the frames ("yuv422p")
    height: int  # coded, as the decoder will give the frames
    # a chroma-subsampled side of an odd size (4:2:0 at 97x95): swscale's filters step unevenly across it
    uneven_chroma: bool = False


@dataclass(frozen=True)
class PictureRules:
    name: str  # one of choices.PICTURE_RULES
    rotate: bool  # apply the display matrix's quarter turns
    nearest_chroma: bool  # each pixel takes the chroma sample it lies in (else FFmpeg 6.1 swscale's bilinear)
    # the (primaries, transfer) tags shown through a colour space of Blender's view (display_spaces.py)
    display_spaces: frozenset[tuple[int, int]]
    # 8-bit 4:2:2 (`converted_in_row_pairs`) converted in pairs of rows, the odd row with the even row's chroma
    paired_rows: bool = False
    # the rules that show every stream alike but those that `shown_alike` tells apart (by their display spaces
    # and paired rows, the only fields in which two such rules may differ)
    same_but_some_as: str | None = None

    def key_name(self, stream_tags: Callable[[], StreamTags]) -> str:
        """The name a video's frames are keyed by under these rules: the other rules' where they show the
        stream alike. `stream_tags` gives its header's tags, asked for only where they matter."""
        if self.same_but_some_as is None:
            return self.name
        other = RULES[self.same_but_some_as]
        tags = stream_tags()
        return other.key_name(lambda: tags) if self.shown_alike(other, tags) else self.name

    def shown_alike(self, other: PictureRules, tags: StreamTags) -> bool:
        """Whether `other` (rotating and sampling chroma as these do) shows a stream with `tags` as these do."""
        spaces = (tags.primaries, tags.transfer)
        return ((spaces in self.display_spaces) == (spaces in other.display_spaces)
                and (self.paired_rows == other.paired_rows
                     or not converted_in_row_pairs(tags.pixel_format, tags.height)))


RULES = {rules.name: rules for rules in (
    PictureRules("blender-5.2", rotate=True, nearest_chroma=True, display_spaces=HDR_SPACES | GAMMA22_SPACE,
                 same_but_some_as="blender-5"),
    PictureRules("blender-5", rotate=True, nearest_chroma=True, display_spaces=HDR_SPACES),
    PictureRules("blender-4.5", rotate=True, nearest_chroma=True, display_spaces=frozenset()),
    PictureRules("blender-4.2-windows", rotate=False, nearest_chroma=False, display_spaces=frozenset(),
                 paired_rows=True, same_but_some_as="blender-4.2"),
    PictureRules("blender-4.2", rotate=False, nearest_chroma=False, display_spaces=frozenset()),
)}
assert set(RULES) == set(choices.names(choices.PICTURE_RULES))
assert all((rules.rotate, rules.nearest_chroma) == (RULES[rules.same_but_some_as].rotate,
                                                    RULES[rules.same_but_some_as].nearest_chroma)
           for rules in RULES.values() if rules.same_but_some_as)
assert not any(rules.paired_rows and rules.nearest_chroma for rules in RULES.values())  # 6.1's converter alone
NEWEST = RULES[choices.DEFAULTS["picture_rules"]]


def picture_rules(name: str) -> PictureRules:
    return RULES[name]
