"""Jobs started from the panel's buttons in Blender's window: Swap and Update show their progress while the
sidebar keeps redrawing (the longest gap between two redraws is reported by ./dev gui-test, goal <= 100 ms),
and a killed engine is said in the panel, after which the next click works."""

from __future__ import annotations

import re

import pytest

from conftest import copy_project
from gui_checks import magenta_share, words

pytestmark = [pytest.mark.index]


def test_swap_and_update_by_clicking(window, unswapped_project, gui_figures):
    result = window("jobs.swap_and_update", copy_project(unswapped_project, "jobs"))
    swap, update = result["swap"], result["update"]
    assert swap["status"].startswith("swap: 32 frames"), swap["status"]
    assert swap["report"]["written"] == 32
    assert any(0 < p < 1 for p in swap["progress"]), swap["progress"]  # progress shown while it ran
    assert swap["redraws"] > 5 and swap["max_redraw_gap_ms"] is not None
    # the progress bar, where Swap was clicked: its "swap: <stage> <done>/32" (the bar's fill hides some letters)
    assert re.search(r"\b\d+/32\b", words(result, "swap_running")), words(result, "swap_running")
    # while it ran, frames not made yet showed the shot, not Blender's missing-media magenta
    assert magenta_share(result["out"] / swap["running_shot"], result["image_rect"]) < 0.01
    after_swap = words(result, "after_swap")
    assert "swapped 32 / 32 frames" in after_swap and "up to date" in after_swap, after_swap

    assert result["opacity"] == pytest.approx(0.6)  # typed into the field
    # The live preview remade the frame under the playhead at the new opacity: Update makes the other 31,
    # from the cache (no model runs).
    assert (update["report"]["written"], update["report"]["skipped"]) == (31, 1), update["report"]
    assert not any(update["report"]["inferences"].values()), update["report"]["inferences"]
    assert update["status"].startswith("update: 32 frames: 31 frames written"), update["status"]
    assert "up to date" in words(result, "after_update")
    gui_figures.update({"swap_max_redraw_gap_ms": swap["max_redraw_gap_ms"],
                        "swap_redraws_per_second": round(swap["redraws"] / swap["seconds"], 1),
                        "update_max_redraw_gap_ms": update["max_redraw_gap_ms"],
                        "idle_max_redraw_gap_ms": result["idle"]["max_redraw_gap_ms"],
                        "idle_median_redraw_gap_ms": result["idle"]["median_redraw_gap_ms"],
                        "swap_seconds_32_frames_720p": swap["seconds"]})


def test_a_killed_engine_is_said_and_the_next_click_works(window, unswapped_project):
    result = window("jobs.dead_engine", copy_project(unswapped_project, "dead"))
    assert "stopped unexpectedly" in result["status_after_kill"], result["status_after_kill"]
    assert magenta_share(result["out"] / result["after_kill_shot"], result["image_rect"]) < 0.01
    read = words(result, "after_kill")
    assert "stopped unexpectedly" in read and "next request starts it again" in read, read
    retry = result["retry"]
    assert retry["status"].startswith("update: 32 frames"), retry["status"]
    assert result["engine_starts"][1] == result["engine_starts"][0] + 1  # a fresh engine process
    after = words(result, "after_retry")
    assert "swapped 32 / 32 frames" in after and "up to date" in after, after
