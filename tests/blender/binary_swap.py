"""An editor's first swap in a fresh Blender whose user folder has the extension installed and enabled (by
`blender --command extension install-file -e`), through the extension's operators:

    blender -b --python-exit-code 1 --python binary_swap.py -- PROJECT_DIR CLIP SOURCE LAST_FRAME

Saves PROJECT_DIR/edit.blend with CLIP as a movie strip and SOURCE as the source face, swaps its timeline
frames 1 to LAST_FRAME (faceswap.swap), saves again, and prints the job's report as one JSON line.
"""

import sys
from pathlib import Path

import bpy

sys.path.insert(0, str(Path(__file__).parent))
from blender_helpers import add_movie, compat, script_arguments, select_only  # noqa: E402


def main(project: str, clip: str, source: str, last_frame: str) -> None:
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    compat().set_sequencer_scene(bpy.context, scene)
    scene.sequence_editor_create()
    scene.faceswap.sources.add().filepath = source
    Path(project).mkdir(parents=True, exist_ok=True)
    assert bpy.ops.wm.save_as_mainfile(filepath=str(Path(project) / "edit.blend")) == {"FINISHED"}
    scene = bpy.context.scene
    strip = add_movie(scene, clip)
    scene.frame_start, scene.frame_end = strip.frame_final_start, strip.frame_final_end - 1
    select_only(scene, strip)
    assert bpy.ops.faceswap.swap(frame_start=1, frame_end=int(last_frame)) == {"FINISHED"}
    assert bpy.ops.wm.save_mainfile() == {"FINISHED"}
    print(scene.faceswap.last_report)


if __name__ == "__main__":
    main(*script_arguments())
