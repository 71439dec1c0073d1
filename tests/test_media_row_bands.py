"""Spans of rows: merged where they touch, and what of a span others leave (`media.row_bands`)."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from facecache.media.row_bands import in_bands, merged_spans, uncovered_spans


def test_spans_that_overlap_or_touch_are_merged_and_sorted():
    assert merged_spans([(50, 60), (0, 10), (10, 20), (15, 18), (40, 51)]) == [(0, 20), (40, 60)]
    assert merged_spans([]) == []


@pytest.mark.parametrize("spans, start, stop, parts", [
    ([], 0, 10, [(0, 10)]),
    ([(0, 10)], 0, 10, []),
    ([(2, 4), (6, 8)], 0, 10, [(0, 2), (4, 6), (8, 10)]),
    ([(2, 4), (6, 8)], 3, 7, [(4, 6)]),
    ([(0, 3), (20, 30)], 5, 15, [(5, 15)]),
    ([(12, 14)], 0, 10, [(0, 10)]),
])
def test_the_parts_of_a_span_outside_others(spans, start, stop, parts):
    assert uncovered_spans(spans, start, stop) == parts
    covered = set().union(*(range(*span) for span in spans))
    assert set().union(*(range(*part) for part in parts)) == set(range(start, stop)) - covered


def test_bands_cover_every_row_once_each_starting_on_a_step():
    seen = []
    with ThreadPoolExecutor(2) as pool:
        in_bands(lambda first, last: seen.append((first, last)), 1080, 16, pool)
    assert sorted(seen) == [(0, 544), (544, 1080)]
    seen.clear()
    in_bands(lambda first, last: seen.append((first, last)), 1080, 16, None)
    assert seen == [(0, 1080)]
