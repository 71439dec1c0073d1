"""The add-on's engine session on Windows CPython (3.11 and 3.13) under Wine: spawned by the add-on's own
client, a swap, an update, a preview, a Cancel without signals, an engine killed mid-swap; and two processes
writing one cache at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from windows_helpers import CLIP_FRAMES, LONG_FRAMES, json_lines, run_inside
from wine import winpath

pytestmark = pytest.mark.windows


def _run_with_config(windows_python, script: str, config: dict, tmp_path: Path):
    config_file = tmp_path / f"{Path(script).stem}.json"
    config_file.write_text(json.dumps(config), encoding="utf-8")
    return run_inside(windows_python, script, winpath(config_file))


def test_engine_session_swap_update_preview_cancel_and_a_killed_engine(windows_python, windows_models, portrait_paths,
                                                                        clip, long_clip, tmp_path):
    models, _ = windows_models
    config = {"addon": winpath(windows_python.addon), "models": winpath(models), "source": winpath(portrait_paths["astronaut"]),
              "clip": winpath(clip), "frames": CLIP_FRAMES, "long_clip": winpath(long_clip), "long_frames": LONG_FRAMES}
    for name in ("cache", "out", "cache_cancel", "out_cancel", "cache_killed", "out_killed"):
        config[name] = winpath(tmp_path / name)
    steps = json_lines(_run_with_config(windows_python, "session_driver.py", config, tmp_path), "step")
    assert "stopped" in steps, steps["_log"]

    swap = steps["swap"]
    assert swap["error"] is None and swap["result"]["written"] == CLIP_FRAMES and swap["starts"] == 1
    assert swap["result"]["swapped"][config["clip"]] == list(range(CLIP_FRAMES))
    update = steps["update"]
    assert update["result"]["written"] == 0 and update["result"]["skipped"] == CLIP_FRAMES
    assert not any(update["result"]["inferences"].values()) and update["starts"] == 1, "the same engine, warm"
    preview = steps["preview"]
    assert preview["result"]["frames"] == 1 and not any(preview["result"]["inferences"].values())
    assert preview["result"]["outputs"][0].endswith("shot\\000003.png")

    cancel = steps["cancel"]  # Cancel is a message: the engine stops the job and lives on, finished work kept
    assert cancel["error"] is None and cancel["result"]["cancelled"], cancel
    assert cancel["result"]["written"] < LONG_FRAMES and cancel["alive"] and cancel["starts"] == 1
    assert cancel["coverage_error"] is None and 0 < cancel["analysed_after"] < LONG_FRAMES

    killed = steps["killed"]  # the request in flight ends with one message; the next one starts a new engine
    assert "stopped unexpectedly" in killed["error"] and killed["error_kind"] == "EngineDied"
    after = steps["after_kill"]
    assert after["error"] is None and after["starts"] == 2
    assert after["result"]["written"] + after["result"]["skipped"] == LONG_FRAMES
    assert sorted(p.name for p in (tmp_path / "out_killed" / "long take").glob("*.png")) == [
        f"{i:06d}.png" for i in range(LONG_FRAMES)]
    assert steps["stopped"]["alive"] is False
    verify = windows_python.facecache("cache", "verify", "--cache-dir", config["cache_killed"], "--json")
    assert verify.returncode == 0 and json.loads(verify.stdout)["bad"] == [], "the kill damaged no pack"


def test_two_processes_write_one_cache(windows_python, windows_models, portrait_paths, long_clip, tmp_path):
    models, _ = windows_models
    config = {"models": winpath(models), "source": winpath(portrait_paths["grace_hopper"]), "clip": winpath(long_clip),
              "cache": winpath(tmp_path / "cache"), "outs": [winpath(tmp_path / "a"), winpath(tmp_path / "b")]}
    result = _run_with_config(windows_python, "two_writers.py", config, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    runs = json.loads(result.stdout.strip().splitlines()[-1])
    for run in runs:
        assert run["exit"] == 0, run["stderr"]
    summaries = [json.loads(run["stdout"]) for run in runs]
    assert all(s["written"] == LONG_FRAMES for s in summaries)
    # the claims share the work: each frame of the clip is analysed once between them; the source photo
    # (counted too) once or, when both start at the same moment, by each
    assert LONG_FRAMES + 1 <= sum(s["inferences"]["detect"] for s in summaries) <= LONG_FRAMES + 2, summaries
    a = sorted((tmp_path / "a" / "long take").glob("*.png"))
    b = sorted((tmp_path / "b" / "long take").glob("*.png"))
    assert [p.name for p in a] == [p.name for p in b] and len(a) == LONG_FRAMES
    assert all(x.read_bytes() == y.read_bytes() for x, y in zip(a, b)), "both made the same overlays"
