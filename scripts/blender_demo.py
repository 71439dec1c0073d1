#!/usr/bin/env python3
"""The main job end to end in Blender (the `bpy` 5.0.1 module, Python 3.11):

  1. builds the vse_faceswap extension for this platform (build_addon.py: vendored engine, wheels,
     Blender's validator),
  2. installs it into the Blender Python module the way Blender installs a downloaded extension,
  3. creates a sample project: a .blend with a movie strip of a clip made from a real photograph,
  4. swaps a source face onto it through the extension's operators (faceswap.swap),
  5. swaps a second source (faceswap.update: the analysis comes from the cache),
  6. splits the strip and updates again (nothing recomputed),
  7. renders the swapped timeline with Blender's sequencer (scripts/demo_render.py): a contact sheet of a
     few frames, original and swapped side by side, and an H.264 MP4 of the whole timeline,
and prints what it did, the timings, and where the contact sheet, the MP4, the .blend, the swapped
frames and the extension zip are.

    python scripts/blender_demo.py [--workdir DIR] [--frames 75]
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def host_platform() -> str:
    machine = platform.machine().lower()
    if sys.platform.startswith("linux") and machine in ("x86_64", "amd64"):
        return "linux-x64"
    if sys.platform == "win32":
        return "windows-x64"
    if sys.platform == "darwin":
        return "macos-arm64" if machine == "arm64" else "macos-x64"
    raise SystemExit(f"no extension build for {sys.platform}/{machine}: linux-x64, windows-x64 or macOS")


def load_build_addon():
    spec = importlib.util.spec_from_file_location("build_addon", ROOT / "build_addon.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=ROOT / "build" / "blender_demo")
    parser.add_argument("--frames", type=int, default=75, help="frames in the sample clip (75: 3 s at 25 fps)")
    args = parser.parse_args(argv)
    work = args.workdir.absolute()
    work.mkdir(parents=True, exist_ok=True)
    os.environ["BLENDER_USER_RESOURCES"] = str(work / "blender_user")  # before bpy is imported
    timings = {}

    from demo_render import render_demo
    from facecache.progress import still_working

    begun = start = time.perf_counter()
    build = load_build_addon()
    target = host_platform()
    print(f"building the extension for {target} (vendored engine and wheels; a minute or two the first time)",
          flush=True)
    with still_working("building the extension"):
        (archive,) = build.build([target], ROOT / "dist", ROOT / "build" / "addon", wheels=True, check=True)
    timings["build extension"] = time.perf_counter() - start

    try:
        import bpy
    except ImportError:
        raise SystemExit("the Blender Python module is missing: pip install bpy==5.0.1 (Python 3.11)") from None
    import cv2

    from facecache.media.reader import MediaReader
    from facecache.media.sample_clip import write_sample_clip
    from facecache.models.store import ModelStore
    from facecache.samples import sample_image

    start = time.perf_counter()
    print("installing the extension into the bpy module, and the default models", flush=True)
    with still_working("installing the extension and models"):
        assert bpy.ops.extensions.package_install_files(repo="user_default", filepath=str(archive),
                                                        enable_on_install=True) == {"FINISHED"}
        module = "bl_ext.user_default.vse_faceswap"
        compat = importlib.import_module(f"{module}.compat")  # Blender's API across 4.2-5.0
        prefs = bpy.context.preferences.addons[module].preferences
        prefs.models_dir = str(work / "models")
        ModelStore(work / "models").install(["default"])  # the bpy module has no online access switch to flip
    timings["install extension + models"] = time.perf_counter() - start

    project = work / "project"
    project.mkdir(exist_ok=True)
    clip = write_sample_clip(sample_image("grace_hopper"), project / "grace_hopper_clip.mp4", frames=args.frames,
                             size=(960, 540))
    mirrored = project / "astronaut_mirrored.png"
    cv2.imwrite(str(mirrored), cv2.imread(str(sample_image("astronaut")))[:, ::-1])
    with MediaReader(clip) as reader:
        info = reader.info
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    compat.set_sequencer_scene(bpy.context, scene)
    # The scene takes the clip's picture size and frame rate, so a render is the clip, frame for frame.
    scene.render.resolution_x, scene.render.resolution_y = info.width, info.height
    scene.render.resolution_percentage = 100
    scene.render.fps = max(1, round(info.fps))
    scene.render.fps_base = scene.render.fps / info.fps
    scene.view_settings.view_transform = "Standard"  # as Blender's Video Editing template: the clip's own colours
    editor = scene.sequence_editor_create()
    blend = project / "demo.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    scene = bpy.context.scene
    strip = compat.top_strips(scene.sequence_editor).new_movie("grace_hopper", str(clip), 1, 1)
    strip.select = True
    scene.frame_end = int(strip.frame_final_end) - 1

    def step(label, operator):
        started = time.perf_counter()
        assert operator() == {"FINISHED"}
        timings[label] = time.perf_counter() - started
        summary = json.loads(scene.faceswap.last_report)
        print(f"{label:<24} {summary['message']}", flush=True)

    scene.faceswap.sources.add().filepath = str(sample_image("astronaut"))
    step("swap (first source)", bpy.ops.faceswap.swap)
    scene.faceswap.sources[0].filepath = str(mirrored)
    step("update (second source)", bpy.ops.faceswap.update)
    group = strip.parent_meta()  # the face swap group: what the editor sees and splits at the top level
    group.split(int(group.frame_final_start + group.frame_final_duration // 2), "SOFT")
    step("split + update", bpy.ops.faceswap.update)
    bpy.ops.wm.save_mainfile()

    swapped = [s for s in compat.all_strips(scene.sequence_editor) if s.faceswap.role == "SWAPPED"]
    started = time.perf_counter()
    print("rendering the swapped timeline with Blender's sequencer: a contact sheet and an MP4", flush=True)
    with still_working("rendering"):
        rendered = render_demo(bpy, scene, swapped, work / "render")
    timings["render"] = time.perf_counter() - started
    bpy.ops.wm.save_mainfile()  # with the MP4 as its output: `blender -b demo.blend -a` renders it again
    timings["total"] = time.perf_counter() - begun
    print()
    print(f"contact sheet   {rendered.sheet}  (timeline frames {', '.join(map(str, rendered.frames))}: "
          "original | swapped, as Blender renders them)")
    length = scene.frame_end - scene.frame_start + 1
    print(f"movie           {rendered.movie}  ({length} frames, H.264, {length / info.fps:.1f} s)")
    print(f"extension zip   {archive}  (Blender 4.2+: Edit > Preferences > Get Extensions > Install from Disk)")
    print(f"project         {blend}")
    print(f"swapped frames  {bpy.path.abspath(swapped[0].directory)}NNNNNN.png (RGBA overlays, by media frame)")
    print(f"cache           {scene.faceswap.cache_dir} -> {project / 'faceswap_cache'}")
    print(f"strips          " + ", ".join(f"{s.name} (channel {s.channel}, frames {s.frame_final_start}-"
                                          f"{s.frame_final_end - 1})" for s in compat.top_strips(scene.sequence_editor)))
    print("timings         " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
    print(f"re-render       blender -b {blend} --python-exit-code 1 --python-expr \"import bpy; bpy.ops.faceswap.update()\" -a"
          "  (updates what changed, then renders the MP4 again)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
