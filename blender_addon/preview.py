"""Live preview: the frame under the playhead, remade when the playhead lands on it (scrubbing, stepping,
jumping; playback excepted) or a blend setting changes. Each swapped strip under the playhead gets that frame from the engine session's preview
sessions: recomposited from the cached analysis and swap (no model runs), or analysed and swapped first
when the frame is new. Only the swapped strips whose frame was written are refreshed.

Requests never pile up: while one is in flight, a newer playhead position or setting only marks the
next request, which goes out when the answer comes (the engine answers previews ahead of a running
job's next frame), so the frame where the playhead rests is the one made. In background mode (`blender -b`, farms) nothing is
previewed; `ACTIVE` lets the bpy module's tests and benchmark act as the interactive UI.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import bpy
from bpy.app.handlers import persistent

from . import engine_client, frame_mapping, jobs, paths, runtime, timeline

POLL_SECONDS = 0.01


@dataclass
class Flight:
    """The preview request in flight (at most one), the scene it is for and its swapped strips' names,
    and the scene whose playhead moved meanwhile (asked for when the answer comes)."""
    request: "engine_client.Request | None" = None
    scene: str = ""
    names: list[str] = field(default_factory=list)
    pending: str = ""


@dataclass
class Mode:
    ui: bool | None = None  # None: previews follow `not bpy.app.background`; tests set True


_flight = Flight()
ACTIVE = Mode()


def active() -> bool:
    return ACTIVE.ui if ACTIVE.ui is not None else not bpy.app.background


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
        media = paths.media_path(original)
        items.append({"media": media, "start": index, "stop": index + 1, "out": paths.output_root(scene, media)})
        strips.append(strip)
    return items, strips


def request(scene, force: bool = False) -> None:
    """Preview the frame under `scene`'s playhead (now, or when the request in flight has answered);
    `force`: even where live previews are off (the Preview Frame operator)."""
    if scene is None or not scene.faceswap.sources or not (force or active() and scene.faceswap.live_preview):
        return
    if _flight.request is not None:
        _flight.pending = scene.name
        return
    _send(scene)


def _send(scene) -> None:
    items, strips = items_under_playhead(scene)
    if not items:
        return
    job = {"kind": "preview", "settings": jobs.engine_settings(scene), "items": items}
    _flight.request = engine_client.SESSION.request(job)
    _flight.scene, _flight.names = scene.name, [s.name for s in strips]
    if jobs.synchronous():
        _flight.request.wait()
        _answered()
    elif not bpy.app.timers.is_registered(_poll):
        bpy.app.timers.register(_poll, first_interval=POLL_SECONDS)


def _poll():
    request_ = _flight.request
    if request_ is None:
        return None
    if not request_.poll():
        return POLL_SECONDS
    _answered()
    return POLL_SECONDS if _flight.request is not None else None


def _answered() -> None:
    """Apply the answer in flight: refresh the strips whose frame was written; send what waits."""
    request_ = _flight.request
    scene = bpy.data.scenes.get(_flight.scene)
    _flight.request, _flight.scene = None, ""
    if request_.result is not None:
        runtime.STATE.last_preview = request_.result
        asked = runtime.asked_frames(request_.job["items"])
        # a frame made for the first time stands in no more; a frame that gained or lost its face is keyed anew
        first_time = runtime.STATE.replace("swapped", asked, asked)
        faceless_changed = runtime.STATE.replace("faceless", request_.result.get("faceless", {}) or {}, asked)
        if scene is not None and request_.result.get("written"):
            if first_time or faceless_changed:
                timeline.point_elements(scene)
            refresh_strips(scene, _flight.names)
    pending, _flight.pending = _flight.pending, ""
    scene = bpy.data.scenes.get(pending)
    if scene is not None:
        _send(scene)


def refresh_strips(scene, names) -> None:
    """Make Blender read the swapped strips' frames again (their files changed under the same names)."""
    for strip in timeline.swapped_strips(scene):
        if strip.name in names:
            strip.directory = strip.directory  # setting the path drops the strip's cached images
    jobs._redraw()


@persistent
def on_frame_change(scene, *_args):
    if getattr(bpy.context.screen, "is_animation_playing", False):
        return
    request(scene)


@persistent
def on_load_post(*_args):
    _flight.request, _flight.scene, _flight.pending = None, "", ""


def register():
    bpy.app.handlers.frame_change_post.append(on_frame_change)
    bpy.app.handlers.load_post.append(on_load_post)


def unregister():
    for handlers, handler in ((bpy.app.handlers.frame_change_post, on_frame_change),
                              (bpy.app.handlers.load_post, on_load_post)):
        if handler in handlers:
            handlers.remove(handler)
