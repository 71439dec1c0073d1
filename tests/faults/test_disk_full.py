"""A full file system (a 4 MB tmpfs mounted by the test) under the cache and under the outputs.

Nothing computed is lost: a full cache still serves its hits and the job computes the rest without
storing it (one warning); a full output disk stops the swap with one line and exit code 5, keeping
every complete output and storing every record made, and the rerun makes only what is missing.
"""

import json

import cv2
import pytest

from facecache.jobs.output_stamp import read_stamp
from fault_helpers import cli, fill, leftovers

pytestmark = pytest.mark.index  # real MTCNN weights and portraits


def analyze(cache, models_dir, media, frames):
    return cli("analyze", media, "--frames", frames, "--cache-dir", cache, "--models-dir", models_dir, "--json")


def test_a_full_cache_serves_its_hits_and_computes_the_rest(small_disk, models_dir, fault_media):
    cache = small_disk / "cache"
    first = analyze(cache, models_dir, fault_media["clip"], "0-3")
    assert first.code == 0, first.err
    filler = fill(small_disk)

    full = analyze(cache, models_dir, fault_media["clip"], "0-7")
    assert full.code == 0, full.err
    summary = full.summary
    assert summary["frames"] == 8 and summary["hits"] == 4 and summary["inferences"]["detect"] == 4
    assert full.err.count("no space left on the device") == 1  # one warning, not one per write
    assert "new ones are computed but not stored" in full.err and "Traceback" not in full.err
    assert "new ones are computed but not stored" in summary["cache_warning"]  # what Blender's status line says
    assert leftovers(cache) == []  # no temp files, no claims

    filler.unlink()
    again = analyze(cache, models_dir, fault_media["clip"], "0-7")
    assert again.summary["inferences"]["detect"] == 4  # the 4 not stored before, stored now
    assert analyze(cache, models_dir, fault_media["clip"], "0-7").summary["inferences"]["detect"] == 0


def test_a_full_output_disk_stops_cleanly_and_keeps_everything(small_disk, shared_dir, models_dir, fault_media):
    out, cache = small_disk / "out", shared_dir / "cache"
    args = ("swap", "--source", fault_media["source"], "--target", fault_media["clip"], "--out", out,
            "--cache-dir", cache, "--models-dir", models_dir, "--json")
    (out / "clip").mkdir(parents=True)
    filler = fill(small_disk, leave=3 * 4096)  # room for a few small overlays (tmpfs counts 4 KB pages)

    stopped = cli(*args)
    assert stopped.code == 5, stopped.err  # no space left on the device
    (line,) = [l for l in stopped.err.splitlines() if "error" in l]
    assert "cannot write the outputs in" in line and "no space left on the device" in line
    assert "written are kept" in line and "run the same command again" in line and "Traceback" not in stopped.err
    assert json.loads(stopped.out)["exit_code"] == 5  # still one JSON document on stdout
    kept = sorted((out / "clip").glob("*.png"))
    assert 0 < len(kept) < 8
    for path in kept:  # every output kept is complete: it decodes and carries its key
        assert cv2.imread(str(path), cv2.IMREAD_UNCHANGED) is not None and read_stamp(path)
    assert leftovers(out) == [] and leftovers(cache) == []

    stats = json.loads(cli("cache", "stats", "--cache-dir", cache, "--json").out)
    (made,) = [n["entries"] for n in stats["namespace_details"] if n["description"]["stage"] == "swap"]
    assert len(kept) <= made <= 8  # the job stops making frames at the fault; every frame it made is stored

    filler.unlink()
    rerun = cli(*args)
    assert rerun.code == 0, rerun.err
    summary = json.loads(rerun.out)
    assert summary["written"] == 8 - len(kept) and summary["skipped"] == len(kept)
    assert summary["inferences"]["detect"] == 8 - made  # and none is analysed twice
