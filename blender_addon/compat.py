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
- 5.1 gave a strip's timing properties new names (`left_handle`, `content_start`, `content_trim_start`,
  ...: `TIMING_NAMES`); the old ones (`frame_final_start`, `frame_start`, `animation_offset_start`, ...)
  still work in 5.1 and 5.2, with a DeprecationWarning, and "are expected to be removed in Blender 6.0".
  The functions below read and write them by the new names where they exist.

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


# A strip's timing, by the names 5.1 gave it (on every strip type at once): {5.1+ name: the name before 5.1}.
# Probed in bpy 5.1.2 and 5.2.3 on movie, image and meta strips, trimmed or not: each pair reads the same
# value, and setting either name leaves the strip the same.
TIMING_NAMES = {
    "left_handle": "frame_final_start",  # the first timeline frame the strip shows
    "right_handle": "frame_final_end",  # the timeline frame after its last
    "duration": "frame_final_duration",  # right_handle - left_handle
    "content_start": "frame_start",  # the timeline frame of the content's first frame (a float)
    "content_duration": "frame_duration",  # the content's frames, before the handles trim it
    "left_handle_offset": "frame_offset_start",  # frames the left handle hides of the content's start
    "right_handle_offset": "frame_offset_end",  # frames the right handle hides of its end
    "content_trim_start": "animation_offset_start",  # media frames skipped before the content's first
    "content_trim_end": "animation_offset_end",  # media frames skipped after its last
}
_NEW_TIMING_NAMES = "left_handle" in strip_type().bl_rna.properties  # this Blender's API, fixed for the session


def _timing_name(name: str) -> str:
    return name if _NEW_TIMING_NAMES else TIMING_NAMES[name]


def left_handle(strip) -> int:
    """The first timeline frame the strip shows."""
    return getattr(strip, _timing_name("left_handle"))


def right_handle(strip) -> int:
    """The timeline frame after the last one the strip shows."""
    return getattr(strip, _timing_name("right_handle"))


def set_handles(strip, left: int, right: int) -> None:
    """Move the strip's handles (the left one first), as dragging them does: its content stays in place."""
    setattr(strip, _timing_name("left_handle"), left)
    setattr(strip, _timing_name("right_handle"), right)


def content_start(strip) -> float:
    """The timeline frame where the strip's content (its first frame, before the handles) begins."""
    return getattr(strip, _timing_name("content_start"))


def content_duration(strip) -> int:
    """The frames of the strip's content before the handles trim it."""
    return getattr(strip, _timing_name("content_duration"))


def handle_offsets(strip) -> tuple[float, float]:
    """(left, right): the frames each handle hides of the content's start and end."""
    return getattr(strip, _timing_name("left_handle_offset")), getattr(strip, _timing_name("right_handle_offset"))


def clear_handle_offsets(strip) -> None:
    """Put both handles at the content's ends (the left one first)."""
    setattr(strip, _timing_name("left_handle_offset"), 0)
    setattr(strip, _timing_name("right_handle_offset"), 0)


def content_trim(strip) -> tuple[int, int]:
    """(start, end): the media frames the strip's content skips before its first and after its last frame."""
    return getattr(strip, _timing_name("content_trim_start")), getattr(strip, _timing_name("content_trim_end"))
