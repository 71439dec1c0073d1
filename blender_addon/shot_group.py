"""The face swap group: a meta strip that holds one original movie strip and its swapped strip.

Why a group. The swapped strip is an RGBA image of the swapped faces laid over the original, and
Blender composites strips one at a time. Whatever acts on the *picture of the shot* - its opacity and
fades, its blend mode over the shots below, its colour modifiers, saturation and multiply, a cross-fade
or wipe into the next shot, a speed effect - must act on the original and its overlay together. Copied
onto the overlay alone they render wrong (measured against the engine's full swapped frame: opacity 0.5
over a background is off by up to 51/255, a multiply blend by 179, a colour balance by 39, saturation
by 168, and a cross-fade hides the overlay altogether). Carried by a meta strip around both, the render
matches within the decoder's own 5/255 (docs/blender.md, "Edits the swapped face follows").

Geometry is the other kind: transform, crop, flip and the fit to the scene act on each image alone, and
the overlay has exactly the original's size, so the overlay mirrors them (values and keyframes, see
`timeline.mirror_geometry`) and stays where the editor set them, on the original.

So the group carries the composite properties: they move from the original to the group on every
update (an editor may set them on either), and effects fed by the original are fed by the group.
"""

from __future__ import annotations

from . import compat, strip_copy

SUFFIX = " (face swap)"
ROLE = "GROUP"
NEUTRAL_BLEND = "ALPHA_OVER"
# Properties of the shot's picture, with the value that leaves the picture unchanged and a label.
COMPOSITE = (("blend_alpha", "opacity"), ("color_saturation", "saturation"), ("color_multiply", "multiply"))


def group_of(strip):
    """The face swap group that holds `strip`, or None."""
    parent = strip.parent_meta()
    return parent if parent is not None and parent.faceswap.role == ROLE else None


def siblings(scene, strip):
    """The strips collection `strip` lives in: its meta strip's, or the sequence editor's top level."""
    parent = strip.parent_meta()
    return compat.meta_contents(parent) if parent is not None else compat.top_strips(scene.sequence_editor)


def ensure(scene, original) -> tuple:
    """The original's group, made if missing, carrying the shot's composite properties.
    Returns (group, problems): what could not be moved, each with what to do."""
    group = group_of(original) or _wrap(scene, original)
    return group, hoist(scene, original, group)


def originals_in(group) -> list:
    return [s for s in compat.meta_contents(group) if s.type == "MOVIE" and s.faceswap.role == "ORIGINAL"]


def pairs_in(group) -> tuple[dict, list]:
    """({original: its swapped strip or None}, swapped strips of no original) in one group. A swapped
    strip belongs to the original it links to; a split or duplicated group holds copies whose original
    got a new identity, so a lone unlinked swapped strip goes to the lone original without one."""
    inner = list(compat.meta_contents(group))
    swapped = [s for s in inner if s.type == "IMAGE" and s.faceswap.role == "SWAPPED"]
    pairs = {o: next((s for s in swapped if s.faceswap.link == o.faceswap.uid), None) for o in originals_in(group)}
    loose = [s for s in swapped if s not in pairs.values()]
    alone = [o for o, s in pairs.items() if s is None]
    if len(alone) == 1 and len(loose) == 1:
        pairs[alone[0]] = loose.pop()
    return pairs, loose


def fit(group) -> None:
    """Fit the group's handles to its originals' trimmed range, when the editor moved or trimmed them
    inside the group since the last update. Moving the whole group moves both; trimming or splitting
    the group itself leaves the originals as they were, and that trim is the editor's: it stays."""
    inner = originals_in(group)
    if not inner:
        return
    span = (min(compat.left_handle(s) for s in inner), max(compat.right_handle(s) for s in inner))
    o0, o1, g0, g1 = group.faceswap.synced
    left, right = compat.left_handle(group), compat.right_handle(group)
    moved = left - g0 if right - left == g1 - g0 else 0
    if (o0, o1, g0, g1) == (0, 0, 0, 0) or span != (o0 + moved, o1 + moved):
        compat.clear_handle_offsets(group)
        compat.set_handles(group, *span)
    group.faceswap.synced = (*span, compat.left_handle(group), compat.right_handle(group))


def _wrap(scene, original):
    channel = original.channel
    group = siblings(scene, original).new_meta(original.name + SUFFIX, channel, compat.left_handle(original))
    _feed_effects_from(scene, original, group)  # first: Blender moves a strip's effects into the meta with it
    original.move_to_meta(group)
    group.channel = channel
    group.faceswap.role = ROLE
    group.color_tag, group.select = original.color_tag, original.select
    group.blend_type = original.blend_type
    original.blend_type = NEUTRAL_BLEND
    return group


def hoist(scene, original, group) -> list[str]:
    """Move the composite properties the editor set on the original (inside the group) to the group."""
    problems = []
    if original.blend_type != NEUTRAL_BLEND:
        group.blend_type, original.blend_type = original.blend_type, NEUTRAL_BLEND
    for prop, label in COMPOSITE:
        problem = _hoist_value(scene, original, group, prop, label)
        if problem:
            problems.append(problem)
    if len(original.modifiers):
        strip_copy.move_modifiers(scene, original, group)
    _feed_effects_from(scene, original, group)
    return problems


def _hoist_value(scene, original, group, prop: str, label: str) -> str | None:
    original_path, group_path = original.path_from_id(prop), group.path_from_id(prop)
    animated_original = bool(strip_copy.curves_under(scene, original_path))
    animated_group = bool(strip_copy.curves_under(scene, group_path))
    value = getattr(original, prop)
    if not animated_original and value == 1.0:
        return None
    if animated_group or (animated_original and getattr(group, prop) != 1.0):
        return (f"{label} of {original.name!r} is set both on it and on its group {group.name!r}, and one of them "
                f"is animated: set {label} on the group only (remove it from {original.name!r})")
    if animated_original:
        strip_copy.move_curves(scene, original_path, group_path)
        setattr(group, prop, value)
    else:
        setattr(group, prop, getattr(group, prop) * value)
    setattr(original, prop, 1.0)
    return None


def _feed_effects_from(scene, original, group) -> None:
    """Transitions and other effects that took the original as input take the group instead."""
    for strip in compat.all_strips(scene.sequence_editor):
        if strip.parent_meta() == group:
            continue
        for name in ("input_1", "input_2"):
            if getattr(strip, name, None) == original:
                setattr(strip, name, group)


def has_composite_edits(original) -> bool:
    """Whether the original carries a composite property that the next update moves to its group."""
    return (original.blend_type != NEUTRAL_BLEND or len(original.modifiers) > 0
            or any(getattr(original, prop) != 1.0 for prop, _ in COMPOSITE))


def groups(scene) -> list:
    return [s for s in compat.all_strips(scene.sequence_editor) if s.type == "META" and s.faceswap.role == ROLE]
