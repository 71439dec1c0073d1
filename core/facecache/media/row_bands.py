"""A picture converted in bands of whole rows, one per core: numpy and OpenCV release the GIL while they work,
so two threads convert a 1080p frame in about half the time (the conversions of yuv_to_bgr and swscale61).
And spans (of rows, or of a row's bytes) merged where they touch, or what of one span others leave."""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Callable, Sequence

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


def uncovered_spans(spans: Sequence[tuple[int, int]], start: int, stop: int) -> list[tuple[int, int]]:
    """The parts of [start, stop) outside `spans` (sorted and merged, as `merged_spans` gives them)."""
    parts = []
    for first, last in spans:
        if first > start:
            parts.append((start, min(first, stop)))
        start = max(start, last)
        if start >= stop:
            return parts
    return [*parts, (start, stop)]
