"""The engine's OpenJD bundle (farm/openjd/facecache_swap) with the remote tier as its RemoteCache parameter,
run for real with `openjd run`: a second run on a fresh node (its own, empty cache folder) computes nothing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from seaweedfs import BUCKET

pytestmark = pytest.mark.index  # real weights and portraits come from the package index

TEMPLATE = Path(__file__).resolve().parents[2] / "farm" / "openjd" / "facecache_swap" / "template.yaml"
BIN = Path(sys.executable).parent
OPENJD = shutil.which("openjd", path=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))


def run_bundle(server, clip: Path, source: Path, models: Path, node: Path) -> list[int]:
    """One node's run of the bundle in 8-frame chunks; the model runs of each chunk."""
    facecache = node / "facecache"  # the engine as this test's Python runs it
    facecache.parent.mkdir(parents=True)
    facecache.write_text(f"#!/bin/sh\nexec {sys.executable} -m facecache \"$@\"\n")
    facecache.chmod(0o755)
    run = subprocess.run([OPENJD, "run", str(TEMPLATE), "-p", f"Target={clip}", "-p", f"Source={source}",
                          "-p", f"OutputDir={node / 'out'}", "-p", "Frames=0-23", "-p", "ChunkSize=8",
                          "-p", f"CacheDir={node / 'cache'}", "-p", f"ModelsDir={models}",
                          "-p", f"RemoteCache=s3://{BUCKET}/farm", "-p", f"FacecacheExecutable={facecache}"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600,
                         env={**os.environ, **server.environment()})
    assert run.returncode == 0, run.stdout[-4000:]
    return [int(n) for n in re.findall(r"model runs: detect (\d+)", run.stdout)]


def test_a_fresh_node_of_the_engines_bundle_is_served_from_the_remote_tier(seaweed, portrait_paths, models_dir,
                                                                             tmp_path):
    if OPENJD is None:
        pytest.skip("openjd (openjd-cli) is missing: ./dev installs it into the test environments")
    from facecache.media.sample_clip import write_sample_clip

    clip = write_sample_clip(portrait_paths["grace_hopper"], tmp_path / "clip.mp4", frames=24, size=(320, 240))
    source = portrait_paths["astronaut"]
    first = run_bundle(seaweed, clip, source, models_dir, tmp_path / "node-1")
    assert len(first) == 3 and sum(first) == 24 + 1  # each frame once, the source photo once
    second = run_bundle(seaweed, clip, source, models_dir, tmp_path / "node-2")
    assert second == [0, 0, 0]
    assert sorted(p.name for p in (tmp_path / "node-2" / "out" / "clip").glob("*.png")) == \
        sorted(p.name for p in (tmp_path / "node-1" / "out" / "clip").glob("*.png"))
