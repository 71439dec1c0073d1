"""Which frames of a video target already have an output, told from the output folder alone (the panel's
coverage bar and the engine's listing read it): no cache read, no decoding."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from facecache import output_layout
from facecache.jobs.swap_job import FACELESS_SIZE
from facecache.media.image_size import UnknownImage, image_size

FACELESS_MAX_BYTES = 4096  # such an output is a stamped one-pixel PNG, under 200 bytes: larger files are not opened


def existing_outputs(target: str | Path, out_dir: str | Path, frames: range) -> list[int]:
    """Those of `frames` whose output file exists in a video target's folder in `out_dir`
    (`output_layout.own_frames`: none when the folder is another clip's)."""
    return sorted(index for index in output_layout.own_frames(out_dir, target) if index in frames)


def faceless_outputs(target: str | Path, out_dir: str | Path, frames: Iterable[int]) -> list[int]:
    """Those of `frames` whose output of a video target was written without a face in the "sequencer"
    form (one transparent pixel), told by their size and header: only files of a few bytes are opened,
    and of those only the header is read; a frame without an output is not one."""
    folder = output_layout.output_folder(out_dir, target, False)
    found = []
    for index in frames:
        path = os.path.join(folder, output_layout.frame_name(index))
        try:
            if os.stat(path).st_size > FACELESS_MAX_BYTES:
                continue
            with open(path, "rb") as handle:
                if image_size(handle) == FACELESS_SIZE:
                    found.append(index)
        except (OSError, UnknownImage):
            continue  # gone since the listing, or not a PNG: not a faceless output
    return found
