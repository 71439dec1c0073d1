"""Test footage made the way phones, cameras and recorders write it, with FFmpeg's own encoders (PyAV).

Every frame carries a pattern that tells it apart and stresses the colour conversion: saturated blocks
with edges on odd pixels (where chroma subsampling shows), gradients and a bar that moves one step a frame.
`frame_number` reads the bar back, so a test can tell which source frame a decoder showed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import av
import cv2
import numpy as np

BAR_STEP = 6  # pixels the bar moves down each frame
BAR_TOP = 4


# Pictures narrower or lower than this hold no pattern (its bar's lane alone is 14 pixels wide): noise instead.
TINY = 16


def pattern(index: int, width: int, height: int) -> np.ndarray:
    """RGB frame `index`: colour blocks, gradients, a checkerboard and a white bar at a height per frame; on a
    TINY picture, noise of its own per frame (every pixel unlike its neighbours, the colour conversion's worst
    case), which no bar tells apart."""
    if width < TINY or height < TINY:
        return np.random.default_rng(index).integers(0, 256, (height, width, 3), dtype=np.uint8)
    y, x = np.mgrid[0:height, 0:width]
    image = np.zeros((height, width, 3), np.uint8)
    image[..., 0] = (x * 255 // max(width - 1, 1)).astype(np.uint8)
    image[..., 1] = (y * 255 // max(height - 1, 1)).astype(np.uint8)
    image[..., 2] = (((x // 7 + y // 5) % 2) * 180 + 30).astype(np.uint8)
    quarter_w, quarter_h = width // 4 + 1, height // 4 + 1  # odd edges: between two chroma samples
    image[:quarter_h, :quarter_w] = (255, 0, 0)
    image[:quarter_h, quarter_w:2 * quarter_w] = (0, 255, 0)
    image[quarter_h:2 * quarter_h, :quarter_w] = (0, 0, 255)
    image[quarter_h:2 * quarter_h, quarter_w:2 * quarter_w] = (255, 0, 255)
    image[:, width - 14:] = 0  # the bar's lane: black, on whole chroma samples (even rows and columns)
    top = BAR_TOP + BAR_STEP * index
    image[top:top + 4, width - 12:width - 2] = 255
    return image


def frame_number(rgb: np.ndarray) -> int:
    """Which frame's bar an upright RGB (or BGR) picture shows."""
    column = rgb[:, -7].astype(int).mean(axis=-1)  # white only where the bar is
    rows = np.flatnonzero(column > 160)
    return int(round((rows[0] - BAR_TOP) / BAR_STEP)) if rows.size else -1


# Encoders whose threads outlive the clip they wrote: SVT-AV1's hang the processes that later tests of the run fork
# (tests/store/test_concurrency.py), so their clips are written by a child process, and its threads end with it.
WRITTEN_APART = frozenset({"libsvtav1"})


class ClipNotWritten(RuntimeError):
    """The child process that writes a clip of a WRITTEN_APART encoder failed."""


