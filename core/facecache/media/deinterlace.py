"""A movie strip's Deinterlace option (`use_deinterlace`): the picture Blender shows when an editor sets it.

Blender's reader (movie_read.cc, `ffmpeg_postprocess`; 4.2's anim_movie.cc alike) filters the decoded frame
before its colour conversion, with FFmpeg's old deinterlacer (`ffmpeg_deinterlace`, from FFmpeg 2.6's
`avpicture_deinterlace`; the facts, not the code):
- for 8-bit yuv420p, yuvj420p, yuv422p, yuvj422p, yuv444p, yuv411p and gray8 whose width and height are
  multiples of 4, each plane (at its own size) keeps its even rows (the top field), and each odd row n becomes
  (-r[n-2] + 4 r[n-1] + 2 r[n] + 4 r[n+1] - r[n+2] + 4) >> 3, clipped to 0-255, rows beyond the plane's
  edges taken as its first or last row (`field_filtered`);
- for any other frame, Blender converts the woven picture and then runs `IMB_filtery` on it: down each
  column of the bottom-up image buffer, each value becomes (above + 2 x own + below + carry) >> 2, the carry
  being the remainder (& 3) of the sum before it (2 to start), the first and last rows counting themselves
  for the missing neighbour (`rows_filtered`). IMB_filtery skips its buffer's first channel unless the
  buffer has alpha (meant for the alpha, it lands on red): so red is left woven but where the pixel format
  has alpha (measured on bpy 5.0.1: with red filtered too, 65/255 off its render; without, 1/255). On a float
  picture (over 8 bits) Blender filters the floats with no rounding; the engine filters the 8-bit picture,
  which differs by at most a step of rounding.
The field filter is handed the frame Blender decoded last, even where its clock shows the one before it (a
variable frame rate): `movie.Movie.picture` does the same. Image strips have the option too: IMB_filtery on
the image (`reader.MediaReader`).
"""

from __future__ import annotations

import numpy as np

# The pixel formats FFmpeg's old deinterlacer takes: name -> (horizontal, vertical) chroma subsampling;
# gray8 has no chroma planes.
FIELD_FILTER_FORMATS = {"yuv420p": (2, 2), "yuvj420p": (2, 2), "yuv422p": (2, 1), "yuvj422p": (2, 1),
                        "yuv444p": (1, 1), "yuv411p": (4, 1), "gray8": None}


def filters_fields(format_name: str, width: int, height: int) -> bool:
    """Whether Blender deinterlaces a frame of this format and size before converting it (else after)."""
    return format_name in FIELD_FILTER_FORMATS and width % 4 == 0 and height % 4 == 0


def plane_sizes(format_name: str, width: int, height: int) -> list[tuple[int, int]]:
    """(width, height) of each plane the field filter runs on."""
    subsampling = FIELD_FILTER_FORMATS[format_name]
    if subsampling is None:
        return [(width, height)]
    step_x, step_y = subsampling
    return [(width, height)] + [(width // step_x, height // step_y)] * 2


def field_filtered(plane: np.ndarray) -> np.ndarray:
    """An 8-bit plane (rows, columns; an even number of rows) with its odd rows rebuilt from their
    neighbours, the even ones kept."""
    rows = plane.shape[0]
    n = np.arange(1, rows, 2)
    taps = [plane[np.clip(n + offset, 0, rows - 1)].astype(np.int16) for offset in (-2, -1, 0, 1, 2)]
    total = -taps[0] + 4 * taps[1] + 2 * taps[2] + 4 * taps[3] - taps[4] + 4  # |total| < 2^13: int16 holds it
    out = plane.copy()
    out[1::2] = np.clip(total >> 3, 0, 255)
    return out


def rows_filtered(bgr: np.ndarray, red: bool) -> np.ndarray:
    """An 8-bit BGR picture (rows top-down) as IMB_filtery leaves it: blue, green and, with `red` (a pixel
    format with alpha), red filtered down its columns from the bottom row up (Blender's buffer is bottom-up),
    the rounding remainder carried."""
    filtered = bgr.copy()
    channels = slice(0, 3 if red else 2)
    filtered[..., channels] = _columns_filtered(bgr[..., channels])
    return filtered


def _columns_filtered(picture: np.ndarray) -> np.ndarray:
    source = picture[::-1]  # Blender's buffer order: the bottom row first
    if source.shape[0] < 2:
        return picture.copy()
    sums = source.astype(np.uint16) * np.uint16(2)  # at most 4 x 255 + 3: uint16 holds every sum
    sums[1:] += source[:-1]
    sums[:-1] += source[1:]
    sums[0] += source[0]  # the first and last rows count themselves for the missing neighbour
    sums[-1] += source[-1]
    carry = np.full(source.shape[1:], 2, np.uint16)
    for row in sums:  # the carry runs down each column in turn
        row += carry
        np.bitwise_and(row, 3, out=carry)
    return (sums >> 2)[::-1].astype(np.uint8)
