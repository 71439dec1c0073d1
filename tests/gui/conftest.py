"""The GUI suite: the installed extension in Blender's real window (Debian 13's Blender 4.3.2 on Python 3.13,
under Xvfb with Mesa's llvmpipe), in the Debian 13 root that `scripts/debian_root.sh` builds.

pytest runs on the host; each test opens a project in a window inside the root (`in_window.sh`), where
`driver.py` plays one scenario of `scenarios.py` and writes what it saw (screenshots, words read, screen
positions, timings) into the test's folder under build/gui/<run>/. The test then checks the screenshots and
that record. Only collected when VSE_FACESWAP_GUI is set: `./dev gui-test` runs the whole suite, `./dev test`
its smoke part (`-m gui_smoke`). Building or entering the root needs root, as CI runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
DEBIAN_ROOT = ROOT / "scripts" / "debian_root.sh"
SCREEN = (1600, 900)  # the X screen and Blender's window: the same size on every run
UI_SCALE = 1.0
WINDOW_TIMEOUT = 600  # seconds one window may stay open (a hang guard)


FIGURES = pytest.StashKey[dict]()
# Goals the figures are reported against (tests assert behaviour; ./dev gui-test prints these).
GOALS = {"swap_max_redraw_gap_ms": 100.0, "update_max_redraw_gap_ms": 100.0, "slider_to_screen_ms": 30.0}
FLOORS = {"playback_ratio": 0.9}  # goals a figure must reach (issue 35: the swapped shot's share of the movie's rate)


def pytest_configure(config):
    config.stash[FIGURES] = {}


def pytest_terminal_summary(terminalreporter, config):
    """The figures the run measured, against their goals, also written to build/gui/<run>/figures.json."""
    figures = config.stash.get(FIGURES, {})
    if not figures:
        return
    run = figures.pop("run_dir")
    (Path(run) / "figures.json").write_text(json.dumps(figures, indent=1), encoding="utf-8")
    terminalreporter.section("GUI figures (this machine, this run)")
    for name, value in figures.items():
        goal, sign = (GOALS[name], "<=") if name in GOALS else (FLOORS.get(name), ">=")
        met = goal is not None and value is not None and (value <= goal if sign == "<=" else value >= goal)
        verdict = "" if goal is None or value is None else f"  (goal {sign} {goal:g}: {'met' if met else 'MISSED'})"
        terminalreporter.write_line(f"{name:<34} {value}{verdict}")
    terminalreporter.write_line(f"screenshots and records: {run}")


@pytest.fixture
def gui_figures(request, gui_run_dir) -> dict:
    """The figures of this run (printed at the end, and kept in build/gui/<run>/figures.json)."""
    figures = request.config.stash[FIGURES]
    figures["run_dir"] = str(gui_run_dir)
    return figures


def in_root(*command: str, timeout: float = WINDOW_TIMEOUT) -> subprocess.CompletedProcess:
    """Run a command in the Debian 13 root (this checkout and /tmp at the same paths)."""
    return subprocess.run([str(DEBIAN_ROOT), "run", *command], capture_output=True, text=True, timeout=timeout)


# What a run builds again each time (the zip's staging and dist, Blender's user folder with the extension's
# unpacked wheels: about 720 MB): removed when the run ends; its screenshots, records and projects stay.
REBUILT = ("addon", "dist", "blender_user")


@pytest.fixture(scope="session")
def gui_run_dir():
    """build/gui/<date-time>/: every run's screenshots, records and projects are kept."""
    if os.geteuid() != 0:
        pytest.fail("the GUI suite runs Blender in the Debian 13 root, which needs root (chroot, mounts): run "
                    "./dev gui-test as root")
    folder = ROOT / "build" / "gui" / time.strftime("%Y%m%d-%H%M%S")
    folder.mkdir(parents=True)
    yield folder
    for name in REBUILT:
        shutil.rmtree(folder / name, ignore_errors=True)


@pytest.fixture(scope="session")
def gui_zip(gui_run_dir) -> Path:
    """The linux-x64 extension zip (its wheels serve Python 3.11 and 3.13): ./dev's, else built here."""
    shared = os.environ.get("VSE_FACESWAP_TEST_ZIPS")
    dist = Path(shared) if shared else gui_run_dir / "dist"
    if not shared:
        built = subprocess.run([sys.executable, str(ROOT / "build_addon.py"), "--platform", "linux-x64",
                                "--no-validate", "--build-dir", str(gui_run_dir / "addon"), "--dist", str(dist)],
                               capture_output=True, text=True)
        assert built.returncode == 0, built.stdout + built.stderr
    (found,) = dist.glob("vse_faceswap-*-linux-x64.zip")
    return found


