"""`facecache swap` on footage as phones and recorders write it: a portrait clip stored sideways with a
display matrix is swapped upright, at the size Blender 5 shows; a variable frame rate gets one output per
frame Blender shows, each from the frame Blender shows there, and the CLI says so. Real MTCNN."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest

from facecache.cli import main
from footage import VFR_PTS_MS, VFR_SHOWN, write_phone_clip

pytestmark = pytest.mark.index  # real weights and portraits come from the package index


def swap(tmp_path, models_dir, source, target, *extra):
    return main(["swap", "--source", str(source), "--target", str(target), "--out", str(tmp_path / "out"),
                 "--cache-dir", str(tmp_path / "cache"), "--models-dir", str(models_dir), "--json", *extra])


def test_a_portrait_phone_clip_is_swapped_upright(tmp_path, models_dir, portrait_paths, portraits, capsys):
    clip = write_phone_clip(tmp_path / "phone.mp4", portraits["grace_hopper"])
    assert swap(tmp_path, models_dir, portrait_paths["astronaut"], clip) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["frames"] == 6 and summary["faces_swapped"] == 6, summary
    outputs = sorted((tmp_path / "out" / "phone").glob("*.png"))
    assert len(outputs) == 6
    assert {cv2.imread(str(p), cv2.IMREAD_UNCHANGED).shape[:2] for p in outputs} == {(320, 240)}  # upright


def test_the_picture_rules_of_blender_4_2_see_the_clip_sideways(tmp_path, models_dir, portrait_paths, portraits,
                                                                  capsys):
    """Blender 4.2 and 4.3 show the coded picture: the engine analyses what they show, sideways."""
    clip = write_phone_clip(tmp_path / "phone.mp4", portraits["grace_hopper"], frames=2)
    assert swap(tmp_path, models_dir, portrait_paths["astronaut"], clip, "--picture-rules", "blender-4.2") == 0
    capsys.readouterr()
    outputs = sorted((tmp_path / "out" / "phone").glob("*.png"))
    assert {cv2.imread(str(p), cv2.IMREAD_UNCHANGED).shape[:2] for p in outputs} == {(240, 320)}


def test_a_variable_frame_rate_gets_an_output_per_frame_blender_shows(tmp_path, models_dir, portrait_paths,
                                                                      portraits, capsys):
    clip = write_phone_clip(tmp_path / "recorder.mp4", portraits["grace_hopper"], pts=VFR_PTS_MS)
    assert swap(tmp_path, models_dir, portrait_paths["astronaut"], clip, "--output-form", "full") == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out.strip().splitlines()[-1])
    assert "variable frame rate: its 10 recorded frames fill 15 frames at 25 fps" in captured.err
    assert summary["frame_rate_note"] in captured.err and summary["written"] == len(VFR_SHOWN)
    outputs = sorted((tmp_path / "out" / "recorder").glob("*.png"))
    pictures = [cv2.imread(str(p)) for p in outputs]
    # a frame shown twice on the timeline gives the same output twice; the next recorded frame another one
    same = [np.array_equal(pictures[i], pictures[i + 1]) for i in range(len(pictures) - 1)]
    assert same == [VFR_SHOWN[i] == VFR_SHOWN[i + 1] for i in range(len(VFR_SHOWN) - 1)]


def test_a_movie_from_a_phone_clip_is_upright_and_on_blenders_clock(tmp_path, models_dir, portrait_paths,
                                                                    portraits, capsys):
    """--out movie.mp4 from a portrait VFR recording: every frame Blender shows, upright, at its 25 fps."""
    import av

    clip = write_phone_clip(tmp_path / "recorder.mp4", portraits["grace_hopper"], pts=VFR_PTS_MS)
    movie = tmp_path / "swapped.mp4"
    assert main(["swap", "--source", str(portrait_paths["astronaut"]), "--target", str(clip), "--out", str(movie),
                 "--cache-dir", str(tmp_path / "cache"), "--models-dir", str(models_dir), "--json"]) == 0
    capsys.readouterr()
    with av.open(str(movie)) as container:
        stream = container.streams.video[0]
        frames = list(container.decode(stream))
    assert (stream.codec_context.width, stream.codec_context.height) == (240, 320)
    seconds = [float(frame.pts * frame.time_base) for frame in frames]
    assert len(frames) == len(VFR_SHOWN) and seconds == pytest.approx([i / 25 for i in range(len(VFR_SHOWN))],
                                                                       abs=1e-3)
