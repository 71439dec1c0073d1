"""Drawing only reads: while every panel, the preferences, the source list and the coverage overlay
draw (and their polls run), any call that lists, stats, opens or creates a file raises. What they show
comes from the runtime state the engine session filled in."""

import builtins
import io
import os
import sys
import time
import types

import pytest

from blender_helpers import add_movie, select_only
from test_blender_ui import CheckedLayout  # a layout stand-in held to this Blender's UILayout contract

pytestmark = [pytest.mark.blender, pytest.mark.index]


class FileSystemTouched(AssertionError):
    pass


FILE_SYSTEM_CALLS = [(os, name) for name in ("listdir", "scandir", "stat", "lstat", "open", "mkdir", "makedirs",
                                              "access", "remove", "unlink", "rename", "replace", "walk")]
FILE_SYSTEM_CALLS += [(builtins, "open"), (io, "open")]


class WithLayout:
    """The preferences as their `draw` sees them, with a recording layout."""

    def __init__(self, owner, layout):
        self.layout = layout
        self._owner = owner

    def __getattr__(self, name):
        return getattr(self._owner, name)


def gpu_stand_in(drawn):
    """The GPU module cannot draw in background mode: a stand-in records the batches instead."""
    shader = types.SimpleNamespace(bind=lambda: None, uniform_float=lambda *a: drawn.append(("color", {"args": a})))
    gpu = types.SimpleNamespace(shader=types.SimpleNamespace(from_builtin=lambda name: shader),
                                state=types.SimpleNamespace(blend_set=lambda mode: None))
    batch = types.ModuleType("gpu_extras.batch")
    batch.batch_for_shader = lambda shader, kind, data, indices: types.SimpleNamespace(
        draw=lambda shader: drawn.append(("batch", {"pos": data["pos"]})))
    return gpu, batch


def draw_everything(bpy, addon, scene, monkeypatch):
    import addon_utils  # noqa: F401 - imported before the file system is closed off

    drawn = []
    context = bpy.context
    gpu, batch = gpu_stand_in(drawn)
    monkeypatch.setitem(sys.modules, "gpu", gpu)
    monkeypatch.setitem(sys.modules, "gpu_extras.batch", batch)
    panels = [addon.ui.FACESWAP_PT_main, addon.ui.FACESWAP_PT_strip, addon.ui.FACESWAP_PT_models,
              addon.ui.FACESWAP_PT_cache]
    with monkeypatch.context() as closed:
        for module, name in FILE_SYSTEM_CALLS:
            closed.setattr(module, name, _refuse(name))
        for panel in panels:
            assert panel.poll(context)
            panel.draw(types.SimpleNamespace(layout=CheckedLayout(bpy, drawn)), context)
        for item in scene.faceswap.sources:
            addon.ui.FACESWAP_UL_sources.draw_item(None, context, CheckedLayout(bpy, drawn), scene.faceswap, item,
                                                   0, None, "", 0)
        type(addon.prefs).draw(WithLayout(addon.prefs, CheckedLayout(bpy, drawn)), context)
        for operator in (bpy.ops.faceswap.swap, bpy.ops.faceswap.update, bpy.ops.faceswap.cancel,
                         bpy.ops.faceswap.refresh_coverage):
            operator.poll()
        addon.coverage_overlay.draw(types.SimpleNamespace(view2d=IdentityView()))
        with pytest.raises(FileSystemTouched):  # the stand-ins do refuse what the old drawing code did
            addon.timeline.swapped_on_disk(scene, addon.paths.media_path(addon.timeline.originals(scene)[0]))
    return drawn


class IdentityView:
    """A timeline region's View2D in background mode (no region is drawn there): view = region coordinates."""

    @staticmethod
    def view_to_region(x, y, clip=True):
        return x, y


def _refuse(name):
    def refused(*args, **kwargs):
        raise FileSystemTouched(f"drawing called {name}{args[:1]}")
    return refused


def labels(drawn):
    return [bound.get("text", "") for name, bound in drawn if name in ("label", "progress")]


def test_panels_and_overlays_never_touch_the_file_system(bpy, addon, project, clip, monkeypatch):
    strip = add_movie(project, clip, frame_start=1)
    strip.frame_offset_end = 18  # media frames 0..5
    select_only(project, strip)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    project.sequence_editor.active_strip = strip
    project.faceswap.selector = "reference"  # the reference list draws too
    project.faceswap.references.add().filepath = str(clip)
    project.faceswap.selector = "one"

    drawn = draw_everything(bpy, addon, project, monkeypatch)
    text = labels(drawn)
    assert "Analysed 6 / 6 frames" in text and "Swapped 6 / 6 frames" in text  # from the engine's answers
    assert "Swapped strip up to date" in text
    assert any(t.startswith("swap: 6 frames: 6 frames written") for t in text)  # the last job's status line
    assert [bound["pos"] for name, bound in drawn if name == "batch"]  # the coverage bars were drawn

    monkeypatch.setattr(addon.jobs, "synchronous", lambda: False)  # a job running, drawn with its progress
    project.faceswap.opacity = 0.4
    assert bpy.ops.faceswap.update() == {"FINISHED"}
    drawn = draw_everything(bpy, addon, project, monkeypatch)  # before any tick: the job is running whatever its speed
    assert any(name == "progress" for name, _bound in drawn)
    # the strip's panel shows the job at work on it, no counts that lag it and nothing to press
    assert "Update starting" in labels(drawn) and not any("press Update" in t or "Swapped " in t for t in labels(drawn))
    status = addon.runtime.STATE.job
    status.done, status.total = 3, 6  # as a tick sets them from the engine's progress
    text = labels(draw_everything(bpy, addon, project, monkeypatch))
    assert "Update running: 3 / 6 frames" in text and not any("press Update" in t for t in text)
    while addon.jobs._tick() is not None:
        time.sleep(0.02)
    text = labels(draw_everything(bpy, addon, project, monkeypatch))  # the job done: the strip's counts again
    assert "Swapped 6 / 6 frames" in text and "Swapped strip up to date" in text
