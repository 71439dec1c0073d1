"""Matching the scene's frame to a clip: a clip whose size differs from the scene's shows a border around its
picture (or is cut), and an editor who swaps faces in one shot usually wants the scene at the clip's size. The
Active Strip panel says so and offers this operator (Blender's own Set Render Size acts on the active strip
only, which is the face swap group once a shot is swapped)."""

from __future__ import annotations

import bpy
from bpy.props import StringProperty

from . import timeline
from .compat import sequencer_scene


class FACESWAP_OT_match_scene_size(bpy.types.Operator):
    """Set the scene's resolution to the clip's frame size, so that its picture fills the frame"""
    bl_idname = "faceswap.match_scene_size"
    bl_label = "Match Scene to Clip"
    bl_options = {"UNDO"}  # one undo step; no redo panel (nothing to adjust)

    strip: StringProperty(name="Movie", description="The movie strip whose size the scene takes",
                          options={"HIDDEN", "SKIP_SAVE"})

    def execute(self, context):
        scene = sequencer_scene(context)
        movie = next((s for s in timeline.movie_strips(scene) if s.name == self.strip), None)
        element = movie.elements[0] if movie is not None and len(movie.elements) else None
        if element is None or not element.orig_width or not element.orig_height:
            self.report({"ERROR"}, f"no movie strip {self.strip!r} with a known frame size: click the clip's strip")
            return {"CANCELLED"}
        scene.render.resolution_x, scene.render.resolution_y = element.orig_width, element.orig_height
        self.report({"INFO"}, f"the scene is now {element.orig_width} x {element.orig_height}, as {movie.name!r}")
        return {"FINISHED"}


register, unregister = bpy.utils.register_classes_factory((FACESWAP_OT_match_scene_size,))
