"""The smoke part of the GUI suite (`./dev test` runs it): a project with a swapped shot opens in Blender's
window; the sidebar's Face Swap tab shows its panels, read from the screenshot with tesseract; the coverage bar
under the shot shows, in its colours, exactly the frames the cache holds."""

from __future__ import annotations

import cv2
import pytest

from gui_checks import cache_coverage, has_colour, words

pytestmark = [pytest.mark.index]


@pytest.mark.gui_smoke
def test_panel_and_coverage_bar(window, swapped_project):
    result = window("panel.panel", swapped_project)
    opened = words(result, "panel_opened")
    for label in ("face swap", "source faces", "face nearest a point", "swapper", "mask blur", "opacity", "analyze",
                  "swap", "update", "active strip"):
        assert label in opened, f"{label!r} not read in the panel: {opened}"
    # a project just opened has no active strip: the panel describes the face swap group under the playhead
    for label in ("under the playhead", "analysed 24 / 32 frames", "swapped 24 / 32 frames"):
        assert label in opened, f"{label!r} not read in the panel: {opened}"
    assert "no active" not in opened

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


def test_a_clip_smaller_than_the_scene_is_said_and_the_scene_matched_to_it(window, blender_setup, face_clip):
    """A 1280x720 clip swapped in a 1920x1080 scene: a border shows around its picture; the shot's panel says
    so and its button matches the scene to the clip."""
    result = window("panel.match_scene", blender_setup("bordered", face_clip, size=[1920, 1080], swap=[1, 4]))
    before, after = words(result, "size_before"), words(result, "size_after")
    assert "clip 1280 x 720, scene 1920 x 1080" in before and "match scene to clip" in before, before
    assert result["resolution"] == [1280, 720]
    assert "clip 1280" not in after and "match scene to clip" not in after, after
