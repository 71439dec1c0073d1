"""farm/openjd/facecache_swap/template.yaml, run for real with `openjd run` (openjd-cli, from the project's `farm`
extra): the engine's `facecache swap --frames A-B` per chunk, for footage that is not in a .blend. Its
chunks together make exactly what one `facecache swap` of the whole clip makes, each frame analysed once."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.index  # real weights and portraits come from the package index

TEMPLATE = Path(__file__).resolve().parents[2] / "farm" / "openjd" / "facecache_swap" / "template.yaml"
BIN = Path(sys.executable).parent
OPENJD = shutil.which("openjd", path=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))
FACECACHE = shutil.which("facecache", path=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))


@pytest.fixture(scope="module")
def clip(tmp_path_factory, portrait_paths) -> Path:
    from facecache.media.sample_clip import write_sample_clip

    return write_sample_clip(portrait_paths["grace_hopper"], tmp_path_factory.mktemp("media") / "clip.mp4",
                             frames=24, size=(320, 240))


def outputs(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.png"))}


def test_chunks_of_the_engine_alone_equal_one_run(clip, portrait_paths, models_dir, tmp_path):
    if OPENJD is None or FACECACHE is None:
        pytest.skip("openjd (openjd-cli) or facecache is missing: ./dev installs both into the test environments")
    source = portrait_paths["astronaut"]
    run = subprocess.run([OPENJD, "run", str(TEMPLATE), "-p", f"Target={clip}", "-p", f"Source={source}",
                          "-p", f"OutputDir={tmp_path / 'farm_out'}", "-p", "Frames=0-23", "-p", "ChunkSize=8",
                          "-p", f"CacheDir={tmp_path / 'shared_cache'}", "-p", f"ModelsDir={models_dir}",
                          "-p", f"FacecacheExecutable={FACECACHE}"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:]
    assert re.findall(r"Frames\(CHUNK\[INT\]\) = (\S+)", run.stdout) == ["0-7", "8-15", "16-23"]
    detects = [int(n) for n in re.findall(r"model runs: detect (\d+)", run.stdout)]
    assert len(detects) == 3 and sum(detects) == 24 + 1  # each frame once, the source photo once

    single = subprocess.run([FACECACHE, "swap", "--source", str(source), "--target", str(clip),
                             "--out", str(tmp_path / "single_out"), "--cache-dir", str(tmp_path / "single_cache"),
                             "--models-dir", str(models_dir), "--json"], capture_output=True, text=True, timeout=300)
    assert single.returncode == 0, single.stderr[-3000:]
    assert json.loads(single.stdout)["written"] == 24
    farm = outputs(tmp_path / "farm_out" / "clip")
    assert len(farm) == 24 and farm == outputs(tmp_path / "single_out" / "clip")


def test_a_failing_chunk_fails_the_run(clip, models_dir, tmp_path):
    if OPENJD is None or FACECACHE is None:
        pytest.skip("openjd (openjd-cli) or facecache is missing: ./dev installs both into the test environments")
    run = subprocess.run([OPENJD, "run", str(TEMPLATE), "-p", f"Target={clip}", "-p", f"Source={clip}",
                          "-p", f"OutputDir={tmp_path / 'out'}", "-p", "Frames=0-23", "-p", "ChunkSize=12",
                          "-p", f"CacheDir={tmp_path / 'cache'}", "-p", f"ModelsDir={models_dir}",
                          "-p", f"FacecacheExecutable={FACECACHE}"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert run.returncode != 0  # the source is a video, not a photo of a face: the first chunk fails
    assert len(re.findall(r"Frames\(CHUNK\[INT\]\) = ", run.stdout)) == 1
    assert "Traceback" not in run.stdout
