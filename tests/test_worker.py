"""`python -m facecache.worker`: the JSON-lines process boundary used by the Blender add-on, and the
coverage query (which media frames are analysed, from the cache alone)."""

import io
import json
import subprocess
import sys

import pytest

from facecache.engine import run_job
from facecache.worker import main

pytestmark = pytest.mark.index


@pytest.fixture(scope="module")
def small_clip(tmp_path_factory, portrait_paths):
    from facecache.media.sample_clip import write_sample_clip

    return write_sample_clip(portrait_paths["grace_hopper"], tmp_path_factory.mktemp("clip") / "clip.mp4",
                             frames=6, size=(320, 240))


def settings(tmp_path, models_dir, **extra):
    return {"cache_dir": str(tmp_path / "cache"), "models_dir": str(models_dir), "providers": "cpu", **extra}


def test_analyze_then_coverage_from_the_cache(tmp_path, models_dir, small_clip):
    messages = []
    items = [{"media": str(small_clip), "start": 1, "stop": 4, "out": str(tmp_path / "out")}]
    summary = run_job({"kind": "analyze", "settings": settings(tmp_path, models_dir), "items": items},
                      messages.append)
    # frame 0 is detected too: tracking detects a segment's frames in order from its first
    assert summary["frames"] == 3 and summary["inferences"]["detect"] == 4
    assert summary["analysed"] == {str(small_clip): [1, 2, 3]}
    assert messages and messages[-1]["type"] == "progress" and messages[-1]["done"] == 3
    wider = [{**items[0], "start": 0, "stop": 6}]
    coverage = run_job({"kind": "coverage", "settings": settings(tmp_path, models_dir), "items": wider},
                       messages.append)
    assert coverage["analysed"] == {str(small_clip): [1, 2, 3]}
    assert coverage["inferences"]["detect"] == 0


def test_a_deinterlaced_item_is_its_own_picture_in_the_cache(tmp_path, models_dir, small_clip):
    """A strip with Blender's Deinterlace option shows another picture: never served the woven one's records."""
    woven = [{"media": str(small_clip), "start": 0, "stop": 2, "out": str(tmp_path / "out")}]
    fields = [{**woven[0], "deinterlace": True}]
    job = {"settings": settings(tmp_path, models_dir)}
    assert run_job({**job, "kind": "analyze", "items": woven}, lambda _: None)["inferences"]["detect"] == 2
    deinterlaced = str(small_clip) + "\0deinterlaced"  # its own key: no path holds a NUL
    coverage = run_job({**job, "kind": "coverage", "items": fields}, lambda _: None)
    assert coverage["analysed"] == {deinterlaced: []}
    assert run_job({**job, "kind": "analyze", "items": fields}, lambda _: None)["inferences"]["detect"] == 2
    again = run_job({**job, "kind": "analyze", "items": fields}, lambda _: None)
    assert again["inferences"]["detect"] == 0 and again["analysed"] == {deinterlaced: [0, 1]}
    wider = [{**woven[0], "stop": 4}, {**fields[0], "start": 1, "stop": 3}]  # one file on two strips, one query
    both = run_job({**job, "kind": "coverage", "items": wider}, lambda _: None)
    assert both["analysed"] == {str(small_clip): [0, 1], deinterlaced: [1]}
    with pytest.raises(Exception, match="deinterlace must be true or false"):
        run_job({**job, "kind": "analyze", "items": [{**woven[0], "deinterlace": "yes"}]}, lambda _: None)


def test_swap_job_over_the_pipe(tmp_path, models_dir, small_clip, portrait_paths):
    job = {"kind": "swap", "settings": settings(tmp_path, models_dir, sources=[str(portrait_paths["astronaut"])]),
           "items": [{"media": str(small_clip), "start": 0, "stop": 3, "out": str(tmp_path / "out")}]}
    result = subprocess.run([sys.executable, "-m", "facecache.worker"], input=json.dumps(job) + "\n",
                            capture_output=True, text=True, timeout=300)
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.returncode == 0, result.stderr
    assert {m["type"] for m in lines[:-1]} == {"progress"}
    summary = lines[-1]["summary"]
    assert (summary["frames"], summary["written"], summary["skipped"]) == (3, 3, 0)
    assert set(summary["inferences"]) == {"detect", "landmark", "embed", "swap"}
    assert sorted(p.name for p in (tmp_path / "out" / "clip").glob("*.png")) == ["000000.png", "000001.png",
                                                                             "000002.png"]


def test_errors_are_one_line_with_a_message(tmp_path, models_dir):
    out = io.StringIO()
    job = {"kind": "swap", "settings": settings(tmp_path, models_dir, sources=[]), "items": []}
    assert main([], io.StringIO(json.dumps(job) + "\n"), out) == 2  # bad input: exit code 2
    (line,) = out.getvalue().splitlines()
    message = json.loads(line)
    assert message["type"] == "error" and "no source face" in message["message"]
    out = io.StringIO()
    assert main([], io.StringIO('{"kind": "nope"}\n'), out) == 2
    assert "unknown job kind" in json.loads(out.getvalue())["message"]


def test_missing_models_name_the_error_kind(tmp_path):
    out = io.StringIO()
    job = {"kind": "analyze", "settings": {"cache_dir": str(tmp_path / "c"), "models_dir": str(tmp_path / "none")},
           "items": []}
    assert main([], io.StringIO(json.dumps(job) + "\n"), out) == 2  # bad input: exit code 2
    assert json.loads(out.getvalue())["kind"] == "ModelMissing"
