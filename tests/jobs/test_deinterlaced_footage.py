"""`facecache analyze` and `swap` with `--deinterlace`: a movie's picture as a strip with Blender's Deinterlace
option shows it (media/deinterlace.py), analysed and composited on that picture and cached apart from the
woven one. Real MTCNN."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest

from facecache.cli import main
from facecache.media.reader import MediaReader

pytestmark = pytest.mark.index  # real weights and portraits come from the package index


@pytest.fixture(scope="module")
def clip(tmp_path_factory, portrait_paths):
    from facecache.media.sample_clip import write_sample_clip

    return write_sample_clip(portrait_paths["grace_hopper"], tmp_path_factory.mktemp("clip") / "clip.mp4",
                             frames=3, size=(320, 240))


def run(capsys, *args) -> dict:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_a_deinterlaced_picture_is_analysed_apart_from_the_woven_one(tmp_path, models_dir, clip, capsys):
    common = ["--cache-dir", str(tmp_path / "cache"), "--models-dir", str(models_dir)]
    woven = run(capsys, "analyze", str(clip), *common)
    fields = run(capsys, "analyze", str(clip), "--deinterlace", *common)
    again = run(capsys, "analyze", str(clip), "--deinterlace", *common)
    assert woven["inferences"]["detect"] == fields["inferences"]["detect"] == 3
    assert again["inferences"]["detect"] == 0


def test_a_deinterlaced_swap_is_composited_on_the_deinterlaced_picture(tmp_path, models_dir, clip, portrait_paths,
                                                                        capsys):
    summary = run(capsys, "swap", "--source", str(portrait_paths["astronaut"]), "--target", str(clip),
                  "--out", str(tmp_path / "out"), "--output-form", "full", "--deinterlace",
                  "--cache-dir", str(tmp_path / "cache"), "--models-dir", str(models_dir))
    assert summary["faces_swapped"] == 3
    output = cv2.imread(str(tmp_path / "out" / "clip" / "000000.png"), cv2.IMREAD_COLOR)
    with MediaReader(clip, deinterlace=True) as shown, MediaReader(clip) as weave:
        deinterlaced, woven = shown.frames([0]).__next__()[1], weave.frames([0]).__next__()[1]
    as_shown = (output == deinterlaced).all(axis=-1)  # everywhere but the swapped face: the picture itself
    assert as_shown.mean() > 0.5
    assert as_shown.sum() > (output == woven).all(axis=-1).sum()  # not the woven picture's
