"""Coverage under each movie strip: which frames are analysed and which are swapped, as the engine
session last reported them (with every job, after previews, and on coverage refreshes when the shared
cache changes: `coverage_watch`), kept in `runtime.STATE`. Drawn as a two-row bar along the bottom
of each movie strip (each row 3 pixels high at any zoom) by a sequencer draw handler that only reads
that state; `strip_coverage` and `bar_rects` are the testable data part. Swapped frames where a face
was left as it was (turned past the swapper's yaw limit, as the swap jobs of this session reported)
show orange instead of green."""

from __future__ import annotations

import bpy

from . import compat, frame_mapping, paths, runtime, timeline
from .engine_client import engine_module

protocol = engine_module("protocol")  # a strip's coverage is counted in the engine's words

ANALYSED_COLOR = (0.35, 0.6, 1.0, 0.9)
SWAPPED_COLOR = (0.3, 0.9, 0.4, 0.9)
TURNED_AWAY_COLOR = (1.0, 0.6, 0.15, 0.95)  # drawn over the swapped row


def strip_coverage(scene, strip) -> dict:
    """{"frames": n, "analysed": n, "swapped": n, "analysed_runs": [(t0, t1)], "swapped_runs": [...]}:
    media frames the strip shows, and the runs of its timeline frames whose media frame is analysed or
    swapped."""
    try:
        shown = frame_mapping.shown_media_frames(strip)
    except frame_mapping.UnsupportedStrip:
        shown = {}
    picture = paths.picture(strip)
    used = set(shown.values())
    analysed = runtime.STATE.analysed.get(picture, set()) & used
    swapped = runtime.STATE.swapped.get(picture, set()) & used
    turned_away = runtime.STATE.turned_away.get(picture, set()) & swapped

    def to_timeline(done):
        return list(timeline.runs(sorted(t for t, m in shown.items() if m in done)))

    return {protocol.FRAMES: len(used), protocol.ANALYSED: len(analysed), protocol.SWAPPED: len(swapped),
            protocol.TURNED_AWAY: len(turned_away), "analysed_runs": to_timeline(analysed),
            "swapped_runs": to_timeline(swapped), "turned_away_runs": to_timeline(turned_away)}


def drawn_at(scene, strip):
    """The strip the user sees for `strip` where they are editing (itself, or the meta strip around
    it, such as its face swap group), or None when it is not at that level."""
    level = set(s.as_pointer() for s in timeline.current_level(scene))
    while strip is not None and strip.as_pointer() not in level:
        strip = strip.parent_meta()
    return strip


ROW_PIXELS = 3  # each row's height on the screen whatever the zoom (a fraction of a channel was 1-2 px)
BAR_BASE = 0.06  # where the bar starts above the strip's channel (its bottom edge), in channels


def bar_rects(view2d, channel: int, data: dict) -> list[tuple[tuple, list]]:
    """[(colour, [(x0, y0, x1, y1) in region pixels]), ...]: the analysed row at the bottom of the strip,
    the swapped row above it (turned-away frames over it in their colour)."""
    rows = []
    for runs, row, color in ((data["analysed_runs"], 0, ANALYSED_COLOR), (data["swapped_runs"], 1, SWAPPED_COLOR),
                             (data["turned_away_runs"], 1, TURNED_AWAY_COLOR)):
        rects = []
        for a, b in runs:
            x0, y = view2d.view_to_region(a, channel + BAR_BASE, clip=False)
            x1, _ = view2d.view_to_region(b, channel + BAR_BASE, clip=False)
            y0 = y + row * ROW_PIXELS
            rects.append((x0, y0, x1, y0 + ROW_PIXELS))
        if rects:
            rows.append((color, rects))
    return rows


def draw(region) -> None:
    """Draw the bars of every movie strip shown at the level being edited, in `region`'s pixels."""
    scene = compat.sequencer_scene(bpy.context)
    if region is None or scene is None or not scene.faceswap.show_coverage or scene.sequence_editor is None:
        return
    import gpu
    from gpu_extras.batch import batch_for_shader

    shader = gpu.shader.from_builtin("UNIFORM_COLOR")
    gpu.state.blend_set("ALPHA")
    for strip in timeline.movie_strips(scene):
        shown = drawn_at(scene, strip)
        if shown is None:
            continue
        for color, rects in bar_rects(region.view2d, shown.channel, strip_coverage(scene, strip)):
            vertices, indices = [], []
            for x0, y0, x1, y1 in rects:
                n = len(vertices)
                vertices += [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
                indices += [(n, n + 1, n + 2), (n, n + 2, n + 3)]
            batch = batch_for_shader(shader, "TRIS", {"pos": vertices}, indices=indices)
            shader.bind()
            shader.uniform_float("color", color)
            batch.draw(shader)
    gpu.state.blend_set("NONE")


def _draw():
    space = bpy.context.space_data
    if space is not None and space.view_type != "PREVIEW":  # a preview's main region shows the picture
        draw(bpy.context.region)


def register():
    if not bpy.app.background:
        runtime.BARS.handle = bpy.types.SpaceSequenceEditor.draw_handler_add(_draw, (), "WINDOW", "POST_PIXEL")


def unregister():
    if runtime.BARS.handle is not None:
        bpy.types.SpaceSequenceEditor.draw_handler_remove(runtime.BARS.handle, "WINDOW")
        runtime.BARS.handle = None
