"""The smoke part of the GUI suite (`./dev test` runs it): a project with a swapped shot opens in Blender's
window; the sidebar's Face Swap tab shows its panels, read from the screenshot with tesseract; the coverage bar
under the shot shows, in its colours, exactly the frames the cache holds."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from gui_checks import cache_coverage, has_colour, words

pytestmark = [pytest.mark.gui_smoke, pytest.mark.index]


def test_panel_and_coverage_bar(window, swapped_project):
    result = window("panel.panel", swapped_project)
    opened = words(result, "panel_opened")
    for label in ("face swap", "source faces", "swapper", "mask blur", "opacity", "analyze", "swap", "update",
                  "active strip"):
        assert label in opened, f"{label!r} not read in the panel: {opened}"

    coverage = result["coverage"]
    analysed, swapped = cache_coverage(coverage["coverage_request"], coverage["media"])
    assert len(swapped) == 24 and analysed >= swapped  # the project swapped timeline frames 1-24 of 32
    screen = cv2.imread(str(result["out"] / coverage["shot"]), cv2.IMREAD_COLOR)
    for column in coverage["columns"]:
        pixels = screen[column["top"]:column["bottom"] + 1, column["x"]]
        in_cache = (column["media"] in analysed, column["media"] in swapped)
        assert (column["analysed"], column["swapped"]) == in_cache, column  # what the panel knows is the cache
        shown = tuple(has_colour(pixels, coverage["colors"][row]) for row in ("analysed", "swapped"))
        assert shown == in_cache, f"frame {column['frame']}: bar shows {shown}, the cache holds {in_cache}"