def write_clip(path: Path, **options) -> Path:
    """``write_here``, in a child process for the encoders of WRITTEN_APART (whose options must then be JSON)."""
    if options.get("codec") not in WRITTEN_APART:
        return write_here(path, **options)
    script = "import json, sys; import footage; footage.write_here(sys.argv[1], **json.loads(sys.argv[2]))"
    search_path = os.pathsep.join([str(Path(__file__).parent), *filter(None, sys.path)])  # Blender's site folder too
    environment = {**os.environ, "PYTHONPATH": search_path}
    done = subprocess.run([sys.executable, "-c", script, str(path), json.dumps(options)], env=environment,
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise ClipNotWritten(f"{sys.executable} could not write {path.name}: {done.stderr.strip()[-500:]}")
    return Path(path)


def write_here(path: Path, frames: int = 10, size: tuple[int, int] = (96, 96), codec: str = "libx264",
               pix_fmt: str = "yuv420p", rate: Fraction | int = 25, colorspace: int | None = None,
               color_range: int | None = None, primaries: int | None = None, transfer: int | None = None,
               rotation: int | None = None, pts: list[int] | None = None,
               time_base: Fraction | None = None, container_format: str | None = None,
               options: dict | None = None, codec_options: dict | None = None) -> Path:
    """Write a clip. `colorspace`: an AVColorSpace tag (1 BT.709, 5 BT.601, 9 BT.2020; also set as the
    primaries and transfer unless `primaries` and `transfer` say otherwise: 18 is HLG, 16 PQ, 4 gamma 2.2),
    `color_range` 1 limited or 2 full; `rotation`: a display matrix, degrees
    counter-clockwise (a phone held upright writes 90 or -90); `pts` with `time_base`: each frame's
    timestamp (a variable frame rate)."""
    width, height = size
    container = av.open(str(path), "w", format=container_format, options=options or {})
    stream = container.add_stream(codec, rate=rate, options=codec_options or {})
    stream.width, stream.height, stream.pix_fmt = width, height, pix_fmt
    context = stream.codec_context
    if time_base is not None:
        context.time_base = time_base
    if colorspace is not None:
        context.colorspace = context.color_primaries = context.color_trc = colorspace
    if primaries is not None:
        context.color_primaries = primaries
    if transfer is not None:
        context.color_trc = transfer
    if color_range is not None:
        context.color_range = color_range
    if rotation is not None:
        stream.set_display_rotation(rotation)
    for index in range(frames):
        frame = av.VideoFrame.from_ndarray(pattern(index, width, height), format="rgb24")
        frame = frame.reformat(format=pix_fmt, dst_colorspace=colorspace or 5,
                               dst_color_range=color_range or (2 if pix_fmt.startswith("yuvj") else 1))
        if pts is not None:
            frame.pts, frame.time_base = pts[index], context.time_base
        for packet in stream.encode(frame):
            container.mux(packet)
    for packet in stream.encode():
        container.mux(packet)
    container.close()
    return path


def write_phone_clip(path, portrait, pts=None, frames=6, rotation=-90):
    """The portrait upright at 240x320 (width x height), stored sideways as a phone does (320x240 coded,
    turned a quarter counter-clockwise) with the display matrix that turns it back."""
    upright = cv2.resize(portrait, (240, 320))
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 320, 240, "yuv420p"
        if pts is not None:
            stream.codec_context.time_base = Fraction(1, 1000)
        stream.set_display_rotation(rotation)
        for index in range(frames if pts is None else len(pts)):
            shifted = np.roll(upright, 2 * index, axis=1)  # every frame its own picture
            coded = cv2.rotate(shifted, cv2.ROTATE_90_COUNTERCLOCKWISE)[..., ::-1].copy()
            frame = av.VideoFrame.from_ndarray(coded, format="rgb24").reformat(format="yuv420p")
            if pts is not None:
                frame.pts, frame.time_base = pts[index], stream.codec_context.time_base
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    return path


# Timestamps of a recorder's variable frame rate (ms): 25 fps with a stall and a burst.
VFR_PTS_MS = [0, 40, 80, 200, 240, 400, 440, 480, 520, 560]
# What Blender's strip shows at each of its frames for VFR_PTS_MS at 25 fps (sample and hold).
VFR_SHOWN = [0, 1, 2, 2, 2, 3, 4, 4, 4, 4, 5, 6, 7, 8, 9]


def write_vfr_clip(path: Path, container_format: str | None = None, options: dict | None = None) -> Path:
    return write_clip(path, frames=len(VFR_PTS_MS), pts=VFR_PTS_MS, time_base=Fraction(1, 1000),
                      container_format=container_format, options=options)


# The corpus every Blender's renders check (tests/blender/test_blender_footage.py) and Windows decodes
# (tests/windows/test_windows_footage.py): {what it is: (file name, write_clip's options)}.
_VFR = {"frames": len(VFR_PTS_MS), "pts": VFR_PTS_MS, "time_base": Fraction(1, 1000)}
CORPUS = {
    # display matrices (a phone held upright writes -90 or 90)
    "rotate 90 (H.264)": ("rot90.mp4", {"rotation": -90}),
    "rotate 270 (H.264)": ("rot270.mp4", {"rotation": 90}),
    "rotate 180 (H.264)": ("rot180.mp4", {"rotation": 180}),
    # colour
    "untagged SD 4:2:0": ("sd.mp4", {}),
    "BT.601 tagged": ("bt601.mp4", {"colorspace": 5, "color_range": 1}),
    "BT.709 tagged": ("bt709.mp4", {"colorspace": 1, "color_range": 1, "size": (128, 72)}),
    "full range (yuvj420p)": ("full.mp4", {"pix_fmt": "yuvj420p"}),
    "4:2:2": ("422.mp4", {"pix_fmt": "yuv422p"}),
    "4:4:4": ("444.mp4", {"pix_fmt": "yuv444p", "colorspace": 1}),
    # timing
    "VFR MP4": ("vfr.mp4", _VFR),
    "VFR fragmented MP4": ("vfr_frag.mp4", {**_VFR, "options": {"movflags": "frag_keyframe+empty_moov"}}),
    "VFR MKV": ("vfr.mkv", {**_VFR, "container_format": "matroska"}),
    "VFR MOV": ("vfr.mov", {**_VFR, "container_format": "mov"}),
    "first timestamp 1 s, B-frames": ("late.mp4", {"frames": 12, "pts": [1000 + 40 * i for i in range(12)],
                                                   "time_base": Fraction(1, 1000),
                                                   "codec_options": {"bf": "3", "g": "5"}}),
    "29.97 fps, B-frames": ("ntsc.mp4", {"frames": 12, "rate": Fraction(30000, 1001), "codec_options": {"bf": "2"}}),
    "23.976 fps": ("film.mp4", {"frames": 12, "rate": Fraction(24000, 1001)}),
    "29.97 fps MKV (timestamps on half ticks)": ("ntsc.mkv", {"frames": 20, "size": (96, 128),
                                                              "rate": Fraction(30000, 1001),
                                                              "container_format": "matroska"}),
    "interlaced (top field first)": ("interlaced.mp4", {"codec_options": {"x264-params": "interlaced=1:tff=1"}}),
    # the formats editors use
    "MPEG-4 part 2": ("mpeg4.mp4", {"codec": "mpeg4"}),
    "MJPEG": ("mjpeg.avi", {"codec": "mjpeg", "pix_fmt": "yuvj422p"}),
    "HEVC": ("hevc.mp4", {"codec": "libx265"}),
    "VP9": ("vp9.webm", {"codec": "libvpx-vp9"}),
    "FFV1": ("ffv1.mkv", {"codec": "ffv1"}),
    "HEVC 10-bit BT.2020": ("hevc10.mp4", {"codec": "libx265", "pix_fmt": "yuv420p10le", "colorspace": 9}),
    "iPhone HDR: HEVC 10-bit BT.2020 HLG": ("hlg.mov", {"codec": "libx265", "pix_fmt": "yuv420p10le",
                                                        "colorspace": 9, "transfer": 18}),
    "HDR10: HEVC 10-bit BT.2020 PQ": ("pq.mp4", {"codec": "libx265", "pix_fmt": "yuv420p10le", "colorspace": 9,
                                                 "transfer": 16}),
    "BT.2020 SDR (BT.709 transfer)": ("rec2020.mp4", {"codec": "libx265", "pix_fmt": "yuv420p10le", "colorspace": 9,
                                                      "transfer": 1}),
    "BT.709 gamma 2.2": ("g22.mp4", {"colorspace": 1, "transfer": 4}),
    "ProRes 422": ("prores.mov", {"codec": "prores", "pix_fmt": "yuv422p10le"}),
    "ProRes 4444 with alpha": ("prores4444.mov", {"codec": "prores_ks", "pix_fmt": "yuva444p10le",
                                                  "codec_options": {"profile": "4444"}}),
    "DNxHR SQ": ("dnxhr.mov", {"codec": "dnxhd", "pix_fmt": "yuv422p", "size": (256, 144),
                               "codec_options": {"profile": "dnxhr_sq"}}),
    "AV1": ("av1.mkv", {"codec": "libsvtav1", "container_format": "matroska"}),
    # odd sizes (a recorded window; 4:2:0 takes swscale's uneven filter steps)
    "VP9, odd height": ("odd.webm", {"codec": "libvpx-vp9", "size": (98, 95)}),
    "FFV1, odd height": ("odd.mkv", {"codec": "ffv1", "size": (97, 95)}),
    "FFV1 10-bit, odd width and height": ("odd10.mkv", {"codec": "ffv1", "pix_fmt": "yuv420p10le", "size": (95, 97)}),
    # under 7 pixels a side: chroma planes of 2-3 samples, where swscale's filters are shorter (Blender renders
    # nothing under 4 pixels a side: its render resolution starts there)
    "FFV1, 5x5": ("tiny.mkv", {"codec": "ffv1", "size": (5, 5), "frames": 3}),
    "FFV1 10-bit, 6x6": ("tiny10.mkv", {"codec": "ffv1", "pix_fmt": "yuv420p10le", "size": (6, 6), "frames": 3}),
    "FFV1 4:4:0, 4x5": ("tiny440.mkv", {"codec": "ffv1", "pix_fmt": "yuv440p", "size": (4, 5), "frames": 3}),
}
