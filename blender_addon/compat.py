"""Blender's API across the versions this extension supports (4.2 LTS to 5.2 LTS): the ONE module
that knows names Blender renamed. Every other module calls these functions instead.

- 4.4 renamed the sequencer's `sequences` / `sequences_all` to `strips` / `strips_all` and the
  `Sequence` type to `Strip` (and `context.selected_sequences` to `selected_strips`); 5.0 removed the
  old names.
- 5.0 added the workspace's `sequencer_scene` (`context.sequencer_scene`): the scene the sequencer
  shows, which may differ from the window's scene. Before 5.0 the sequencer showed `context.scene`.
- 4.5 added the `PATH_SUPPORTS_BLEND_RELATIVE` property option (without it, 4.5+ warns about `//` paths).
- 4.4 moved an action's F-curves into a channel bag per slot; 5.0 removed `action.fcurves`.
- `new_effect` takes `frame_end` and `seq1`/`seq2` in 4.2, `frame_end` and `input1`/`input2` in 4.5,
  `length` and `input1`/`input2` in 5.0.
- 5.1 gave the timing properties new names (`left_handle`, `right_handle`, `left_handle_offset`,
  `content_trim_start`, ...); the old ones (`frame_final_start`, `frame_offset_start`,
  `animation_offset_start`, ...) still work in 5.2, with a DeprecationWarning, and "are expected to be
  removed in Blender 6.0". The add-on still uses the old names: not adapted yet.

tests/blender/test_blender_compat.py fails when another module of the add-on uses one of these names.
"""

from __future__ import annotations

import bpy

# The names this module adapts; no other module of the add-on (or its tests) may use them directly.
RENAMED = frozenset({"strips", "strips_all", "sequences", "sequences_all", "Strip", "Sequence",
                     "sequencer_scene", "selected_strips", "selected_sequences", "selected_editable_strips",
                     "selected_editable_sequences", "active_sequence_strip"})


def strip_type():
    """The RNA type of every strip: `Strip` (4.4+), `Sequence` (4.2, 4.3)."""
    return getattr(bpy.types, "Strip", None) or bpy.types.Sequence


def top_strips(editor):
    """The strips at the top level of a sequence editor (not inside meta strips); has `new_movie`,
    `new_image`, `remove`."""
    return editor.strips if hasattr(editor, "strips") else editor.sequences


def all_strips(editor) -> list:
    """Every strip of a sequence editor, those inside meta strips included ([] for no editor)."""
    if editor is None:
        return []
    return list(editor.strips_all if hasattr(editor, "strips_all") else editor.sequences_all)


def in_meta_strip(editor) -> bool:
    """Whether the user is editing inside a meta strip (Tab)."""
    return editor is not None and len(editor.meta_stack) > 0


def has_sequencer_scene() -> bool:
    """Whether the workspace chooses the sequencer's scene (5.0+)."""
    return "sequencer_scene" in bpy.types.WorkSpace.bl_rna.properties


def sequencer_scene(context=None):
    """The scene the sequencer edits: the workspace's sequencer scene in 5.0+, else (before 5.0, or while
    it is unset, as in a factory or background session) the context's scene."""
    context = context or bpy.context
    workspace = getattr(context, "workspace", None)
    return getattr(context, "sequencer_scene", None) or getattr(workspace, "sequencer_scene", None) \
        or getattr(context, "scene", None)


def set_sequencer_scene(context, scene) -> None:
    """Make the sequencer edit `scene` (5.0+; before 5.0 it always edits the window's scene)."""
    if has_sequencer_scene() and context.workspace is not None:
        context.workspace.sequencer_scene = scene


def retiming_keys(strip):
    """A strip's retiming keys; () where the strip (or the Blender) has none."""
    return getattr(strip, "retiming_keys", ())


def blend_relative_path_options() -> set:
    """Options for a path property that may hold a `//` path (4.5+ warns unless the property says so)."""
    return {"PATH_SUPPORTS_BLEND_RELATIVE"} if bpy.app.version >= (4, 5, 0) else set()


def meta_contents(meta):
    """The strips directly inside a meta strip (`strips`, or `sequences` before 4.4)."""
    return top_strips(meta)


def animation_curves(scene) -> list:
    """The F-curves of the scene's action (strip properties are animated there). 4.4 moved them from
    `action.fcurves` into a channel bag per action slot; 5.0 removed `action.fcurves`."""
    data = scene.animation_data
    action = data.action if data is not None else None
    if action is None:
        return []
    if hasattr(action, "fcurves"):
        return list(action.fcurves)
    from bpy_extras import anim_utils

    bag = anim_utils.action_get_channelbag_for_slot(action, data.action_slot)
    return list(bag.fcurves) if bag is not None else []


def remove_animation_curve(scene, curve) -> None:
    data = scene.animation_data
    if hasattr(data.action, "fcurves"):
        data.action.fcurves.remove(curve)
        return
    from bpy_extras import anim_utils

    anim_utils.action_get_channelbag_for_slot(data.action, data.action_slot).fcurves.remove(curve)


def new_effect(strips, name: str, kind: str, channel: int, frame_start: int, length: int | None = None,
               input1=None, input2=None):
    """Add an effect strip to a strips collection: 5.0 takes a `length`, earlier versions a `frame_end`;
    4.4+ names the inputs `input1`/`input2`, earlier versions `seq1`/`seq2`."""
    parameters = strips.bl_rna.functions["new_effect"].parameters
    options = {}
    if length is not None:
        options["length" if "length" in parameters else "frame_end"] = (
            length if "length" in parameters else frame_start + length)
    for number, strip in ((1, input1), (2, input2)):
        if strip is not None:
            options[f"input{number}" if f"input{number}" in parameters else f"seq{number}"] = strip
    return strips.new_effect(name, kind, channel, frame_start, **options)
