"""The Flamenco 3 job type (farm/flamenco/faceswap_update.js), compiled and then run for real.

What stands in for what (none of Flamenco's programs can run here: its Manager and Worker are Go
programs from Blender's own site, on no package registry):
  - the Manager's job compiler: tests/blender/flamenco_manager.js under `node`, with the documented
    `author`, `frameChunker`, `path` globals (see its header);
  - the Flamenco Blender add-on's submission: this test evaluates each setting's `eval` expression in
    the bpy module with the demo project open (names `bpy`, `C`, `Path`, `abspath`, `settings`), then
    sets what an editor types in the submit panel;
  - the Worker: this test expands the Manager's variables (`{blender}`, `{blenderArgs}`, and a two-way
    variable `{nas}` for the shared storage) and runs each `blender-render` command as
    `{exe} {exeArgs} {argsBefore} {blendfile} {args}`, tasks after their dependencies;
  - the `blender` executable: scripts/bpy_blender.py, or the Blender binary the tests run in (farm_helpers.py).
The job runs in Flamenco's copy mode: the .blend is copied into a job folder first, its relative
paths rewritten as Flamenco's packer does.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import cv2
import numpy as np
import pytest

from blender_helpers import ROOT
from farm_helpers import blender_exe, farm_demo, model_runs, progress_lines, swapped_outputs  # noqa: F401

pytestmark = [pytest.mark.blender, pytest.mark.index, pytest.mark.blender_binary]

JOB_TYPE_SCRIPT = ROOT / "farm" / "flamenco" / "faceswap_update.js"
MANAGER = Path(__file__).with_name("flamenco_manager.js")
NODE = shutil.which("node")


def manager(*args: str) -> dict:
    if NODE is None:
        pytest.skip("node (Node.js) is missing: the Flamenco job type is compiled under node; apt-get install nodejs")
    result = subprocess.run([NODE, str(MANAGER), *args], capture_output=True, text=True, timeout=60)
    reply = json.loads(result.stdout)
    assert (result.returncode == 0) == ("error" not in reply), result.stderr
    return reply


def compile_job(tmp_path: Path, settings: dict) -> dict:
    job = tmp_path / f"job-{len(list(tmp_path.glob('job-*.json')))}.json"
    job.write_text(json.dumps({"name": "shot 10 face swap", "settings": settings}))
    return manager("compile", str(JOB_TYPE_SCRIPT), str(job))


def submitted_settings(bpy, job_type: dict, **typed) -> dict:
    """What the Flamenco add-on sends: defaults, `eval` results in the open file, then what the user typed."""
    settings = {s["key"]: s["default"] for s in job_type["settings"] if "default" in s}
    names = {"bpy": bpy, "C": bpy.context, "Path": Path, "abspath": lambda p: Path(os.path.abspath(p)),
             "settings": settings, "jobname": "shot 10 face swap"}
    for setting in job_type["settings"]:
        if "eval" in setting:
            settings[setting["key"]] = eval(setting["eval"], dict(names))  # noqa: S307 - the add-on's contract
    settings.update(typed)
    return settings


def worker_command(command: dict, variables: dict) -> list[str]:
    """A Worker's command line for a blender-render command, variables expanded."""
    def expand(value: str) -> str:
        return re.sub(r"\{([^}]+)\}", lambda m: variables.get(m.group(1), m.group(0)), value)

    assert command["name"] == "blender-render"
    p = command["parameters"]
    return ([expand(p["exe"])] + shlex.split(expand(p["exeArgs"])) + [expand(a) for a in p["argsBefore"]]
            + [expand(p["blendfile"])] + [expand(a) for a in p["args"]])


