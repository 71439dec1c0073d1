"""Render frames of a .blend in a fresh bpy process (a crash there cannot take the test run down).

    python render_frames.py FILE.blend OUT_FOLDER FRAME [FRAME ...]

Writes OUT_FOLDER/<frame>.png for each frame; the exit code is the process's (139 on a segfault).
No add-on is needed: the swapped strips are plain image strips.
"""

import sys

import bpy

blend, out, *frames = sys.argv[1:]
bpy.ops.wm.open_mainfile(filepath=blend)
scene = bpy.context.scene
for frame in frames:
    scene.frame_set(int(frame))
    scene.render.filepath = f"{out}/{frame}.png"
    bpy.ops.render.render(write_still=True, scene=scene.name)
