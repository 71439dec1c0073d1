"""The Open Job Description template farm/openjd/faceswap/template.yaml, run for real with `openjd run` (openjd-cli,
installed by ./dev from the `farm` extra): the same runner Deadline Cloud's worker agent is built on,
running each chunk's command in a local session. The `blender` it runs is the stand-in
scripts/bpy_blender.py, or the Blender binary the tests run in (see farm_helpers.py).

On the NAS (tests/nas/conftest.py: sshfs over an sshd on 127.0.0.1, mounted twice), two runners work
at once, one per mount, as two render nodes would: their chunks touch the same 64-frame segment, and
the claims keep each frame analysed once between them. A runner killed in the middle of a chunk, and
that chunk run again, gives the same frames as one run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path, PurePosixPath, PureWindowsPath

import pytest

from blender_helpers import ROOT
from farm_helpers import (blender_exe, farm_demo, make_demo_project, model_runs, run_blender,  # noqa: F401
                          swapped_outputs)

pytestmark = [pytest.mark.blender, pytest.mark.index, pytest.mark.blender_binary]

TEMPLATE = ROOT / "farm" / "openjd" / "faceswap" / "template.yaml"
# The `openjd` command, or `python -m openjd` where its wheel was unpacked without console scripts (Windows).
_OPENJD_SCRIPT = shutil.which("openjd", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
OPENJD = [_OPENJD_SCRIPT] if _OPENJD_SCRIPT else [sys.executable, "-m", "openjd"] if importlib.util.find_spec("openjd") \
    else None


def _load_nas_fixture():
    """The session's sshfs NAS from tests/nas/conftest.py (a fixture defined there, used here too)."""
    spec = importlib.util.spec_from_file_location("nas_fixtures_for_farm", ROOT / "tests" / "nas" / "conftest.py")
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.nas


nas = _load_nas_fixture()


def openjd_command(blend: Path, cache: Path, blender: Path, *extra: str, frames="1-36", chunk=12) -> list[str]:
    if OPENJD is None:
        pytest.skip("openjd (openjd-cli) is missing: ./dev installs it from the project's `farm` extra")
    return [*OPENJD, "run", str(TEMPLATE), "-p", f"BlendFile={blend}", "-p", f"Frames={frames}",
            "-p", f"ChunkSize={chunk}", "-p", f"CacheDir={cache}", "-p", f"BlenderExecutable={blender}", *extra]


def openjd_run(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(openjd_command(*args, **kwargs), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=600)


class Runner:
    """A runner started in the background. Its output goes to a file, so a test that waits on something
    else never leaves it blocked on a full pipe."""

    def __init__(self, log: Path, *args, **kwargs):
        self.log = log
        with log.open("wb") as out:
            self.process = subprocess.Popen(openjd_command(*args, **kwargs), stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True)

    def output(self) -> str:
        """Waits for the runner's end; its whole output."""
        self.process.wait(timeout=600)
        return self.log.read_text(errors="replace")


def chunks_run(log: str) -> list[str]:
    return re.findall(r"Frames\(CHUNK\[INT\]\) = (\S+)", log)


def test_all_chunks_run_and_equal_one_whole_timeline_run(farm_demo, blender_exe, tmp_path):
    cache = tmp_path / "shared_cache"
    run = openjd_run(farm_demo["blend"], cache, blender_exe, "--step", "FaceSwap")
    assert run.returncode == 0, run.stdout[-4000:]
    assert chunks_run(run.stdout) == ["1-12", "13-24", "25-36"]
    assert re.search(r"openjd_progress: 100\.0", run.stdout)
    # Each media frame analysed once in all (frame 0 was analysed on the workstation), the source once.
    assert model_runs(run.stdout) == 24 + 1
    assert swapped_outputs(cache) == farm_demo["reference"]

    # The render step, submitted with the studio's paths and mapped on this worker (as Deadline Cloud
    # does from its storage profiles): the .blend and the cache are found through the rules.
    # A studio's paths as a workstation of this platform writes them (openjd's local run takes a parameter
    # for a path of the machine it runs on, so a POSIX path on Windows would be made a path of the current drive).
    studio, path_format = (PureWindowsPath(r"N:\studio-nas"), "WINDOWS") if sys.platform == "win32" \
        else (PurePosixPath("/studio-nas"), "POSIX")
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"version": "pathmapping-1.0", "path_mapping_rules": [
        {"source_path_format": path_format, "source_path": str(studio / "shot10"),
         "destination_path": str(farm_demo["blend"].parent)},
        {"source_path_format": path_format, "source_path": str(studio / "cache"), "destination_path": str(cache)}]}))
    render = openjd_run(studio / "shot10" / farm_demo["blend"].name, studio / "cache", blender_exe,
                        "--step", "Render", "-p", f"RenderOutput={tmp_path / 'render' / '####'}",
                        "--path-mapping-rules", f"file://{rules}")
    assert render.returncode == 0, render.stdout[-4000:]
    assert f"FACESWAP_CACHE_DIR={cache}" in render.stdout
    assert "update: 24 frames: 0 frames written, 24 frames up to date" in render.stdout
    assert [p.name for p in sorted((tmp_path / "render").glob("*.png"))] == [f"{f:04d}.png" for f in range(1, 37)]