def run_task(task: dict, variables: dict) -> subprocess.CompletedProcess:
    (command,) = task["commands"]
    result = subprocess.run(worker_command(command, variables), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{task['name']}: {result.stdout[-2000:]}{result.stderr[-3000:]}"
    return result


def test_the_job_type_declares_the_settings_a_farm_needs():
    job_type = manager("job-type", str(JOB_TYPE_SCRIPT))
    assert job_type["name"] == "faceswap-update" and job_type["label"]
    keys = {s["key"]: s for s in job_type["settings"]}
    assert {"frames", "chunk_size", "cache_dir", "render", "render_output_path", "blendfile"} <= set(keys)
    assert keys["chunk_size"]["type"] == "int32" and keys["chunk_size"]["default"] >= 1
    assert keys["cache_dir"]["required"] and "eval" in keys["frames"]


def test_chunks_compile_and_their_union_equals_one_whole_timeline_run(bpy, addon, farm_demo, blender_exe, tmp_path):
    bpy.ops.wm.open_mainfile(filepath=str(farm_demo["blend"]))
    job_type = manager("job-type", str(JOB_TYPE_SCRIPT))

    # The editor submits from the open file: frames and cache folder come from `eval` in Blender.
    evaluated = submitted_settings(bpy, job_type)
    assert evaluated["frames"] == "1-36" and evaluated["format"] == "PNG"
    assert evaluated["cache_dir"] == str(farm_demo["blend"].parent / "faceswap_cache")
    # Copy mode: the Manager works on a copy of the .blend in a job folder. Flamenco's packer (BAT)
    # rewrites the copy's relative paths so they still reach the media; Save As a copy does the same.
    job_folder = tmp_path / "flamenco-jobs" / "shot-10"
    job_folder.mkdir(parents=True)
    blendfile = job_folder / "edit.flamenco.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blendfile), copy=True, relative_remap=True)
    nas = tmp_path / "nas"
    settings = submitted_settings(bpy, job_type, chunk_size=12, cache_dir="{nas}/faceswap_cache", render=True,
                                  render_output_path=str(tmp_path / "render" / "######"), blendfile=str(blendfile))
    compiled = compile_job(tmp_path, settings)

    tasks = compiled["tasks"]
    assert [t["name"] for t in tasks] == ["faceswap-1-12", "faceswap-13-24", "faceswap-25-36", "render"]
    assert all(t["type"] == "blender" and len(t["commands"]) == 1 for t in tasks)
    assert tasks[-1]["dependencies"] == ["faceswap-1-12", "faceswap-13-24", "faceswap-25-36"]
    for task in tasks:
        params = task["commands"][0]["parameters"]
        assert (params["exe"], params["exeArgs"], params["blendfile"]) == ("{blender}", "{blenderArgs}", str(blendfile))
        args = params["args"]
        assert args[:3] == ["--python-exit-code", "1", "--python-expr"]  # before the Python, or it has no effect
        assert args[-2:] == ["--", "{nas}/faceswap_cache"]  # the path is an argument, never Python source
    assert "faceswap.update(frame_start=13, frame_end=24)" in tasks[1]["commands"][0]["parameters"]["args"][3]
    assert tasks[-1]["commands"][0]["parameters"]["args"][4:10] == [
        "--render-output", str(tmp_path / "render" / "######"), "--render-format", "PNG", "--render-frame", "1..36"]

    # The Worker runs every task: their outputs together are those of one whole-timeline run.
    variables = {"blender": str(blender_exe), "blenderArgs": "-b -y", "nas": str(nas)}
    chunk_runs = [run_task(task, variables) for task in tasks[:-1]]
    for run in chunk_runs:
        assert progress_lines(run.stdout)[-1] == 100.0
    # Each media frame analysed once (frame 0 on the workstation, in another cache), the source once.
    assert model_runs("".join(r.stdout for r in chunk_runs)) == 24 + 1
    assert swapped_outputs(nas / "faceswap_cache") == farm_demo["reference"]
    assert not (job_folder / "faceswap_cache").exists()  # nothing went beside the job folder's copy

    render = run_task(tasks[-1], variables)
    assert "update: 24 frames: 0 frames written, 24 frames up to date" in render.stdout  # the render task computes nothing
    rendered = sorted((tmp_path / "render").glob("*.png"))
    assert [p.name for p in rendered] == [f"{f:06d}.png" for f in range(1, 37)]
    assert_render_shows_the_swap(bpy, addon, tmp_path, rendered[4], frame=5)


def assert_render_shows_the_swap(bpy, addon, tmp_path, farm_frame: Path, frame: int):
    """The farm's render of a timeline frame differs from the same frame without the swapped strips
    exactly where the farm-made overlay has its face, and there enough to be a face."""
    scene = bpy.context.scene
    for strip in addon.timeline.swapped_strips(scene):
        strip.mute = True
    scene.frame_set(frame)
    scene.render.filepath = str(tmp_path / "without.png")
    bpy.ops.render.render(write_still=True, scene=scene.name)
    without = cv2.imread(str(tmp_path / "without.png"), cv2.IMREAD_COLOR).astype(np.int16)
    with_swap = cv2.imread(str(farm_frame), cv2.IMREAD_COLOR).astype(np.int16)
    overlays = sorted((tmp_path / "nas" / "faceswap_cache" / "swaps").rglob(f"{frame - 1:06d}.png"))
    alpha = cv2.imread(str(overlays[0]), cv2.IMREAD_UNCHANGED)[..., 3]
    changed = np.abs(with_swap - without).max(axis=2) > 8
    assert changed.sum() > 200 and not (changed & (alpha == 0)).any()


def test_bad_settings_are_refused_on_submission_with_what_to_do(bpy, tmp_path):
    base = {"frames": "1-36", "chunk_size": 12, "blendfile": "/p/edit.blend", "render": False}
    for cache_dir in ("", "faceswap_cache", "//faceswap_cache"):
        reply = compile_job(tmp_path, {**base, "cache_dir": cache_dir})
        assert "cache_dir must be an absolute folder" in reply["error"]
    for cache_dir in ("/mnt/nas/faceswap_cache", "N:\\faceswap_cache", "\\\\nas\\share\\cache", "{nas}/cache"):
        assert "tasks" in compile_job(tmp_path, {**base, "cache_dir": cache_dir})
    no_output = compile_job(tmp_path, {**base, "cache_dir": "/c", "render": True})
    assert "render_output_path is empty" in no_output["error"]
    assert "invalid chunk size" in compile_job(tmp_path, {**base, "cache_dir": "/c", "chunk_size": 0})["error"]


def test_chunks_of_scattered_frames_run_each_run_once():
    """frameChunker writes two neighbours as "3,4": they are one operator call (one engine start)."""
    settings = {"frames": "1-5,8,10-11,20", "chunk_size": 4, "cache_dir": "/c", "blendfile": "/p/e.blend"}
    job = Path(os.environ.get("TMPDIR", "/tmp")) / f"faceswap-scattered-{os.getpid()}.json"
    job.write_text(json.dumps({"name": "scattered", "settings": settings}))
    try:
        tasks = manager("compile", str(JOB_TYPE_SCRIPT), str(job))["tasks"]
    finally:
        job.unlink()
    assert [t["name"] for t in tasks] == ["faceswap-1-4", "faceswap-5,8,10,11", "faceswap-20"]
    calls = re.findall(r"update\(frame_start=(\d+), frame_end=(\d+)\)", tasks[1]["commands"][0]["parameters"]["args"][3])
    assert calls == [("5", "5"), ("8", "8"), ("10", "11")]


@pytest.mark.parametrize("frames, chunk, names, calls", [
    ("-5--1", 3, ["faceswap--5--3", "faceswap--2,-1"], [("-5", "-3")]),
    ("-2-2", 128, ["faceswap--2-2"], [("-2", "2")]),
    ("-10..-8,0", 4, ["faceswap--10--8,0"], [("-10", "-8"), ("0", "0")]),
])
def test_negative_timeline_frames_compile_into_chunks(frames, chunk, names, calls):
    """Blender's timeline allows negative frames; Flamenco's own frameChunker reads none, so the job type
    cuts its chunks itself."""
    tasks = compile_settings({"frames": frames, "chunk_size": chunk, "cache_dir": "/c", "blendfile": "/p/e.blend"})
    assert [t["name"] for t in tasks["tasks"]] == names
    expression = tasks["tasks"][0]["commands"][0]["parameters"]["args"][3]
    assert re.findall(r"update\(frame_start=(-?\d+), frame_end=(-?\d+)\)", expression) == calls


@pytest.mark.parametrize("frames, said", [
    ("1-3000000", "more than 500000"),
    ("10-1", "run backwards"),
    ("1-x", "not a frame or a range"),
    ("-5--1", "negative frames"),  # with the render task on
])
def test_ranges_no_step_can_take_are_refused_on_submission(frames, said):
    reply = compile_settings({"frames": frames, "chunk_size": 128, "cache_dir": "/c", "blendfile": "/p/e.blend",
                              "render": said == "negative frames", "render_output_path": "/r/####"})
    assert said in reply["error"]


def compile_settings(settings: dict) -> dict:
    job = Path(os.environ.get("TMPDIR", "/tmp")) / f"faceswap-ranges-{os.getpid()}.json"
    job.write_text(json.dumps({"name": "ranges", "settings": settings}))
    try:
        return manager("compile", str(JOB_TYPE_SCRIPT), str(job))
    finally:
        job.unlink()


def test_the_remote_cache_travels_as_the_argument_after_the_cache_folder_into_the_environment(monkeypatch):
    """Like the cache folder, an argument after "--" (never Python source), which the task's Python puts in
    FACECACHE_REMOTE_CACHE for the extension; empty: no argument, nothing set. A URL that is not s3://… is
    refused on submission."""
    import sys
    from unittest import mock

    base = {"frames": "1-4", "chunk_size": 4, "cache_dir": "/c", "blendfile": "/p/e.blend"}
    for remote, tail in (("s3://studio-cache/faces", ["--", "/c", "s3://studio-cache/faces"]), ("", ["--", "/c"])):
        args = compile_settings({**base, "remote_cache": remote})["tasks"][0]["commands"][0]["parameters"]["args"]
        assert args[-len(tail):] == tail
        for name in ("FACESWAP_CACHE_DIR", "FACECACHE_REMOTE_CACHE"):
            monkeypatch.setenv(name, "")  # recorded, so whatever the exec sets is undone after the test
            monkeypatch.delenv(name)
        monkeypatch.setattr(sys, "argv", ["blender", *args])
        monkeypatch.setitem(sys.modules, "bpy", mock.MagicMock())  # the task's Python, its operator call recorded
        exec(args[3], {})
        assert os.environ["FACESWAP_CACHE_DIR"] == "/c"
        assert os.environ.get("FACECACHE_REMOTE_CACHE") == (remote or None)
        sys.modules["bpy"].ops.faceswap.update.assert_called_once_with(frame_start=1, frame_end=4)
    assert "remote_cache must be s3://bucket/prefix" in compile_settings({**base, "remote_cache": "http://x"})["error"]
