"""The "sequencer" form's preview of a frame with faces: the frame with its overlay laid over it, opaque,
as JPEGs that Blender reads as the swapped strip's proxies at 100 % and 50 % (`output_layout.preview_path`).

Why. Blender decodes, copies and blends a full-frame RGBA overlay for about 10 ms a 1080p frame whatever it
holds, on top of the movie below it. An opaque picture in an alpha-over strip hides the strips below it
(the sequencer's render.cc stops at an opaque top strip), so the movie is not decoded at all. The preview
reads an image strip's proxy where one exists and a final render never does (proxies are used only at the
preview's proxy sizes), so renders keep the exact overlays and only the preview sees this lossy picture.

A preview is a band JPEG (`jpeg_bands`) whose comment names the frame's pixels and the rows its faces cover.
When a frame is made again (a new source, a blend change) and the file there is of the same frame, only the
bands its old and new faces cover are encoded; the rest are the old file's bytes, the same bytes a whole
encoding gives (the bench's one 1080p face: its bands' JPEG 1.7 ms where the whole picture's took 5.5).
"""

from __future__ import annotations

from typing import Sequence

import cv2
import numpy as np

from facecache.media.row_bands import merged_spans, uncovered_spans
from facecache.swap import jpeg_bands

# JPEG quality of the preview pictures: 90 keeps a face's detail (the editor judges the swap from the preview);
# 75 decoded 0.7 ms faster at 1080p, measured in `./dev bench-playback`.
QUALITY = 90
_NOTE = b"facecache preview 1 "  # then the picture's name and the faces' rows: "<picture> 120-380,400-610"


class Preview:
    """The preview JPEGs of one frame with its overlay's `patches` ((x, y, straight-alpha BGRA)) over it;
    `picture` names the frame's pixels (its movie, decoder and index: `SwapJob.picture_key`), or is None
    where no old file is to be spliced (the JPEGs then carry no note and are encoded whole)."""

    def __init__(self, frame: np.ndarray, patches: Sequence[tuple[int, int, np.ndarray]], picture: str | None):
        self.frame, self.patches, self.picture = frame, patches, picture
        self.face_rows = merged_spans((y, y + bgra.shape[0]) for _, y, bgra in patches)
        self.note = b"" if picture is None else (
            _NOTE + picture.encode() + b" " + b",".join(b"%d-%d" % span for span in self.face_rows))
        self._picture = np.empty_like(frame)  # the composited rows, each made once for every size
        self._made: list[tuple[int, int]] = []

    def jpeg(self, size: int, old: bytes | None = None) -> bytes:
        """The preview at proxy size `size`; `old`, the file there now: where it is this picture's, its
        bands that neither its faces nor the new ones cover are kept."""
        whole = (0, self.frame.shape[0])
        return self._spliced(size, old) or jpeg_bands.encode(at_size(self._rows(*whole), size), QUALITY, self.note)

    def _rows(self, top: int, bottom: int) -> np.ndarray:
        """Rows [top, bottom) of the frame with the patches over it."""
        for first, last in uncovered_spans(self._made, top, bottom):
            composited(self.frame, self.patches, (first, last), out=self._picture[first:last])
        self._made = merged_spans([*self._made, (top, bottom)])
        return self._picture[top:bottom]

    def _spliced(self, size: int, old: bytes | None) -> bytes | None:
        height, width = self.frame.shape[:2]
        factor = 100 // size
        if old is None or self.picture is None or factor * size != 100 or height % factor or width % factor:
            return None  # at a size that is not a whole division, a strip's averages are not the picture's
        before = jpeg_bands.parse(old)
        old_rows = None if before is None else self._face_rows_of(before.note)
        if old_rows is None or before.height != height // factor:
            return None
        rows = jpeg_bands.BAND_ROWS * factor  # of the frame, in a band at this size
        strips = []
        bands = merged_spans((top // rows, -(-bottom // rows)) for top, bottom in [*old_rows, *self.face_rows])
        for first, last in bands:
            top, bottom = first * rows, min(last * rows, height)
            strip = at_size(self._rows(top, bottom), size)
            strips.append((first, jpeg_bands.encode(strip, QUALITY, b"")))
        return jpeg_bands.spliced(before, strips, self.note)

    def _face_rows_of(self, note: bytes) -> list[tuple[int, int]] | None:
        """The faces' rows an old preview's `note` names, where it is of this picture; else None."""
        prefix = _NOTE + self.picture.encode() + b" "
        if not note.startswith(prefix):
            return None
        try:
            spans = [tuple(int(row) for row in span.split(b"-")) for span in note[len(prefix):].split(b",") if span]
        except ValueError:
            return None
        if not all(len(span) == 2 and 0 <= span[0] < span[1] <= self.frame.shape[0] for span in spans):
            return None
        return spans


def composited(frame: np.ndarray, patches: Sequence[tuple[int, int, np.ndarray]],
               rows: tuple[int, int] | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """`frame` (BGR) with the overlay's `patches` ((x, y, straight-alpha BGRA), not overlapping) laid over it,
    as alpha-over shows them; a new array (or `out`), the frame is left as it is. `rows` (top, bottom): those
    alone."""
    top, bottom = rows or (0, frame.shape[0])
    picture = np.empty_like(frame[top:bottom]) if out is None else out
    picture[...] = frame[top:bottom]
    for x, y, bgra in patches:
        first, last = max(y, top), min(y + bgra.shape[0], bottom)
        if first >= last:
            continue
        part = bgra[first - y:last - y]
        region = picture[first - top:last - top, x:x + part.shape[1]]
        # region + (colour - region) x alpha / 255, rounded: (region (255 - alpha) + colour alpha) / 255 in
        # exact 16-bit products, rounded once (never a tie: 255 is odd); OpenCV's passes, not numpy's loops of 3
        alpha = cv2.cvtColor(np.ascontiguousarray(part[..., 3]), cv2.COLOR_GRAY2BGR)
        mixed = cv2.add(cv2.multiply(region, cv2.bitwise_not(alpha), dtype=cv2.CV_16U),
                        cv2.multiply(cv2.cvtColor(part, cv2.COLOR_BGRA2BGR), alpha, dtype=cv2.CV_16U))
        region[...] = cv2.convertScaleAbs(mixed, alpha=1 / 255)  # only the patches: six faces are a tenth of a frame
    return picture


def at_size(picture: np.ndarray, size: int) -> np.ndarray:
    """`picture` at the preview's proxy size `size` (percent), as large as Blender makes a strip's proxy there
    (proxy.cc: size x the image's side / 100, rounded down); averaged, where Blender's own builder samples."""
    if size == 100:
        return picture
    height, width = picture.shape[:2]
    return cv2.resize(picture, (max(1, width * size // 100), max(1, height * size // 100)),
                      interpolation=cv2.INTER_AREA)