def test_negative_and_stepped_ranges_work_in_every_step(farm_demo, blender_exe, tmp_path):
    """OpenJD accepts negative frames (Blender's timeline allows them) and steps: every step takes them."""
    cache = tmp_path / "cache"
    for frames, chunks in (("-3--1", ["-3--2", "-1--1"]), ("-1-2", ["-1-0", "1-2"]), ("1-9:4", ["1-1", "5-5", "9-9"])):
        run = openjd_run(farm_demo["blend"], cache, blender_exe, "--step", "FaceSwap", frames=frames, chunk=2)
        assert run.returncode == 0, run.stdout[-4000:]
        assert chunks_run(run.stdout) == chunks
    render = openjd_run(farm_demo["blend"], cache, blender_exe, "--step", "Render", "-p",
                        f"RenderOutput={tmp_path / 'render' / '####'}", frames="-2-1,5-9:2")
    assert render.returncode == 0, render.stdout[-4000:]
    assert [p.name for p in sorted((tmp_path / "render").glob("*.png"), key=lambda p: int(p.stem))] == [
        "-0002.png", "-0001.png", "0000.png", "0001.png", "0005.png", "0007.png", "0009.png"]


def test_a_failing_chunk_fails_the_run(bpy, farm_demo, blender_exe, tmp_path):
    bpy.ops.wm.open_mainfile(filepath=str(farm_demo["blend"]))
    bpy.context.scene.faceswap.sources.clear()  # the editor forgot the source face
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "broken.blend"))
    run = openjd_run(tmp_path / "broken.blend", tmp_path / "cache", blender_exe, "--step", "FaceSwap")
    assert run.returncode != 0
    assert "no source face set" in run.stdout
    assert len(chunks_run(run.stdout)) == 1  # the session stops at the failed task


@pytest.mark.parametrize("failing", [False, True])
def test_the_stand_in_leaves_no_temporary_folder_behind(bpy, blender_exe, failing):
    """Blender makes a folder of its own in the system's temporary folder for each session and removes it when
    it exits: so does the stand-in, whose os._exit would skip that (hundreds left behind by one test run)."""
    if bpy.app.binary_path:
        pytest.skip("the tests run in a Blender binary, which is its own render node: no stand-in")
    code = "import bpy; print('TEMP=' + bpy.app.tempdir, flush=True)" + ("; raise ValueError('a broken script')"
                                                                         if failing else "")
    run = run_blender(blender_exe, "-b", "--python-exit-code", "1", "--python-expr", code)
    assert run.returncode == (1 if failing else 0), run.stderr
    folder = Path(re.search(r"TEMP=(.+)", run.stdout).group(1).strip())
    assert folder.name.startswith("blender_") and not folder.exists()


