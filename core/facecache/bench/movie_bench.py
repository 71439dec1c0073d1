"""`facecache bench movie`: what a movie `--out` costs per frame on top of the swap job.

A movie is made of the job's whole composited frames (`jobs/movie_job.py`): each is written as a PNG by the
job, read back, converted RGB->YUV with the source's matrix and encoded. This suite times the steps after
the job, per frame: reading the PNG back (`png_read_ms`, OpenCV), and converting plus encoding plus muxing
into each format (`<codec>_ms_per_frame`, wall time over the whole movie, its finish included; `_cpu_` the
CPU time of every thread, which the encoders spread over the cores). The PNG's writing, the job's share,
is timed too (`png_write_ms`) for the whole picture.

Set-up (not timed): `frames` synthetic pictures of `size`, a camera-like scene (smooth gradients and soft
texture, panning 6 pixels a frame, with a little fresh sensor noise each frame): neither as easy as a still
nor as hard as pure noise for the encoders. Tagged BT.709, limited range, 25 fps, no audio (a copied audio
stream costs next to nothing; re-encoding one costs what the AAC encoder does).
"""

from __future__ import annotations

import tempfile
import time
from fractions import Fraction
from pathlib import Path

import cv2
import numpy as np

from facecache.bench.timing import median_ms
from facecache.media.movie_out import MOVIE_FORMATS, write_movie
from facecache.media.movie_source import ColourTags, MovieSource

DEFAULT_FRAMES = 48
_POOL = 12  # distinct pictures, cycled: each differs from the ones an encoder refers to
_TIME_BASE = Fraction(1, 12800)  # what FFmpeg's MP4 muxer gives 25 fps
_RATE = Fraction(25)


def run(frames: int = DEFAULT_FRAMES, size: tuple[int, int] = (1920, 1080), say=None) -> dict:
    say = say or (lambda message: None)
    pictures = _pictures(size)
    step = int(1 / (_RATE * _TIME_BASE))
    result = {"frames": frames, "size": f"{size[0]}x{size[1]}"}
    with tempfile.TemporaryDirectory(prefix="facecache-bench-movie-") as tmp:
        source = MovieSource(Path(tmp) / "none.mp4", _TIME_BASE, _RATE, tuple(range(0, frames * step, step)), step,
                             ColourTags(1, 1, 1, 1), None, None)
        for suffix in (".mp4", ".mov"):
            say(f"encoding {frames} frames into {suffix}")
            wall, cpu = time.perf_counter(), time.process_time()
            report = write_movie(Path(tmp) / f"bench{suffix}", (pictures[i % _POOL] for i in range(frames)), source,
                                 range(frames))
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            name = "h264" if MOVIE_FORMATS[suffix].codec_label == "H.264" else "prores"
            result.update({f"{name}_encoder": report.codec, f"{name}_ms_per_frame": wall / frames * 1000,
                           f"{name}_cpu_ms_per_frame": cpu / frames * 1000,
                           f"{name}_bytes_per_frame": report.bytes // frames})
    encoded = cv2.imencode(".png", pictures[0])[1]
    result["png_write_ms"] = median_ms(lambda: cv2.imencode(".png", pictures[0]), 5)
    result["png_read_ms"] = median_ms(lambda: cv2.imdecode(encoded, cv2.IMREAD_COLOR), 5)
    result["png_bytes"] = int(encoded.size)
    return result


def _pictures(size: tuple[int, int]) -> list[np.ndarray]:
    width, height = size
    rng = np.random.default_rng(3)
    wide = width + 6 * _POOL
    yy, xx = np.mgrid[0:height, 0:wide].astype(np.float32)
    scene = np.stack([96 + 80 * np.sin(xx / 310), 110 + 70 * np.cos(yy / 230), 120 + 60 * np.sin((xx + yy) / 410)], -1)
    texture = cv2.GaussianBlur(rng.normal(0, 40, (height, wide, 3)).astype(np.float32), (0, 0), 3)
    scene = scene + texture
    pictures = []
    for i in range(_POOL):
        frame = scene[:, 6 * i:6 * i + width] + rng.normal(0, 2, (height, width, 3)).astype(np.float32)
        pictures.append(np.clip(frame, 0, 255).astype(np.uint8))
    return pictures
