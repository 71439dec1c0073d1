"""Fixtures for the Blender extension tests: the real `bpy` module, or a real Blender binary. bpy 5.0.1
(Python 3.11, numpy 1.26) and 5.2.3 (Python 3.13, numpy 2) run them all; 4.2 and 4.5 LTS and 5.1 the
`every_blender` ones; Debian's Blender 4.3.2 binary those and the `blender_binary` ones (./dev test builds an
environment for each: docs/blender-versions.md).

The extension is built once with build_addon.py (for the platform the tests run on: linux-x64, or
windows-x64 in Blender's Windows build under Wine, scripts/windows_blender.py; its wheels for Python 3.11 and 3.13) and
installed the way Blender installs a downloaded extension: into the `user_default` extension
repository, wheels unpacked, then enabled. Blender's user folders point at a temporary folder
(BLENDER_USER_RESOURCES), so nothing is written to the home folder.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from blender_helpers import MODULE, ROOT, new_project, this_platform

_own_resources = None
if "BLENDER_USER_RESOURCES" not in os.environ:  # must be set before bpy is imported
    _own_resources = tempfile.mkdtemp(prefix="vse_faceswap_blender_user_")
    os.environ["BLENDER_USER_RESOURCES"] = _own_resources
    atexit.register(shutil.rmtree, _own_resources, True)


EXIT_STATUS = pytest.StashKey[int]()


def pytest_sessionfinish(session, exitstatus):
    session.config.stash[EXIT_STATUS] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """The bpy 4.2 module segfaults while Python shuts down once any property with a Python callback
    (`update=`, `get=`) was registered, even after unregistering it (checked with a bare
    `Scene.x = StringProperty(update=f)`; 4.5 and 5.0 exit cleanly). Blender itself never exits that way,
    so after the results are reported, end the process with pytest's own status instead."""
    module = sys.modules.get("bpy")
    if module is not None and tuple(module.app.version[:2]) == (4, 2) and EXIT_STATUS in config.stash:
        if _own_resources:
            shutil.rmtree(_own_resources, ignore_errors=True)  # os._exit skips atexit: 300 MB a run otherwise
        shutil.rmtree(module.app.tempdir, ignore_errors=True)  # and Blender's exit, which removes this
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(config.stash[EXIT_STATUS])


@pytest.fixture(scope="session")
def bpy():
    return pytest.importorskip("bpy")


@pytest.fixture(scope="session")
def extension_zip(tmp_path_factory, bpy):
    """extension_zip(platform) -> the built extension's zip for that platform (each
    Blender's validator checks them in test_blender_package). `./dev test` builds them once for every
    Blender's environment and names the folder in $VSE_FACESWAP_TEST_ZIPS; otherwise built here on first use."""
    shared = os.environ.get("VSE_FACESWAP_TEST_ZIPS")
    out = tmp_path_factory.mktemp("addon_build")

    def get(platform: str) -> Path:
        dist = Path(shared) if shared else out / "dist"
        if not shared and not list(dist.glob(f"vse_faceswap-*-{platform}.zip")):
            result = subprocess.run([sys.executable, str(ROOT / "build_addon.py"), "--platform", platform,
                                     "--no-validate", "--build-dir", str(out / "build"),
                                     "--dist", str(dist)], capture_output=True, text=True)
            assert result.returncode == 0, result.stdout + result.stderr
        found = list(dist.glob(f"vse_faceswap-*-{platform}.zip"))
        assert len(found) == 1, f"expected one {platform} zip in {dist}, found {found}"
        return found[0]

    return get


@pytest.fixture(scope="session")
def addon_zip(extension_zip) -> Path:
    return extension_zip(this_platform())


@pytest.fixture(scope="session")
def addon(bpy, addon_zip, models_dir):
    """The installed, enabled extension; returns a namespace of its modules."""
    import importlib

    result = bpy.ops.extensions.package_install_files(repo="user_default", filepath=str(addon_zip),
                                                      enable_on_install=True)
    assert result == {"FINISHED"}
    assert MODULE in bpy.context.preferences.addons
    bpy.context.preferences.addons[MODULE].preferences.models_dir = str(models_dir)

    class Modules:
        pass

    modules = Modules()
    for name in ("frame_mapping", "timeline", "paths", "jobs", "engine_client", "ops", "coverage_overlay", "compat",
                 "shot_group", "runtime", "preview", "coverage_watch", "cache_watcher", "ui", "props", "faceless_keys",
                 "preview_form"):
        setattr(modules, name, importlib.import_module(f"{MODULE}.{name}"))
    modules.prefs = bpy.context.preferences.addons[MODULE].preferences
    yield modules
    import addon_utils

    addon_utils.disable(MODULE)


@pytest.fixture(scope="session")
def clip(tmp_path_factory, portrait_paths) -> Path:
    """A 24-frame 320x240 clip panning over a real portrait (frames 11 and 23 have no face)."""
    from facecache.media.sample_clip import write_sample_clip

    return write_sample_clip(portrait_paths["grace_hopper"], tmp_path_factory.mktemp("media") / "clip.mp4",
                             frames=24, size=(320, 240))


@pytest.fixture
def project(bpy, addon, tmp_path, portrait_paths):
    """A fresh empty file saved as tmp_path/project/edit.blend, its scene set up for the sequencer,
    with one source face. Returns the scene."""
    addon.prefs.models_dir = str(addon.prefs.models_dir)
    return new_project(bpy, addon, tmp_path / "project" / "edit.blend", portrait_paths["astronaut"])
