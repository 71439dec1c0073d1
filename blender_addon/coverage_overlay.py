"""Coverage under each movie strip: which frames are analysed (from the engine's cache, reported with
every job and refreshed by `coverage_watch` when the shared cache changes) and which are swapped (files in the output folder). Drawn as a thin two-row bar along the
bottom of each movie strip by a sequencer draw handler; `strip_coverage` is the testable data part.
Swapped frames where a face was left as it was (turned past the swapper's yaw limit, as the swap
jobs of this session reported) show orange instead of green."""

from __future__ import annotations

import time

import bpy

from . import compat, frame_mapping, paths, timeline

_analysed: dict[str, set[int]] = {}
_turned_away: dict[str, set[int]] = {}  # frames with a face left as it was (turned past the yaw limit)
_swapped_memo: dict[str, tuple[float, set[int]]] = {}
_handle = None

ANALYSED_COLOR = (0.35, 0.6, 1.0, 0.9)
SWAPPED_COLOR = (0.3, 0.9, 0.4, 0.9)
TURNED_AWAY_COLOR = (1.0, 0.6, 0.15, 0.95)  # drawn over the swapped row


def remember_analysed(analysed: dict) -> None:
    for media, frames in analysed.items():
        _analysed.setdefault(media, set()).update(int(f) for f in frames)


def replace_analysed(media: str, asked, found) -> None:
    """A refresh answered `found` among the media frames `asked`: frames no longer cached drop out."""
    frames = _analysed.setdefault(media, set())
    frames.difference_update(asked)
    frames.update(int(f) for f in found)


def remember_turned_away(turned_away: dict) -> None:
    """Frames a swap job reported with faces left untouched (turned past the swapper's yaw limit)."""
    for media, frames in turned_away.items():
        _turned_away.setdefault(media, set()).update(int(f) for f in frames)


def forget_analysed() -> None:
    _analysed.clear()
    _turned_away.clear()


def invalidate() -> None:
    _swapped_memo.clear()


def analysed_frames(media: str) -> set[int]:
    return _analysed.get(media, set())


def swapped_frames(scene, media: str, max_age: float = 2.0) -> set[int]:
    now = time.monotonic()
    memo = _swapped_memo.get(media)
    if memo is None or now - memo[0] > max_age:
        memo = (now, timeline.swapped_on_disk(scene, media))
        _swapped_memo[media] = memo
    return memo[1]


def strip_coverage(scene, strip) -> dict:
    """{"frames": n, "analysed": n, "swapped": n, "analysed_runs": [(t0, t1)], "swapped_runs": [...]}:
    media frames the strip shows, and the runs of its timeline frames whose media frame is analysed or
    swapped."""
    try:
        shown = frame_mapping.shown_media_frames(strip)
    except frame_mapping.UnsupportedStrip:
        return {"frames": 0, "analysed": 0, "swapped": 0, "turned_away": 0, "analysed_runs": [],
                "swapped_runs": [], "turned_away_runs": []}
    media = paths.media_path(strip)
    used = set(shown.values())
    analysed, swapped = analysed_frames(media) & used, swapped_frames(scene, media) & used
    turned_away = _turned_away.get(media, set()) & swapped

    def to_timeline(done):
        return list(timeline.runs(sorted(t for t, m in shown.items() if m in done)))

    return {"frames": len(used), "analysed": len(analysed), "swapped": len(swapped), "turned_away": len(turned_away),
            "analysed_runs": to_timeline(analysed), "swapped_runs": to_timeline(swapped),
            "turned_away_runs": to_timeline(turned_away)}


def drawn_at(scene, strip):
    """The strip the user sees for `strip` where they are editing (itself, or the meta strip around
    it, such as its face swap group), or None when it is not at that level."""
    level = set(s.as_pointer() for s in timeline.current_level(scene))
    while strip is not None and strip.as_pointer() not in level:
        strip = strip.parent_meta()
    return strip


def _draw():
    scene = compat.sequencer_scene(bpy.context)
    if scene is None or not scene.faceswap.show_coverage or scene.sequence_editor is None:
        return
    import gpu
    from gpu_extras.batch import batch_for_shader

    shader = gpu.shader.from_builtin("UNIFORM_COLOR")
    gpu.state.blend_set("ALPHA")
    for strip in timeline.movie_strips(scene):
        shown = drawn_at(scene, strip)
        if shown is None:
            continue
        data = strip_coverage(scene, strip)
        base = shown.channel + 0.04
        for runs, offset, color in ((data["analysed_runs"], 0.0, ANALYSED_COLOR),
                                    (data["swapped_runs"], 0.05, SWAPPED_COLOR),
                                    (data["turned_away_runs"], 0.05, TURNED_AWAY_COLOR)):
            if not runs:
                continue
            vertices, indices = [], []
            for a, b in runs:
                n = len(vertices)
                y0, y1 = base + offset, base + offset + 0.04
                vertices += [(a, y0), (b, y0), (b, y1), (a, y1)]
                indices += [(n, n + 1, n + 2), (n, n + 2, n + 3)]
            batch = batch_for_shader(shader, "TRIS", {"pos": vertices}, indices=indices)
            shader.bind()
            shader.uniform_float("color", color)
            batch.draw(shader)
    gpu.state.blend_set("NONE")


def register():
    global _handle
    if not bpy.app.background:
        _handle = bpy.types.SpaceSequenceEditor.draw_handler_add(_draw, (), "WINDOW", "POST_VIEW")


def unregister():
    global _handle
    if _handle is not None:
        bpy.types.SpaceSequenceEditor.draw_handler_remove(_handle, "WINDOW")
        _handle = None
