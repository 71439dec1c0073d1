"""The playback benchmark on a tiny shot, in the real bpy module: it runs end to end and reports
every figure for each encoding, the faces goal's second playback and both goals (the bench itself
checks that each encoding gives the overlay's pixels back). Timings belong to `./dev bench-playback`,
not to tests."""

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import cv2
import pytest

pytestmark = [pytest.mark.blender, pytest.mark.index]  # bpy; the default models and portraits from the index

ROOT = Path(__file__).resolve().parents[2]
PASS_FIGURES = ("first_pass_ms", "first_pass_cpu_ms", "first_pass_page_faults", "cached_ms", "cached_cpu_ms",
                "cached_page_faults", "added_first_pass_ms", "added_first_pass_cpu_ms", "encode_cpu_ms",
                "bytes_per_frame")


@pytest.mark.parametrize("proxy_size", [100, 50])
def test_every_encoding_is_played_and_measured(default_models_dir, portrait_paths, tmp_path, proxy_size):
    pytest.importorskip("bpy")
    env = {**os.environ, "FACECACHE_MODELS": str(default_models_dir),
           "FACECACHE_DATA": str(portrait_paths["astronaut"].parent)}
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_playback.py"), "--frames", "3", "--faces", "2",
                          "--size", "480x270", "--rounds", "1", "--proxy-size", str(proxy_size), "--clip-codec", "h264",
                          "--workdir", str(tmp_path), "--json"],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout[run.stdout.index("{"):])
    assert (result["frames"], result["faces"], result["size"], result["proxy_size"], result["clip_codec"]) == \
        (3, 2, "480x270", proxy_size, "h264")
    assert {"muted_ms", "muted_cpu_ms", "muted_page_faults"} <= set(result)
    # the swapped shot as the preview plays it, against the movie alone: at 100 % the shot's movie (the original's
    # proxy) under the pictures' stand-ins, at 50 % the engine's composited pictures
    preview = "preview_movie" if proxy_size == 100 else "preview_jpeg"
    assert set(result["encodings"]) == {"sparse_png", "opencv_png", "transparent_png", "faceless_pixel",
                                        "faceless_keyed_out", "preview_jpeg"} | {preview}
    assert result["preview_form"] == preview
    figures = result["encodings"][preview]
    assert result["swapped_ratio_first_pass"] == round(result["muted_ms"] / figures["first_pass_ms"], 3)
    assert result["pictures_ratio_first_pass"] == round(result["muted_ms"]
                                                        / result["encodings"]["preview_jpeg"]["first_pass_ms"], 3)
    assert result["overlay_ratio_first_pass"] == round(result["muted_ms"]
                                                       / result["encodings"]["sparse_png"]["first_pass_ms"], 3)
    assert result["swapped_ratio_goal_met"] == (result["swapped_ratio_first_pass"] >= result["swapped_ratio_goal"])
    assert result["faceless_added_ms"] == result["encodings"]["faceless_keyed_out"]["added_first_pass_ms"]
    comparison = result["faces_comparison"]  # the faces goal's own playback, glibc's thresholds held
    assert comparison["thresholds_held"] is (platform.libc_ver()[0] == "glibc")  # glibc's mallopt (not Windows)
    assert result["faces_added_ms"] == comparison["sparse_png"]["added_first_pass_ms"]
    assert result["faces_goal_ms"] == round(comparison["transparent_png"]["added_first_pass_ms"] + 2, 2)
    for name in ("sparse_png", "transparent_png"):
        assert {"first_pass_ms", "first_pass_cpu_ms", "first_pass_page_faults", "added_first_pass_ms",
                "added_first_pass_cpu_ms"} <= set(comparison[name])
    assert isinstance(result["faces_goal_met"], bool) and isinstance(result["faceless_goal_met"], bool)
    for figures in result["encodings"].values():
        assert set(PASS_FIGURES) <= set(figures)
        assert figures["first_pass_page_faults"] >= 0 and figures["bytes_per_frame"] > 0
    assert result["encodings"]["faceless_pixel"]["bytes_per_frame"] < 100  # one pixel, not a frame
    assert len(list((tmp_path / "out" / "clip").glob("*.png"))) == 3  # the engine's own overlays were played
    pictures = sorted((tmp_path / "out" / "clip" / "BL_proxy" / "images" / str(proxy_size)).glob("*.jpg"))
    assert len(pictures) == 3  # and the pictures of that proxy size
    assert cv2.imread(str(pictures[0])).shape == (270 * proxy_size // 100, 480 * proxy_size // 100, 3)
    if proxy_size == 100:  # the movie form: the movie, and the pictures' places holding the stand-in
        from facecache import preview_movie_files

        folder = tmp_path / "movie_form" / "clip"
        assert preview_movie_files.current(folder, tmp_path / "clip.mp4")[1] == 3
        assert all(p.read_bytes() == preview_movie_files.STAND_IN
                   for p in (folder / "BL_proxy" / "images" / "100").glob("*.jpg"))
