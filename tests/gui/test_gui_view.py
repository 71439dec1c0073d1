"""The sequencer's preview in Blender's window: dragging a blend slider changes the preview's face, which
then matches a render of the frame; playback of a 1080p shot with six swapped faces, with and without its
swapped strips (./dev gui-test reports both rates and their ratio; tests assert behaviour, not time)."""

from __future__ import annotations

import statistics

import cv2
import numpy as np
import pytest

from conftest import copy_project
from gui_checks import magenta_share

pytestmark = [pytest.mark.index]


def face_box(overlay_folder: str, frame_index: int, rect: list[int], size: tuple[int, int]):
    """The overlay's faces (alpha > 0) of media frame `frame_index`, as a box on the screen within `rect`."""
    overlay = cv2.imread(f"{overlay_folder}/{frame_index:06d}.png", cv2.IMREAD_UNCHANGED)
    ys, xs = np.nonzero(overlay[..., 3] > 0)
    sx, sy = rect[2] / size[0], rect[3] / size[1]
    return (int(rect[0] + xs.min() * sx) + 2, int(rect[1] + ys.min() * sy) + 2,
            int(rect[0] + xs.max() * sx) - 2, int(rect[1] + ys.max() * sy) - 2)


def test_a_dragged_slider_changes_the_preview_which_matches_a_render(window, swapped_project, gui_figures):
    result = window("view.preview", copy_project(swapped_project, "preview"))
    out = result["out"]
    assert 0.4 < result["opacity"] < 0.8, result["opacity"]  # the drag moved the slider
    assert result["last_preview"]["written"] == 1 and not any(result["last_preview"]["inferences"].values())
    assert result["slider_to_screen_ms"] is not None  # the preview region drew the last answer's frame
    before, after = (cv2.imread(str(out / result[k]), cv2.IMREAD_COLOR).astype(np.int16) for k in ("before", "after"))
    render, unswapped = (cv2.imread(str(out / result[k]), cv2.IMREAD_COLOR) for k in ("render", "render_unswapped"))
    rect = result["image_rect"]
    x0, y0, x1, y1 = face_box(result["overlay"], result["frame"] - 1, rect, render.shape[1::-1])
    shown = after[y0:y1, x0:x1]
    assert np.abs(shown - before[y0:y1, x0:x1]).mean() > 4  # the face in the preview changed

    def difference(image) -> float:
        """Mean difference between the preview's face and `image` scaled into the frame's rectangle, at the
        best alignment within 2 px (the rectangle comes from View2D's float coordinates)."""
        scaled = cv2.resize(image, (rect[2], rect[3]), interpolation=cv2.INTER_AREA).astype(np.int16)
        top, left = y0 - rect[1], x0 - rect[0]
        return min(np.abs(shown - scaled[top + dy:top + dy + y1 - y0, left + dx:left + dx + x1 - x0]).mean()
                   for dx in range(-2, 3) for dy in range(-2, 3))

    # Scaled by the GPU in the preview and by OpenCV here, the same picture differs by about 6 on a face
    # (measured: 5.8); the picture without the swap, by three times as much.
    matched, other = difference(render), difference(unswapped)
    assert matched < 8 and matched < other / 2, (matched, other)
    gui_figures["slider_to_screen_ms"] = result["slider_to_screen_ms"]


def test_the_preview_at_50_percent_shows_the_engines_half_size_picture(window, swapped_project):
    """Blender's real preview reads the engine's picture for its proxy size: with the 50 % pictures made magenta,
    the frame shows magenta at 50 % and the swapped shot at 100 %, before and after."""
    result = window("view.proxy_sizes", copy_project(swapped_project, "proxy_sizes"), frame=5)
    assert result["proxy_render_size"] == "PROXY_100"  # the Video Editing workspace's default
    assert result["pictures_at_50"] >= 20  # one a frame with faces
    x, y, width, height = result["image_rect"]
    inside = [x + 4, y + 4, width - 8, height - 8]  # the frame's rectangle, clear of its anti-aliased edge
    shares = [(size, magenta_share(result["out"] / name, inside)) for size, name in result["shots_by_size"]]
    assert [size for size, _ in shares] == ["PROXY_100", "PROXY_50", "PROXY_100"]
    assert shares[1][1] > 0.95 and shares[0][1] < 0.01 and shares[2][1] < 0.01, shares


@pytest.mark.parametrize("proxy_size", ["PROXY_100", "PROXY_50"])
def test_playback_with_and_without_the_swapped_strips(window, six_face_project, gui_figures, proxy_size):
    result = window("view.playback", six_face_project, proxy_size=proxy_size)
    assert result["movie_job_started"] and result["movie_is_proxy"]  # the shot's movie is the original's proxy
    for name in ("with_swap", "movie_alone"):
        for run in result["runs"][name]:
            assert run["frames_drawn"] == result["frames"] - 1 == 47, run  # every frame played, none skipped
            assert run["fps"] > 0
    rates = {name: round(statistics.median(run["fps"] for run in runs), 2) for name, runs in result["runs"].items()}
    suffix = "" if proxy_size == "PROXY_100" else "_at_50"  # the figure is at 100 %
    gui_figures.update({f"playback_fps_with_swap{suffix}": rates["with_swap"],
                        f"playback_fps_movie_alone{suffix}": rates["movie_alone"],
                        f"playback_ratio{suffix}": round(rates["with_swap"] / rates["movie_alone"], 2),
                        f"playback_runs{suffix}": result["runs"]})
