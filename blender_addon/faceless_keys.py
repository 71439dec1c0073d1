"""Frames without a face cost playback nothing: the swapped strip's own opacity is keyed to 0 there.

The engine writes a frame without a face as one transparent pixel, and yet Blender reads that file,
scales it to the render's size and blends it: about 1 ms a frame, whatever the image's size
(docs/benchmarks.md). A strip whose opacity is 0 Blender does not read at all: its alpha-over blend
passes the picture below through untouched. So the swapped strip's `blend_alpha` is keyed, with
constant interpolation, to 0 from each timeline frame that shows a media frame the engine wrote
without a face, and back to 1 where a face comes. The picture is the same either way (the pixel is
transparent under any transform, crop or flip), and the shot's own opacity and fades are its face
swap group's (`shot_group`), so this property is the extension's. Where the engine has not said
which frames have no face, the keys are left as they are; a frame it has not said about shows its file.

An opacity the editor sets on the swapped strip itself (a value other than 1 without keys, or keys that
are not this module's: not constant, not 0 or 1, or with modifiers) is theirs: `set_by_hand` tells, and
the timeline keeps it, saying that those frames are then not keyed out (`timeline.key_faceless`).
"""

from __future__ import annotations

from . import compat

PROPERTY = "blend_alpha"


def opacity_keys(first_frame: int, media_frames: list[int], faceless: set[int]) -> list[tuple[int, float]]:
    """(timeline frame, opacity) at the strip's first frame and wherever the opacity changes, for a strip
    whose element i (media frame `media_frames[i]`) shows at `first_frame + i`; [] when every frame shows."""
    shown = [0.0 if index in faceless else 1.0 for index in media_frames]
    if 0.0 not in shown:
        return []
    return [(first_frame + i, value) for i, value in enumerate(shown) if i == 0 or value != shown[i - 1]]


def set_by_hand(scene, strip) -> bool:
    """Whether the strip's opacity is the editor's rather than this module's (see the module's doc)."""
    curve = _curve(scene, strip.path_from_id(PROPERTY))
    if curve is None:
        return strip.blend_alpha != 1.0
    return bool(len(curve.modifiers)) or any(point.interpolation != "CONSTANT" or point.co[1] not in (0.0, 1.0)
                                             for point in curve.keyframe_points)


def key_opacity(scene, strip, keys: list[tuple[int, float]]) -> bool:
    """Give `strip`'s opacity exactly `keys` (constant between them; none: opacity 1, no curve), unless it
    has them already. Returns whether anything changed."""
    path = strip.path_from_id(PROPERTY)
    curve = _curve(scene, path)
    if _holds(curve, keys) and (keys or strip.blend_alpha == 1.0):
        return False
    if curve is not None:
        compat.remove_animation_curve(scene, curve)
    strip.blend_alpha = 1.0
    if keys:
        strip.keyframe_insert(PROPERTY, frame=keys[0][0])  # creates the curve, in any Blender's action layout
        curve = _curve(scene, path)
        points = curve.keyframe_points
        points.add(len(keys) - len(points))
        for point, (frame, value) in zip(points, keys):
            point.co = (frame, value)
            point.interpolation = "CONSTANT"
        curve.update()
    return True


def _curve(scene, path: str):
    return next((c for c in compat.animation_curves(scene) if c.data_path == path), None)


def _holds(curve, keys: list[tuple[int, float]]) -> bool:
    if curve is None:
        return not keys
    points = curve.keyframe_points
    return (len(points) == len(keys) and not len(curve.modifiers)
            and all(p.interpolation == "CONSTANT" and tuple(p.co) == (float(f), v) for p, (f, v) in zip(points, keys)))