@pytest.fixture(scope="session")
def blender_setup(gui_run_dir, gui_zip, models_dir, portrait_paths):
    """blender_setup(name, clip, size=None, swap=None, selector="one") -> the project's .blend, made by Blender
    4.3.2 in background mode with the extension installed in the Blender user folder every window of this
    run uses."""
    user = gui_run_dir / "blender_user"

    def make(name: str, clip: Path, size=None, swap=None, selector="one") -> Path:
        folder = gui_run_dir / "projects" / name
        folder.mkdir(parents=True)
        spec = {"zip": str(gui_zip), "models_dir": str(models_dir), "ui_scale": UI_SCALE,
                "projects": [{"blend": str(folder / f"{name}.blend"), "clip": str(clip), "size": size, "swap": swap,
                              "source": str(portrait_paths["astronaut"]), "selector": selector}]}
        path = folder / "setup.json"
        path.write_text(json.dumps(spec), encoding="utf-8")
        done = in_root("env", f"BLENDER_USER_RESOURCES={user}", "blender", "-b", "--python-exit-code", "1",
                       "--python", str(HERE / "blender_setup.py"), "--", str(path))
        (folder / "setup.log").write_text(done.stdout + done.stderr, encoding="utf-8")
        assert done.returncode == 0, f"making {name} failed:\n{(done.stdout + done.stderr)[-3000:]}"
        return folder / f"{name}.blend"

    make.user = user
    return make


def copy_project(blend: Path, name: str) -> Path:
    """A copy of a project's folder (the .blend and its cache beside it) for one test."""
    target = blend.parents[1] / name
    shutil.copytree(blend.parent, target)
    return target / blend.name


@pytest.fixture
def window(blender_setup, gui_run_dir, request):
    """window(scenario, blend, **params) -> the scenario's record (result.json): opens `blend` in Blender's
    window, plays `scenarios.<scenario>` and fails the test with the scenario's own error."""

    def run(scenario: str, blend: Path, **params) -> dict:
        out = gui_run_dir / request.node.name / scenario
        out.mkdir(parents=True)
        job = out / "job.json"
        job.write_text(json.dumps({"scenario": scenario, "out": str(out), "screen": SCREEN, **params}),
                       encoding="utf-8")
        done = in_root("sh", str(HERE / "in_window.sh"), str(job), str(blend), str(blender_setup.user),
                       f"{SCREEN[0]}x{SCREEN[1]}")
        (out / "blender.log").write_text(done.stdout + done.stderr, encoding="utf-8")
        record = out / "result.json"
        assert record.is_file(), f"Blender's window ended without a result (exit {done.returncode}):\n" \
                                 f"{(done.stdout + done.stderr)[-3000:]}"
        result = json.loads(record.read_text(encoding="utf-8"))
        assert not result["error"], f"the {scenario} scenario failed in the window:\n{result['error']}"
        result["out"] = out
        return result

    return run


@pytest.fixture(scope="session")
def face_clip(gui_run_dir, portrait_paths) -> Path:
    """32 frames of 1280x720 panning over a real portrait; frames 11 and 23 have no face."""
    from facecache.media.sample_clip import write_sample_clip

    return write_sample_clip(portrait_paths["grace_hopper"], gui_run_dir / "media" / "face.mp4", frames=32,
                             size=(1280, 720))


@pytest.fixture(scope="session")
def swapped_project(blender_setup, face_clip) -> Path:
    """The 720p clip in a 720p scene, timeline frames 1-24 of its 32 swapped: a face swap group."""
    return blender_setup("swapped", face_clip, swap=[1, 24])


@pytest.fixture(scope="session")
def unswapped_project(blender_setup, face_clip) -> Path:
    """The 720p clip in a 720p scene, not swapped yet (copy it for a test: `copy_project`)."""
    return blender_setup("unswapped", face_clip)


@pytest.fixture(scope="session")
def six_face_project(blender_setup, gui_run_dir, portrait_paths) -> Path:
    """48 frames of 1920x1080 with six real faces in every frame, all swapped (every face): the playback shot."""
    from facecache.media.sample_clip import write_group_clip

    clip = write_group_clip([portrait_paths["grace_hopper"], portrait_paths["astronaut"]],
                            gui_run_dir / "media" / "six_faces.mp4", 6, frames=48, size=(1920, 1080), empty_every=0)
    return blender_setup("six_faces", clip, swap=[1, 48], selector="many")
