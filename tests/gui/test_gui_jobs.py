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




def test_undo_of_a_swap_while_it_runs_and_after_it(window, unswapped_project):
    """Ctrl+Z in the timeline (issue 36): during a Swap it takes the face swap group away and the job's frames
    are kept; a Swap clicked again makes nothing new; Ctrl+Z after it gives the shot back as it was, Ctrl+Shift+Z
    the swapped shot, which one Update (nothing written, no model run) marks up to date again (the swapped
    strip's settings stamp is set when a job ends, after the step Blender's undo keeps). No error anywhere."""
    result = window("jobs.undo_swap", copy_project(unswapped_project, "undo"))
    unswapped = result["before"]
    assert [role for *_, role in unswapped] == ["NONE"]
    assert result["after_undo_while_running"] == unswapped
    assert result["undone_while_running"]["report"]["written"] == 32  # the job went on; its frames are kept
    again = result["again"]["report"]
    assert (again["written"], again["skipped"]) == (0, 32) and not any(again["inferences"].values()), again
    swapped = result["after_again"]
    assert sorted(role for *_, role in swapped) == ["GROUP", "ORIGINAL", "SWAPPED"], swapped
    assert result["after_undo"] == unswapped
    assert result["after_redo"] == swapped
    update = result["update"]["report"]
    assert update["written"] == 0 and not any(update["inferences"].values()), update
    assert "up to date" in words(result, "after_update") and "out of date" not in words(result, "after_update")
    log = (result["out"] / "blender.log").read_text(encoding="utf-8")
    assert "Traceback" not in log and "Error" not in log, log[-2000:]
