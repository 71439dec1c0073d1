"""The cache CLI, run as a user would: a subprocess of `python -m facecache`."""

import json
import os
import subprocess
import sys

import numpy as np

from facecache.store.cache import FaceCache
from facecache.store.frame_store import FrameStore, group_key
from facecache.store.namespace import Namespace
from facecache.store.records import Face, FrameRecord, Stage


def facecache(*args, env=None):
    return subprocess.run([sys.executable, "-m", "facecache", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


def fill(root, frames=20):
    g = FrameStore(FaceCache(root), Namespace("analysis", {"d": "1" * 32})).open_group(group_key("m", 0))
    for i in range(frames):
        g.put(FrameRecord(f"{i:032x}", Stage.DETECT, 10, 10,
                          [Face(np.zeros(4, np.float32), 1.0, np.zeros((5, 2), np.float32))]), i)
    g.flush()


def test_stats_json(tmp_path):
    fill(tmp_path / "c")
    out = facecache("cache", "stats", "--cache-dir", str(tmp_path / "c"), "--json")
    assert out.returncode == 0, out.stderr
    stats = json.loads(out.stdout)
    assert stats["entries"] == 20 and stats["namespaces"] == 1 and stats["bytes"] > 0
    assert stats["hits"] == {"local": 0, "remote": 0}


def test_stats_shows_the_hits_of_earlier_runs(tmp_path):
    fill(tmp_path / "c")
    cache = FaceCache(tmp_path / "c")
    g = FrameStore(cache, Namespace("analysis", {"d": "1" * 32})).open_group(group_key("m", 0))
    for i in range(5):
        g.lookup(f"{i:032x}", Stage.DETECT)
    cache.keep_hits()
    out = facecache("cache", "stats", "--cache-dir", str(tmp_path / "c"))
    assert out.returncode == 0, out.stderr
    assert "hits       5 frame records served from the cache folder, 0 from the remote tier" in out.stdout


def test_cache_dir_from_environment(tmp_path):
    fill(tmp_path / "env-cache")
    out = facecache("cache", "stats", "--json", env={"FACECACHE_DIR": str(tmp_path / "env-cache")})
    assert json.loads(out.stdout)["entries"] == 20


def test_verify_sets_aside_and_fails_then_is_clean(tmp_path):
    fill(tmp_path / "c")
    pack = next(FaceCache(tmp_path / "c").iter_packs()).path
    pack.write_bytes(b"garbage")
    out = facecache("cache", "verify", "--cache-dir", str(tmp_path / "c"), "--json")
    assert out.returncode == 1 and len(json.loads(out.stdout)["bad"]) == 1
    assert facecache("cache", "verify", "--cache-dir", str(tmp_path / "c")).returncode == 0


def test_prune_and_clear(tmp_path):
    fill(tmp_path / "c")
    out = facecache("cache", "prune", "--cache-dir", str(tmp_path / "c"), "--max-size", "0", "--stale", "30d", "--json")
    report = json.loads(out.stdout)
    assert out.returncode == 0 and report["skipped_young"] == 1  # inside the grace period
    out = facecache("cache", "clear", "--cache-dir", str(tmp_path / "c"))
    assert out.returncode == 0
    assert json.loads(facecache("cache", "stats", "--cache-dir", str(tmp_path / "c"), "--json").stdout)["entries"] == 0


def test_bad_arguments_say_what_to_do(tmp_path):
    (tmp_path / "file").write_text("x")
    # exit code 6: a path that cannot be used (facecache.errors)
    out = facecache("cache", "stats", "--cache-dir", str(tmp_path / "file"))
    assert out.returncode == 6 and "--cache-dir" in out.stderr and "Traceback" not in out.stderr
    out = facecache("cache", "prune", "--cache-dir", str(tmp_path / "c"), "--max-size", "lots")
    assert out.returncode == 2 and "10G" in out.stderr


def test_bench_cache_json_has_the_figures():
    out = facecache("bench", "cache", "--frames", "70", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    for key in ("fingerprint_ms", "sha256_ms", "warm_lookup_ms", "files_opened_per_warm_frame", "bytes_per_face_frame"):
        assert key in result
    assert result["hits"] == 70
    assert result["files_opened_per_warm_frame"] == 2 / 70  # two groups of 64 frames, one pack each
