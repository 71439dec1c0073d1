"""A picture converted in bands of whole rows, one per core: numpy and OpenCV release the GIL while they work,
so two threads convert a 1080p frame in about half the time (the conversions of yuv_to_bgr and swscale61).
And spans (of rows, or of a row's bytes) merged where they touch."""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Callable

BANDS = 2  # the machines the engine runs on have 2 cores or more


def in_bands(convert: Callable[[int, int], None], height: int, row_step: int, pool: Executor | None) -> None:
    """Call `convert(first, last)` on rows [first, last) covering `height` rows, each band starting at a
    multiple of `row_step`: one band without a `pool`, else BANDS of them on its threads."""
    bands = 1 if pool is None else BANDS
    edges = [min(height, -(-height * band // bands // row_step) * row_step) for band in range(bands + 1)]
    spans = [(a, b) for a, b in zip(edges, edges[1:]) if b > a]
    if len(spans) == 1:
        convert(*spans[0])
        return
    for done in [pool.submit(convert, *span) for span in spans]:
        done.result()


def merged_spans(spans) -> list[tuple[int, int]]:
    """(start, stop) spans sorted, those that overlap or touch made one."""
    merged: list[tuple[int, int]] = []
    for start, stop in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], stop))
        else:
            merged.append((start, stop))
    return merged
