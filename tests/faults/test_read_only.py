"""A cache on a read-only mount (a bind mount made read-only by the test, root only), and output
folders that cannot be used: each is one line with the path, what happened, what to do and a
documented exit code; a cache that cannot be written still serves its hits."""

import json
import os

import pytest

from fault_helpers import cli, leftovers, tree_modes

pytestmark = pytest.mark.index  # real MTCNN weights and portraits


def test_a_read_only_cache_serves_hits_computes_misses_and_says_what_it_cannot_do(
        shared_dir, read_only_view, models_dir, fault_media):
    cache = shared_dir / "cache"
    warm = cli("analyze", fault_media["clip"], "--frames", "0-3", "--cache-dir", cache, "--models-dir", models_dir)
    assert warm.code == 0, warm.err
    before = tree_modes(cache)
    view = read_only_view(cache)

    run = cli("analyze", fault_media["clip"], "--cache-dir", view, "--models-dir", models_dir, "--json")
    assert run.code == 0, run.err
    summary = run.summary
    assert (summary["frames"], summary["hits"], summary["inferences"]["detect"]) == (8, 4, 4)
    assert run.err.count("read-only file system") == 1 and "Traceback" not in run.err
    assert tree_modes(cache) == before  # nothing written, nothing removed

    for action, exit_code in (("prune", 4), ("clear", 4), ("stats", 0), ("verify", 0)):
        result = cli("cache", action, "--cache-dir", view)
        assert result.code == exit_code, (action, result.err)
        if exit_code:
            (line,) = result.err.splitlines()
            assert line.startswith(f"facecache: error: cannot {action} the cache {view}")
            assert "read-only file system" in line
    assert tree_modes(cache) == before


def test_output_folders_that_cannot_be_used_stop_before_any_work(shared_dir, read_only_view, models_dir,
                                                                  fault_media):
    cache = shared_dir / "cache"
    a_file = shared_dir / "a-file"
    a_file.write_text("not a folder")
    (shared_dir / "outputs").mkdir()
    read_only = read_only_view(shared_dir / "outputs")
    cases = [(a_file, 6, "it (or a folder above it) is a file, not a folder"),
             (a_file / "out", 6, "it (or a folder above it) is a file, not a folder"),
             (read_only / "out", 4, "read-only file system"),
             (shared_dir / ("x" * 300), 6, "the path or a name in it is too long")]
    for out, exit_code, said in cases:
        result = cli("swap", "--source", fault_media["source"], "--target", fault_media["clip"], "--out", out,
                     "--cache-dir", cache, "--models-dir", models_dir)
        assert result.code == exit_code, (out, result.err)
        (line,) = result.err.splitlines()
        assert line.startswith("facecache: error: cannot write the outputs in") and said in line, line
        assert "choose another output folder" in line
    assert not cache.exists() or not any(cache.glob("ns/*/*/*/*.fcp"))  # no analysis was done
    assert leftovers(shared_dir) == []


def test_bad_values_are_refused_before_any_work_with_the_allowed_range(shared_dir, models_dir, fault_media):
    """The CLI's options and the worker's job fields: one message with the range, exit code 2, nothing
    analysed (the cache stays empty)."""
    import io

    from facecache.worker import main as worker

    cache = shared_dir / "cache"
    common = ("--cache-dir", cache, "--models-dir", models_dir)
    swap = ("swap", "--source", fault_media["source"], "--target", fault_media["clip"], "--out", shared_dir / "o")
    for args, said in (
            (("analyze", fault_media["clip"], "--frames", "5-2"), "frame range '5-2' must be A-B with 0 <= A <= B"),
            (("analyze", fault_media["portrait"], fault_media["clip"], "--frames", "0-8"),
             "frames 0-8 are outside"),
            ((*swap, "--opacity", "1.5"), "between 0 and 1"),
            ((*swap, "--mask-blur", "-0.1"), "between 0 and 1"),
            ((*swap, "--position", "0.5,1.2"), "two fractions 0..1"),
            ((*swap, "--source-face", "-1"), "between 0 and 99"),
            (("cache", "prune", "--max-size=-5G"), "cannot be negative")):
        result = cli(*args, *common)
        assert result.code == 2, (args, result.err)
        assert said in result.err and "Traceback" not in result.err, (args, result.err)
    assert not any(cache.rglob("*.fcp"))

    settings = {"cache_dir": str(cache), "models_dir": str(models_dir), "sources": [str(fault_media["source"])]}
    for items, said in (([{"media": str(fault_media["clip"]), "start": 6, "stop": 2, "out": "o"}], "reversed"),
                        ([{"media": str(fault_media["clip"]), "start": 0, "stop": 99, "out": "o"}],
                         "which has frames 0-7"),
                        ([{"media": str(fault_media["clip"]), "start": 0, "stop": 2}], "lacks out"),
                        ([{"media": str(fault_media["clip"]), "start": "0", "stop": 2, "out": "o"}],
                         "whole frame numbers"),
                        ({"media": "x"}, "items must be a list")):
        out = io.StringIO()
        job = {"kind": "swap", "settings": settings, "items": items}
        assert worker([], io.StringIO(json.dumps(job) + "\n"), out) == 2
        message = json.loads(out.getvalue())
        assert message["type"] == "error" and said in message["message"] and message["exit_code"] == 2
    out = io.StringIO()
    assert worker([], io.StringIO(json.dumps({"kind": "swap", "settings": {}}) + "\n"), out) == 2  # no KeyError
    assert not any(cache.rglob("*.fcp"))
