"""Run by Debian's Blender in background mode (`blender -b --python blender_setup.py -- SPEC.json`) before the
window opens: installs the built extension into the Blender user folder the window will use (as Blender
installs a downloaded extension), sets the preferences every GUI test shares, and builds the projects the
tests open. The spec (JSON, written by conftest.py):

    {"zip": path, "models_dir": path, "ui_scale": 1.0,
     "projects": [{"blend": path, "clip": path, "source": path, "size": [w, h] | null,
                   "swap": [first, last] | null, "selector": "one" | "many"}]}

A project is the Video Editing workspace with one movie strip (channel 1, frame 1, the clip's own size
unless `size` names the scene's), the scene's frame range and rate set to the clip's, Standard view
transform, and one source face. With `swap`, those timeline frames are swapped (synchronously: background
mode) and the swapped shot is a face swap group.
"""

from __future__ import annotations

import importlib
import json
import sys

import bpy

MODULE = "bl_ext.user_default.vse_faceswap"


def install(spec: dict) -> None:
    if MODULE not in bpy.context.preferences.addons:
        result = bpy.ops.extensions.package_install_files(repo="user_default", filepath=spec["zip"],
                                                          enable_on_install=True)
        if result != {"FINISHED"} or MODULE not in bpy.context.preferences.addons:
            raise SystemExit(f"the extension {spec['zip']} did not install: {result}")
    prefs = bpy.context.preferences
    prefs.addons[MODULE].preferences.models_dir = spec["models_dir"]
    prefs.view.ui_scale = spec["ui_scale"]
    prefs.view.show_splash = False
    prefs.view.show_tooltips = False  # a tooltip left by the pointer would hide what a screenshot checks
    prefs.filepaths.use_auto_save_temporary_files = False
    bpy.ops.wm.save_userpref()


def make_project(project: dict) -> None:
    compat = importlib.import_module(f"{MODULE}.compat")
    bpy.ops.wm.read_homefile(app_template="Video_Editing")
    scene = bpy.context.scene
    editor = scene.sequence_editor_create()
    strip = compat.top_strips(editor).new_movie("shot", project["clip"], 1, 1)
    width, height = project["size"] or (strip.elements[0].orig_width, strip.elements[0].orig_height)
    scene.render.resolution_x, scene.render.resolution_y, scene.render.resolution_percentage = width, height, 100
    scene.render.fps, scene.render.fps_base = round(strip.fps), 1.0
    scene.frame_start, scene.frame_end = 1, strip.frame_final_duration
    scene.view_settings.view_transform = "Standard"
    scene.faceswap.sources.add().filepath = project["source"]
    scene.faceswap.selector = project.get("selector", "one")
    editor.active_strip = None
    bpy.ops.wm.save_as_mainfile(filepath=project["blend"])  # the cache goes beside the .blend
    if project["swap"]:
        strip.select = True
        first, last = project["swap"]
        if bpy.ops.faceswap.swap(frame_start=first, frame_end=last) != {"FINISHED"}:
            raise SystemExit(f"the swap for {project['blend']} failed: {scene.faceswap.last_report}")
        for each in compat.all_strips(editor):
            each.select = False
        editor.active_strip = None  # as an editor finds a project they did not leave a strip active in
        bpy.ops.wm.save_mainfile()


def main() -> None:
    spec = json.loads(open(sys.argv[sys.argv.index("--") + 1], encoding="utf-8").read())
    install(spec)
    for project in spec["projects"]:
        make_project(project)


main()
