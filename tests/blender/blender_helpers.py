"""Helpers for the Blender tests (importable: pytest puts this folder on sys.path)."""

import ctypes
import importlib
import json
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULE = "bl_ext.user_default.vse_faceswap"


def this_platform() -> str:
    """build_addon.py's name of the platform this Python runs on: the zip an editor here downloads."""
    if sys.platform == "win32":
        return "windows-x64"
    if sys.platform == "darwin":
        return "macos-arm64" if platform.machine() == "arm64" else "macos-x64"
    return "linux-x64"


def fresh_blender(script: Path, *args: str) -> list[str]:
    """The command that runs `script` with `args` in a fresh process of this same Blender: the binary itself
    (`-b --python-exit-code 1 --python SCRIPT -- ARGS`) when the tests run inside one, else this Python with
    the bpy module. The script reads its arguments with `script_arguments()`."""
    import bpy

    if bpy.app.binary_path:
        return [bpy.app.binary_path, "-b", "--python-exit-code", "1", "--python", str(script), "--", *args]
    return [sys.executable, str(script), *args]


def script_arguments() -> list[str]:
    """A script's own arguments, as `fresh_blender` passes them (a Blender binary keeps its own in sys.argv,
    up to "--")."""
    return sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:]


def last_json_line(stdout: str) -> dict:
    """The last line of `stdout` that is a JSON object (a Blender binary prints more after the script ends)."""
    return json.loads(next(line for line in reversed(stdout.splitlines()) if line.startswith("{")))


def compat():
    """The installed extension's compat module: Blender's API across 4.2-5.0 (the add-on must be installed)."""
    return importlib.import_module(f"{MODULE}.compat")


def new_project(bpy, addon, blend: Path, source: Path, cache: str = ""):
    """A fresh empty file saved as `blend`, its scene set up for the sequencer with `source` as its source
    face, and the cache beside it (or `cache`, chosen in the preferences). Returns the scene."""
    bpy.ops.wm.read_homefile(use_empty=True)
    addon.jobs.reset()
    addon.runtime.STATE.forget()
    addon.prefs.cache_dir_override = cache
    scene = bpy.context.scene
    compat().set_sequencer_scene(bpy.context, scene)
    scene.sequence_editor_create()
    scene.faceswap.sources.add().filepath = str(source)
    blend.parent.mkdir(parents=True, exist_ok=True)
    assert bpy.ops.wm.save_as_mainfile(filepath=str(blend)) == {"FINISHED"}
    return bpy.context.scene


def top_strips(scene):
    """The scene's top-level strips collection (`strips`, or `sequences` before 4.4)."""
    return compat().top_strips(scene.sequence_editor)


def add_movie(scene, path, frame_start=1, channel=1, name="clip"):
    return top_strips(scene).new_movie(name, str(path), channel, frame_start)


def select_only(scene, *chosen):
    for strip in top_strips(scene):
        strip.select = any(strip == s for s in chosen)


def report(scene) -> dict:
    return json.loads(scene.faceswap.last_report)


def edit_with_operators(bpy, scene) -> None:
    """Make `scene` the one Blender's sequencer operators edit: the window's scene (before 5.0; the bpy
    module has one window) and the workspace's sequencer scene (5.0)."""
    bpy.context.window.scene = scene
    compat().set_sequencer_scene(bpy.context, scene)


def render_uncached(scene) -> None:
    """Turn the scene's sequencer caches off, so that each render shows what the strips show now: Blender
    4.2 serves a cached frame after a strip inside nested metas is muted, and 5.0.1 a retimed movie's
    slowed frames from a cache key that neighbouring frames share."""
    editor = scene.sequence_editor_create()
    for cache in (p.identifier for p in editor.bl_rna.properties if p.identifier.startswith("use_cache_")):
        setattr(editor, cache, False)


KEY_SELECTED = 16  # SeqRetimingKey's flag SEQ_KEY_SELECTED in 5.1+ (a freeze frame leaves its key with it)


def set_segment_speed(bpy, scene, strip, key_frame: int, percent: float) -> None:
    """Strip > Retiming > Set Speed on the segment of `strip` that starts at its retiming key on timeline
    frame `key_frame`, as an editor does it (the strip selected and active). Up to 5.0 it acts on the key
    just added; 5.1+ set the whole strip's speed unless keys are selected, which only a click in the
    sequencer does, so the key is selected as a click leaves it (read in bpy 5.1.2 and 5.2.3): the strip's
    keys shown, the key's SEQ_KEY_SELECTED flag set and every other key's cleared. A key record is `double
    position` (frames from the strip's start; the API's `timeline_frame` is wrong in a scene that holds
    other strips), then `int flag`."""
    if bpy.app.version < (5, 1, 0):
        assert bpy.ops.sequencer.retiming_segment_speed_set(speed=percent) == {"FINISHED"}
        return
    strip.show_retiming_keys = True
    selected = 0
    for other in compat().all_strips(scene.sequence_editor):
        for key in compat().retiming_keys(other):
            flag = ctypes.c_int32.from_address(key.as_pointer() + 8)
            position = ctypes.c_double.from_address(key.as_pointer()).value
            chosen = other == strip and position == key_frame - strip.frame_start
            flag.value = flag.value | KEY_SELECTED if chosen else flag.value & ~KEY_SELECTED
            selected += chosen
    assert selected == 1, f"no retiming key of {strip.name!r} at frame {key_frame}"
    assert bpy.ops.sequencer.retiming_segment_speed_set(speed=percent) == {"FINISHED"}
