"""Copying and moving what Blender stores on a strip: property values, modifiers, and the animation
curves (keyframes, drivers) that drive them. Plain data work on the main thread.

Animation of a strip lives in its scene's action, under data paths that name the strip
(`sequence_editor.strips_all["shot"].transform.offset_x`); moving a property from one strip to another
therefore moves its curves by rewriting their paths, and mirroring it copies the keyframes.
"""

from __future__ import annotations

from . import compat

# Keyframe attributes in the order that keeps handles where they were (types before positions).
_KEYFRAME_ATTRIBUTES = ("interpolation", "handle_left_type", "handle_right_type", "co", "handle_left",
                        "handle_right", "easing", "back", "amplitude", "period", "type")
_SKIPPED = {"rna_type", "name", "type", "is_active", "show_expanded", "active", "select", "is_valid"}


def copy_rna(source, target) -> None:
    """Copy every editable value of an RNA struct onto another of the same type: nested structs
    (colour balance, curve mappings) by value, references (a mask strip, a node group) as references."""
    for prop in source.bl_rna.properties:
        name = prop.identifier
        if name in _SKIPPED:
            continue
        value = getattr(source, name)
        if prop.type == "POINTER":
            if prop.is_readonly:
                if value is not None:
                    copy_rna(value, getattr(target, name))
            else:
                setattr(target, name, value)
        elif prop.type == "COLLECTION":
            _copy_collection(name, value, getattr(target, name))
        elif not prop.is_readonly:
            setattr(target, name, value)
    if target.bl_rna.identifier == "CurveMapping":
        target.update()  # recompute the curves' tables from the points just set


def _copy_collection(name: str, source, target) -> None:
    if name == "points":  # a curve of a CurveMapping: same number of points, then their values
        while len(target) < len(source):
            target.new(0.5, 0.5)
        while len(target) > len(source):
            target.remove(target[len(target) - 1])
        for a, b in zip(source, target):
            b.location, b.handle_type = a.location, a.handle_type
    elif len(source) == len(target):  # fixed collections, e.g. the four curves of a CurveMapping
        for a, b in zip(source, target):
            copy_rna(a, b)


def animation_curves(scene) -> list:
    """Keyframe curves and drivers of the scene (strip properties are animated on the scene)."""
    drivers = list(scene.animation_data.drivers) if scene.animation_data is not None else []
    return compat.animation_curves(scene) + drivers


def curves_under(scene, path: str) -> list:
    """Curves and drivers whose data path is `path` or lies under it."""
    return [c for c in animation_curves(scene) if c.data_path == path or c.data_path.startswith(path + ".")
            or c.data_path.startswith(path + "[")]


def move_curves(scene, old_path: str, new_path: str) -> None:
    """Re-point curves and drivers of `old_path` (and of what lies under it) to `new_path`."""
    for curve in curves_under(scene, old_path):
        curve.data_path = new_path + curve.data_path[len(old_path):]


def mirror_property(scene, source, target, prop: str) -> None:
    """Give `target.prop` the value and the keyframes of `source.prop` (both the same RNA type)."""
    source_path, target_path = source.path_from_id(prop), target.path_from_id(prop)
    for curve in compat.animation_curves(scene):
        if curve.data_path == target_path:
            compat.remove_animation_curve(scene, curve)
    value = getattr(source, prop)
    setattr(target, prop, value[:] if hasattr(value, "__len__") and not isinstance(value, str) else value)
    for curve in compat.animation_curves(scene):
        if curve.data_path == source_path and len(curve.keyframe_points):
            _copy_curve(scene, curve, target, prop, target_path)


def _copy_curve(scene, curve, owner, prop: str, path: str) -> None:
    index = curve.array_index if hasattr(getattr(owner, prop), "__len__") else -1
    owner.keyframe_insert(prop, index=index, frame=curve.keyframe_points[0].co[0])  # creates the curve
    copy = next(c for c in compat.animation_curves(scene) if c.data_path == path and c.array_index == curve.array_index)
    points = copy.keyframe_points
    points.add(len(curve.keyframe_points) - len(points))
    for a, b in zip(curve.keyframe_points, points):
        for name in _KEYFRAME_ATTRIBUTES:
            setattr(b, name, getattr(a, name))
    copy.extrapolation = curve.extrapolation
    for modifier in curve.modifiers:
        copy_rna(modifier, copy.modifiers.new(modifier.type))
    copy.update()


def driven(scene, strip_struct, prop: str) -> bool:
    drivers = scene.animation_data.drivers if scene.animation_data is not None else ()
    path = strip_struct.path_from_id(prop)
    return any(d.data_path == path for d in drivers)


def move_modifiers(scene, source, target) -> None:
    """Move `source`'s modifiers in front of `target`'s, with their animation. Blender has no call to
    reorder or move a modifier, so `target`'s list is rebuilt from copies: the moved ones, then its own."""
    moved = [(m.name, m.path_from_id(), m) for m in source.modifiers]
    kept = list(target.modifiers)
    moved_copies = [(name, path, _copy_modifier(m, target)) for name, path, m in moved]
    kept_copies = [(m.name, _copy_modifier(m, target)) for m in kept]
    for modifier in kept:
        target.modifiers.remove(modifier)
    for name, copy in kept_copies:
        copy.name = name  # the same names: their curves stay valid
    for name, path, copy in moved_copies:
        copy.name = name  # Blender adds a suffix when the group already has one of that name
        move_curves(scene, path, copy.path_from_id())
    source.modifiers.clear()


def _copy_modifier(modifier, target):
    copy = target.modifiers.new(name=modifier.name + " (moving)", type=modifier.type)
    copy_rna(modifier, copy)
    return copy
