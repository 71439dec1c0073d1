"""Live preview: the frame under the playhead, remade when the playhead lands on it (scrubbing, stepping,
jumping; playback excepted) or a blend setting changes. Each swapped strip under the playhead gets that frame from the engine session's preview
sessions: recomposited from the cached analysis and swap (no model runs), or analysed and swapped first
when the frame is new. Only the swapped strips whose frame was written are refreshed.

Requests never pile up: while one is in flight, a newer playhead position or setting only marks the
next request, which goes out when the answer comes (the engine answers previews ahead of a running
job's next frame), so the frame where the playhead rests is the one made. In background mode (`blender -b`, farms) nothing is
previewed; `runtime.PREVIEW.ui` lets the bpy module's tests and benchmark act as the interactive UI. The
request in flight is `runtime.PREVIEW`.
"""

from __future__ import annotations

import bpy
from bpy.app.handlers import persistent

from . import frame_mapping, jobs, paths, redraw, runtime, timeline
from .engine_client import engine_module

protocol = engine_module("protocol")  # the engine's request and answer keys
POLL_SECONDS = 0.01


def active() -> bool:
    return runtime.PREVIEW.ui if runtime.PREVIEW.ui is not None else not bpy.app.background


def items_under_playhead(scene) -> tuple[list[dict], list]:
    """Engine items (one frame each) for the swapped originals under the playhead, and their swapped strips."""
    frame = scene.frame_current
    items, strips = [], []
    for original in timeline.originals(scene):
        strip = timeline.overlay_of(original)
        if strip is None or original.mute:
            continue
        try:
            index = frame_mapping.media_frame_at(original, frame)
        except frame_mapping.UnsupportedStrip:
            continue
        if index is None:
            continue
        media, deinterlace = paths.media_path(original), paths.deinterlaced(original)
        items.append(protocol.item(media, index, index + 1, timeline.outputs_root(scene, original), deinterlace))
        strips.append(strip)
    return items, strips


def request(scene, force: bool = False) -> None:
    """Preview the frame under `scene`'s playhead (now, or when the request in flight has answered);
    `force`: even where live previews are off (the Preview Frame operator)."""
    if scene is None or not scene.faceswap.sources or not (force or active() and scene.faceswap.live_preview):
        return
    if runtime.PREVIEW.request is not None:
        runtime.PREVIEW.pending = scene.name
        return
    _send(scene)


def _send(scene) -> None:
    items, strips = items_under_playhead(scene)
    if not items:
        return
    job = {protocol.KIND: "preview", protocol.SETTINGS: jobs.engine_settings(scene), protocol.ITEMS: items}
    runtime.PREVIEW.request = runtime.ENGINE.request(job)
    runtime.PREVIEW.scene, runtime.PREVIEW.names = scene.name, [s.name for s in strips]
    if jobs.synchronous():
        runtime.PREVIEW.request.wait()
        _answered()
    elif not bpy.app.timers.is_registered(_poll):
        bpy.app.timers.register(_poll, first_interval=POLL_SECONDS)


def _poll():
    request_ = runtime.PREVIEW.request
    if request_ is None:
        return None
    if not request_.poll():
        return POLL_SECONDS
    _answered()
    return POLL_SECONDS if runtime.PREVIEW.request is not None else None


def _answered() -> None:
    """Apply the answer in flight: refresh the strips whose frame was written; send what waits."""
    request_ = runtime.PREVIEW.request
    scene = bpy.data.scenes.get(runtime.PREVIEW.scene)
    runtime.PREVIEW.request, runtime.PREVIEW.scene = None, ""
    if request_.result is not None:
        runtime.STATE.last_preview = request_.result
        asked = runtime.asked_frames(request_.job[protocol.ITEMS])
        # a frame made for the first time stands in no more; a frame that gained or lost its face is keyed anew
        first_time = runtime.STATE.replace(protocol.SWAPPED, asked, asked)
        faceless_changed = runtime.STATE.replace(protocol.FACELESS, request_.result.get(protocol.FACELESS, {}) or {},
                                                 asked)
        if scene is not None and request_.result.get(protocol.WRITTEN):
            if first_time or faceless_changed:
                timeline.point_elements(scene)
            refresh_strips(scene, runtime.PREVIEW.names)
    pending, runtime.PREVIEW.pending = runtime.PREVIEW.pending, ""
    scene = bpy.data.scenes.get(pending)
    if scene is not None:
        _send(scene)


def refresh_strips(scene, names) -> None:
    """Make Blender read the swapped strips' frames again (their files changed under the same names)."""
    for strip in timeline.swapped_strips(scene):
        if strip.name in names:
            strip.directory = strip.directory  # setting the path drops the strip's cached images
    redraw.redraw()


@persistent
def on_frame_change(scene, *_args):
    if getattr(bpy.context.screen, "is_animation_playing", False):
        return
    request(scene)


@persistent
def on_load_post(*_args):
    runtime.PREVIEW.request, runtime.PREVIEW.scene, runtime.PREVIEW.pending = None, "", ""


def register():
    bpy.app.handlers.frame_change_post.append(on_frame_change)
    bpy.app.handlers.load_post.append(on_load_post)


def unregister():
    for handlers, handler in ((bpy.app.handlers.frame_change_post, on_frame_change),
                              (bpy.app.handlers.load_post, on_load_post)):
        if handler in handlers:
            handlers.remove(handler)