@pytest.fixture
def nas_project(nas, bpy, addon, clip, portrait_paths, request):
    """The demo project on the NAS, saved through mount A; its cache folder beside it holds what the
    editor's workstation made (frame 1, the source photo's analysis)."""
    name = f"farm-{request.node.name[:50]}"  # one folder per test: the mounts cache listings for a second
    studio = nas.a / name
    studio.mkdir()
    shared_clip = shutil.copy(clip, studio / clip.name)
    blend = make_demo_project(bpy, addon, studio, Path(shared_clip), portrait_paths["astronaut"])
    # What the nodes made is checked on the NAS's own disk: each mount caches its listings for a second.
    yield {"a": blend, "b": nas.b / name / blend.name, "cache_a": studio / "faceswap_cache",
           "cache_b": nas.b / name / "faceswap_cache", "cache_on_the_nas": nas.export / name / "faceswap_cache"}
    shutil.rmtree(nas.export / name, ignore_errors=True)


def test_two_runners_on_two_mounts_share_the_analysis(nas_project, farm_demo, blender_exe, tmp_path):
    """Runner A (mount A) takes chunks 1-12 and 25-36, runner B (mount B) chunk 13-24, at once: 1-12 and
    13-24 are both in the clip's first 64-frame segment."""
    runners = [Runner(tmp_path / "a.log", nas_project["a"], nas_project["cache_a"], blender_exe, "--step", "FaceSwap",
                      "--tasks", json.dumps([{"Frames": "1-12"}, {"Frames": "25-36"}])),
               Runner(tmp_path / "b.log", nas_project["b"], nas_project["cache_b"], blender_exe, "--step", "FaceSwap",
                      "--tasks", json.dumps([{"Frames": "13-24"}]))]
    logs = [runner.output() for runner in runners]
    assert all(runner.process.returncode == 0 for runner in runners), [log[-3000:] for log in logs]
    assert chunks_run(logs[0]) == ["1-12", "25-36"] and chunks_run(logs[1]) == ["13-24"]
    # Media frames 1-23 analysed once between the two nodes (frame 0 and the source were analysed on
    # the workstation, in this same cache); without the claims both would analyse the whole segment.
    assert model_runs("".join(logs)) == 23
    assert swapped_outputs(nas_project["cache_on_the_nas"]) == farm_demo["reference"]
    claims = nas_project["cache_b"] / "locks" / "claims"
    assert not [p for p in claims.iterdir() if p.name.endswith(".claim")]


def processes_with(variable: str, value: str) -> list[int]:
    """Pids of this machine's processes whose environment holds variable=value (the runner's tasks)."""
    wanted = f"{variable}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if wanted in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_a_chunk_killed_midway_and_run_again_gives_the_same_frames(nas_project, farm_demo, blender_exe, tmp_path):
    victim = Runner(tmp_path / "victim.log", nas_project["a"], nas_project["cache_a"], blender_exe,
                    "--step", "FaceSwap", "--tasks", json.dumps([{"Frames": "1-24"}]))
    outputs = nas_project["cache_on_the_nas"] / "swaps"
    # No deadline: the chunk either writes its third frame or ends, however loaded the machine.
    while len(list(outputs.glob("*/*/*.png"))) < 3 and victim.process.poll() is None:
        time.sleep(0.1)
    # The node dies: Blender and its engine process are killed at once, mid-chunk.
    pids = processes_with("FACESWAP_CACHE_DIR", str(nas_project["cache_a"]))
    assert pids and victim.process.poll() is None, "the chunk finished before it could be killed"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    log = victim.output()
    assert victim.process.returncode != 0, log[-3000:]
    made = len(list(outputs.glob("*/*/*.png")))
    assert 1 < made < 24

    again = openjd_run(nas_project["b"], nas_project["cache_b"], blender_exe, "--step", "FaceSwap",
                       "--tasks", json.dumps([{"Frames": "1-24"}]))
    assert again.returncode == 0, again.stdout[-4000:]
    assert swapped_outputs(nas_project["cache_on_the_nas"]) == farm_demo["reference"]
    from facecache.store.cache import FaceCache

    assert FaceCache(nas_project["cache_b"]).verify(temp_grace_seconds=0).clean  # nothing corrupt left behind
