#!/usr/bin/env python3
"""A stand-in for the `blender` executable where there is none: the Blender Python module (`bpy`)
run with Blender's command-line contract, for the farm tests and benchmarks on machines without a
Blender build.

    python scripts/bpy_blender.py -b -y edit.blend --python-exit-code 1 \\
        --python-expr "import bpy; bpy.ops.faceswap.update(frame_start=1, frame_end=8)" [-o OUT -a] [-- ...]

What it does as Blender does: it loads the user's preferences at start (so the extensions enabled there
are enabled, from $BLENDER_USER_RESOURCES), then handles the arguments in order, each acting on what
came before: a .blend path opens that file; `--python-exit-code N` sets the exit status of a later
failing `--python-expr`/`--python` (0, the default, reports the error and goes on, exit status 0);
`-s`/`-e` set the scene's frame range, `-o` the render output, `-F` its format, `-a` renders the
animation and `-f`/`--render-frame` the given frames (`7`, `1..4`, `1,3,5..6`); `--` ends Blender's
arguments (the rest stays in `sys.argv` for scripts, which holds the whole command line as in Blender).
`-b` and `-y` change nothing here: the module always runs in the background and runs scripts.
Any other argument is refused (exit status 2) rather than ignored.

Blender 4.2 cannot read saved preferences here: its `wm.read_userpref` reloads the interface's icon
textures without checking for a GPU, which a background Blender has not started, and crashes (SIGSEGV in
GPU_texture_create_2d under UI_icons_reload_internal_textures; 5.0 does not). A real `blender -b` reads them
at start without that operator. On 4.2 this stand-in starts with the factory preferences, says so on
stderr, and whoever runs it sets up what the preferences would have (tests/blender/farm_helpers.py does).
"""

from __future__ import annotations

import os
import shutil
import sys
import traceback


class Refused(Exception):
    """An argument this stand-in does not handle (exit status 2)."""


def render_frames(bpy, spec: str) -> None:
    scene = bpy.context.scene
    frames = []
    for part in spec.split(","):
        first, _, last = part.partition("..")
        frames.extend(range(int(first), int(last or first) + 1))
    start, end = scene.frame_start, scene.frame_end
    try:
        for frame in frames:  # a one-frame animation writes the frame-numbered file, as `-f` does
            scene.frame_start = scene.frame_end = frame
            bpy.ops.render.render(animation=True, scene=scene.name)
    finally:
        scene.frame_start, scene.frame_end = start, end


def reads_saved_preferences(version: tuple) -> bool:
    """Whether this Blender's bpy module can load the saved preferences (see the module's notes)."""
    return version[:2] != (4, 2)


def run_python(code: str, filename: str, exit_code: int) -> None:
    try:
        exec(compile(code, filename, "exec"), {"__name__": "__main__", "__file__": filename})
    except SystemExit:
        raise
    except BaseException:  # noqa: BLE001 - Blender prints any Python error and goes on, or exits
        traceback.print_exc()
        if exit_code:
            exit_now(exit_code)  # Blender exits at once, without running the remaining arguments


def main(argv: list[str]) -> int:
    import bpy

    sys.argv = [os.path.abspath(__file__)] + argv
    if reads_saved_preferences(bpy.app.version):
        bpy.ops.wm.read_userpref()  # Blender starts with the user's preferences (enabled extensions)
    else:
        print(f"bpy_blender.py: Blender {bpy.app.version_string} cannot read saved preferences in the background "
              "(its wm.read_userpref crashes): starting with the factory preferences", file=sys.stderr, flush=True)
    exit_code = 0
    args = iter(argv)

    def value(flag: str) -> str:
        try:
            return next(args)
        except StopIteration:
            raise Refused(f"{flag} needs a value") from None

    for arg in args:
        if arg == "--":
            break
        if arg in ("-b", "--background", "-y", "--enable-autoexec"):
            continue
        if arg == "--python-exit-code":
            exit_code = int(value(arg))
        elif arg == "--python-expr":
            run_python(value(arg), "<string>", exit_code)
        elif arg in ("-P", "--python"):
            path = value(arg)
            with open(path, encoding="utf-8") as file:
                run_python(file.read(), path, exit_code)
        elif arg in ("-s", "--frame-start"):
            bpy.context.scene.frame_start = int(value(arg))
        elif arg in ("-e", "--frame-end"):
            bpy.context.scene.frame_end = int(value(arg))
        elif arg in ("-o", "--render-output"):
            bpy.context.scene.render.filepath = value(arg)
        elif arg in ("-F", "--render-format"):
            bpy.context.scene.render.image_settings.file_format = value(arg)
        elif arg in ("-a", "--render-anim"):
            bpy.ops.render.render(animation=True, scene=bpy.context.scene.name)
        elif arg in ("-f", "--render-frame"):
            render_frames(bpy, value(arg))
        elif arg.endswith(".blend") and not arg.startswith("-"):
            if not os.path.isfile(arg):
                print(f"Error: Cannot read file \"{os.path.abspath(arg)}\": No such file or directory", flush=True)
                return 1
            bpy.ops.wm.open_mainfile(filepath=arg)
        else:
            raise Refused(f"argument {arg!r} is not handled by this stand-in for Blender")
    return 0


def exit_now(status: int) -> None:
    """End as Blender's own exit does: without the interpreter's teardown of the module, but with the
    session's temporary folder (blender_XXXXXX) removed, which os._exit alone would leave behind."""
    sys.stdout.flush()
    sys.stderr.flush()
    bpy = sys.modules.get("bpy")
    if bpy is not None and bpy.app.tempdir:
        shutil.rmtree(bpy.app.tempdir, ignore_errors=True)
    os._exit(status)


if __name__ == "__main__":
    try:
        status = main(sys.argv[1:])
    except Refused as exc:
        print(f"bpy_blender.py: {exc}", file=sys.stderr)
        status = 2
    exit_now(status)
