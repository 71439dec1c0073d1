"""Preview: when the playhead rests (0.3 s) on a frame whose swapped output is missing, compute that
frame first (a one-frame swap job) and refresh the preview. Interactive sessions only."""

from __future__ import annotations

import bpy
from bpy.app.handlers import persistent

from . import jobs

REST_SECONDS = 0.3
_pending = {"scene": None, "frame": None}


@persistent
def on_frame_change(scene, *_args):
    if bpy.app.background or jobs.running() or not scene.faceswap.auto_preview:
        return
    if getattr(bpy.context.screen, "is_animation_playing", False):
        return
    _pending.update(scene=scene.name, frame=scene.frame_current)
    if not bpy.app.timers.is_registered(_rest):
        bpy.app.timers.register(_rest, first_interval=REST_SECONDS)


def _rest():
    from .ops import preview_items, refresh_images

    scene = bpy.data.scenes.get(_pending["scene"] or "")
    if scene is None or jobs.running() or scene.frame_current != _pending["frame"]:
        return None
    items = preview_items(scene, scene.frame_current)
    if items and scene.faceswap.source_paths():
        try:
            jobs.start(scene, "swap", items, lambda s, job: refresh_images(s))
        except (RuntimeError, OSError):
            pass
    return None


def register():
    bpy.app.handlers.frame_change_post.append(on_frame_change)


def unregister():
    if on_frame_change in bpy.app.handlers.frame_change_post:
        bpy.app.handlers.frame_change_post.remove(on_frame_change)
