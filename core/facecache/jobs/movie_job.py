"""A finished movie: the swap job's whole composited frames, made through the cache like any other output,
then encoded with the source's timing, colour tags and audio (`facecache.media.movie_out`).

The frames go into a hidden folder beside the movie (`.<movie name>.frames-<random>`, the swap job's "full"
form: each frame whole, faces pasted back), which is deleted once the movie is written, whether or not it
was: at about 3 MB a 1080p frame it is no place to keep a clip. What makes a second run cheap is the cache,
not that folder: a new blend setting recomposites from the cached analyses and swapped faces and encodes
again, running no model; a new source face runs only the swapper.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import cv2
import numpy as np

from facecache import output_layout
from facecache.analysis.analyzer import checked_range
from facecache.errors import os_fault
from facecache.jobs.swap_job import SwapJob, SwapReport, check_outside_cache
from facecache.media.movie_out import (MovieFormat, MovieOutError, MovieReport, check_movie_path, checked_quality,
                                       encoder_name, movie_format, write_movie)
from facecache.media.movie_source import MovieSource, probe_movie
from facecache.media.picture_rules import NEWEST, PictureRules
from facecache.media.reader import IMAGE_SUFFIXES, MediaReader
from facecache.permissions import permissions_for

MOVIE_FORM = "full"  # the swap job's output form a movie is made of
_PREFETCH = 3  # frames read ahead of the encoder (a PNG's decode overlaps the previous frame's encode)


@dataclass(frozen=True)
class MoviePlan:
    """A movie output, checked before any work: where, which format and quality, which frames of what."""

    movie: Path
    fmt: MovieFormat
    quality: int
    frames: range
    source: MovieSource
    deinterlace: bool = False  # the target's picture as a strip with Blender's Deinterlace option shows it


def plan_movie(target: Path, movie: Path, frames: range | None, quality: int | None,
               rules: PictureRules = NEWEST, deinterlace: bool = False) -> MoviePlan:
    """Every check a movie output needs, before a model runs: a supported suffix in an existing folder, a video
    target (not a still, not a folder of frames) that FFmpeg reads, a quality in the codec's range and an
    encoder for it. Errors are one line saying what to do."""
    fmt = movie_format(movie)
    if fmt is None:
        raise MovieOutError(f"{movie} does not name a movie file: end it in .mp4, .mkv or .mov")
    check_movie_path(movie)
    quality = checked_quality(fmt, quality)
    encoder_name(fmt)
    if target.is_dir():
        raise _not_a_video(target, "a folder of frames, which has no frame rate or audio")
    if target.suffix.lower() in IMAGE_SUFFIXES:
        raise _not_a_video(target, "a still image")  # known by its name: nothing decoded
    with MediaReader(target, rules) as reader:
        count, still = reader.info.frame_count, reader.info.is_still
    if still:
        raise _not_a_video(target, "a still image")
    frames = checked_range(frames, count, target)
    return MoviePlan(movie, fmt, quality, frames, probe_movie(target, count, rules), deinterlace)


def _not_a_video(target: Path, what: str) -> MovieOutError:
    return MovieOutError(f"{target} is {what}: a movie --out needs a video target; give --out a folder to get the "
                         "swapped pictures as images")


def make_movie(job: SwapJob, target: Path, plan: MoviePlan, cache_root: Path,
               progress: Callable | None = None,
               encode_progress: Callable[[int, int], None] | None = None) -> tuple[SwapReport, MovieReport | None]:
    """Run `job` (output form "full") over the plan's frames into a hidden folder beside the movie, then
    encode them into it. No movie (None) when the job was cancelled; the frames' work is in the cache."""
    if job.output_form != MOVIE_FORM:
        raise ValueError(f"a movie is made of the {MOVIE_FORM!r} output form, not {job.output_form!r}")
    check_outside_cache(plan.movie.parent, cache_root)
    try:
        hidden = Path(tempfile.mkdtemp(prefix=f".{plan.movie.name}.frames-", dir=plan.movie.parent))  # mode 0700
    except OSError as exc:
        raise os_fault(exc, "write the movie in", plan.movie.parent, hint="choose another movie path (--out)",
                       name_file=False) from None
    try:
        report = job.run(target, hidden, plan.frames, progress=progress, deinterlace=plan.deinterlace)
        if report.cancelled:
            return report, None
        folder = Path(output_layout.output_folder(hidden, target, still=False))
        try:
            movie = write_movie(plan.movie, _read_frames(folder, plan.frames), plan.source, plan.frames,
                                plan.quality, mode=permissions_for(plan.movie).file_mode, progress=encode_progress)
        except OSError as exc:
            raise os_fault(exc, "write the movie", plan.movie, hint="choose another movie path (--out)") from None
        return report, movie
    finally:
        shutil.rmtree(hidden, ignore_errors=True)


def _read_frames(folder: Path, indices: range) -> Iterator[np.ndarray]:
    """The composited frames in order, each PNG decoded on a helper thread a few frames ahead."""
    with ThreadPoolExecutor(1, thread_name_prefix="facecache-movie-read") as pool:
        ahead: deque = deque()
        pending = iter(indices)
        for index in pending:
            ahead.append(pool.submit(_read_frame, folder / output_layout.frame_name(index)))
            if len(ahead) >= _PREFETCH:
                break
        while ahead:
            frame = ahead.popleft().result()
            following = next(pending, None)
            if following is not None:
                ahead.append(pool.submit(_read_frame, folder / output_layout.frame_name(following)))
            yield frame


def _read_frame(path: Path) -> np.ndarray:
    data = np.fromfile(path, np.uint8)  # np.fromfile + imdecode: non-ASCII paths on Windows too
    image = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
    if image is None:
        raise MovieOutError(f"the composited frame {path} could not be read back: run the same command again")
    return image
