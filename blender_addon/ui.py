"""The "Face Swap" tab of the sequencer sidebar. Drawing only reads: the scene's settings, and the
runtime state the engine session filled in (`runtime.STATE`); it never lists, stats, opens or creates
a file (tests/blender/test_blender_draw.py makes such calls fail while everything draws)."""

from __future__ import annotations

import os
import textwrap

import bpy

from . import coverage_overlay, paths, runtime, shot_group, timeline
from .compat import left_handle, right_handle, sequencer_scene
from .engine_client import engine_module

protocol = engine_module("protocol")  # a strip's coverage is counted in the engine's words
choices = engine_module("choices")  # what each swapper and detector uses, as the engine reads it


class FACESWAP_UL_sources(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        layout.label(text=bpy.path.basename(item.filepath) or "(no file)", icon="IMAGE_DATA")


# Which faces a swap will replace, said under the Faces menu (the default swaps the largest alone).
_SELECTOR_SAYS = {"one": "Swaps one face a frame: the largest", "many": "Swaps every face of each frame",
                  "reference": "Swaps the faces that look like the references"}


class _Panel:
    bl_space_type = "SEQUENCE_EDITOR"
    bl_region_type = "UI"
    bl_category = "Face Swap"

    @classmethod
    def poll(cls, context):
        return sequencer_scene(context) is not None


class FACESWAP_PT_main(_Panel, bpy.types.Panel):
    bl_label = "Face Swap"

    def draw(self, context):
        layout = self.layout
        props = sequencer_scene(context).faceswap
        layout.label(text="Source Faces")
        _face_list(layout, props, "sources", "source_index")
        layout.prop(props, "source_face")
        layout.prop(props, "selector")
        layout.label(text=_SELECTOR_SAYS[props.selector], icon="INFO")
        if props.selector == "one":
            layout.prop(props, "use_position")
            row = layout.row(align=True)
            row.active = props.use_position
            row.prop(props, "position", text="")
        elif props.selector == "reference":
            _face_list(layout, props, "references", "reference_index")
            layout.prop(props, "reference_threshold", slider=True)
        layout.prop(props, "swapper")
        col = layout.column(align=True)
        col.prop(props, "mask_blur", slider=True)
        col.prop(props, "color_match", slider=True)
        col.prop(props, "opacity", slider=True)
        if choices.choice(choices.SWAPPERS, props.swapper).uses_yaw_limit:
            row = col.row(align=True)
            row.prop(props, "limit_yaw", text="")
            sub = row.row(align=True)
            sub.active = props.limit_yaw
            sub.prop(props, "max_yaw")
        status = runtime.STATE.job
        row = layout.row(align=True)
        if status.running:  # in place of the buttons (they wait for it), where the editor just clicked: the
            row.progress(factor=status.progress, text=status.text or "working")  # sidebar is often short
            row.operator("faceswap.cancel", text="", icon="CANCEL")
        else:
            row.operator("faceswap.analyze", icon="VIEWZOOM")
            row.operator("faceswap.swap", icon="UV_SYNC_SELECT")
            row.operator("faceswap.update", icon="FILE_REFRESH")
            if status.text:
                wrapped_label(layout.column(align=True), status.text, context)
        if runtime.STATE.gpu_notice:  # a GPU fallback, until the engine starts afresh
            wrapped_label(layout.column(align=True), "Not on the GPU: " + runtime.STATE.gpu_notice, context,
                          icon="ERROR")


def wrapped_label(layout, text: str, context, icon: str = "NONE") -> None:
    """`text` on as many lines as the region's width needs (the sidebar's, the preferences'): a label cuts a
    long line off, and the end of an error, what to do, was lost."""
    width = context.region.width if context.region is not None else 300
    chars = max(24, int(width / (7 * context.preferences.view.ui_scale)))
    for number, line in enumerate(textwrap.wrap(text, chars) or [""]):
        layout.label(text=line, icon=icon if number == 0 else "NONE")


def _face_list(layout, props, collection: str, active: str) -> None:
    """A list of face photos with add/remove buttons and the active photo's path and thumbnail."""
    row = layout.row()
    row.template_list("FACESWAP_UL_sources", collection, props, collection, props, active, rows=2)
    col = row.column(align=True)
    col.operator("faceswap.source_add", icon="ADD", text="").target = collection
    col.operator("faceswap.source_remove", icon="REMOVE", text="").target = collection
    faces, index = getattr(props, collection), getattr(props, active)
    if 0 <= index < len(faces):
        layout.prop(faces[index], "filepath", text="")
        image = _thumbnail(faces[index].filepath)
        if image is not None and image.preview is not None:
            layout.template_icon(icon_value=image.preview.icon_id, scale=5.0)


def _thumbnail(filepath: str):
    """The image datablock loaded for the source's thumbnail when its path was set (drawing only reads)."""
    path = os.path.normpath(bpy.path.abspath(filepath)) if filepath else ""
    return next((image for image in bpy.data.images
                 if path and os.path.normpath(bpy.path.abspath(image.filepath)) == path), None)


def described_strip(scene):
    """(strip, how it was chosen) for the Active Strip panel: the active strip, else the topmost face swap
    group under the playhead where the editor is editing (a project just opened has no active strip)."""
    editor = scene.sequence_editor
    if editor is None:
        return None, ""
    if editor.active_strip is not None:
        return editor.active_strip, ""
    frame = scene.frame_current
    under = [s for s in timeline.current_level(scene) if s.faceswap.role == shot_group.ROLE
             and left_handle(s) <= frame < right_handle(s) and not s.mute]
    if not under:
        return None, ""
    return max(under, key=lambda s: s.channel), "under the playhead"


class FACESWAP_PT_strip(_Panel, bpy.types.Panel):
    bl_label = "Active Strip"
    bl_parent_id = "FACESWAP_PT_main"

    def draw(self, context):
        layout = self.layout
        scene = sequencer_scene(context)
        strip, chosen = described_strip(scene)
        if strip is None:
            layout.label(text="Click a movie strip or a face swap group")
            return
        layout.label(text=f"{strip.name} ({chosen})" if chosen else strip.name, icon="SEQUENCE")
        if strip.type != "MOVIE":
            strip = timeline.original_for(scene, strip) if strip.faceswap.role in {"SWAPPED", "GROUP"} else None
            if strip is None:
                layout.label(text="Not a movie strip or a face swap group")
                return
        draw_frame_size(layout, scene, strip)
        job = runtime.STATE.job
        if job.works_on(paths.media_path(strip)):
            # Its counts would lag the job until it ends, and an instruction could only start a second job
            layout.label(text=f"{job.kind.capitalize()} running: {job.done} / {job.total} frames" if job.total
                         else f"{job.kind.capitalize()} starting", icon="TIME")
            draw_not_followed(layout, strip.faceswap.not_followed, context)
            return
        data = coverage_overlay.strip_coverage(scene, strip)
        frames = data[protocol.FRAMES]
        layout.label(text=f"Analysed {data[protocol.ANALYSED]} / {frames} frames")
        layout.label(text=f"Swapped {data[protocol.SWAPPED]} / {frames} frames")
        if strip.faceswap.role == "ORIGINAL":
            ok = timeline.is_up_to_date(scene, strip)
            if ok is None:
                layout.label(text="Checking the swapped frames...", icon="TIME")
            else:
                layout.label(text="Swapped strip up to date" if ok else "Swapped strip out of date: press Update",
                             icon="CHECKMARK" if ok else "ERROR")
            draw_not_followed(layout, strip.faceswap.not_followed, context)
            draw_kept(layout, strip.faceswap.kept, context)


def draw_frame_size(layout, scene, movie) -> None:
    """When the clip's picture does not fill the scene's frame exactly (a border shows, or it is cut), say so
    and offer to match the scene to the clip."""
    element = movie.elements[0] if len(movie.elements) else None
    if element is None or not element.orig_width or not element.orig_height:
        return
    width, height = element.orig_width, element.orig_height
    scale = movie.transform.scale_x, movie.transform.scale_y
    render = scene.render.resolution_x, scene.render.resolution_y
    if (round(width * scale[0]), round(height * scale[1])) == render:
        return
    box = layout.box()
    box.label(text=f"Clip {width} x {height}, scene {render[0]} x {render[1]}", icon="INFO")
    box.operator("faceswap.match_scene_size").strip = movie.name


def draw_not_followed(layout, text: str, context) -> None:
    """Each edit the swapped strip does not follow (recorded by the last Update): what, then what to do."""
    for line in filter(None, text.split("\n")):
        what, _, todo = line.partition(": ")
        box = layout.box()
        wrapped_label(box.column(align=True), f"Not followed: {what}", context, icon="ERROR")
        if todo:
            wrapped_label(box.column(align=True), todo, context)


def draw_kept(layout, text: str, context) -> None:
    """What the editor set on the swapped strip itself, kept as it is (recorded by the last Update), and its cost."""
    for line in filter(None, text.split("\n")):
        wrapped_label(layout.box().column(align=True), f"Kept: {line}", context, icon="INFO")


class FACESWAP_PT_models(_Panel, bpy.types.Panel):
    """Analysis models: changing one gives a new analysis namespace (the frames are analysed again once)."""
    bl_label = "Analysis Models"
    bl_parent_id = "FACESWAP_PT_main"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        props = sequencer_scene(context).faceswap
        col = self.layout.column()
        col.prop(props, "detector")
        row = col.row()
        row.enabled = choices.choice(choices.DETECTORS, props.detector).tracks  # the others search every frame
        row.prop(props, "tracking")
        col.prop(props, "landmarker")
        col.prop(props, "recognizer")


class FACESWAP_PT_cache(_Panel, bpy.types.Panel):
    bl_label = "Cache"
    bl_parent_id = "FACESWAP_PT_main"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        scene = sequencer_scene(context)
        folder = paths.cache_dir(scene)
        layout.prop(scene.faceswap, "cache_dir")
        if paths.remote_support_missing():  # a remote cache is set, its S3 client is not installed
            layout.label(text=f"Remote cache not used: {paths.REMOTE_SUPPORT_NEEDED}", icon="ERROR")
        if paths.is_temporary(scene):
            layout.label(text="Unsaved file: temporary cache, moved on first save", icon="ERROR")
        layout.label(text=folder)
        size = runtime.STATE.cache_bytes  # measured by the engine on each refresh, never while drawing
        size_text = "refresh to measure" if size is None else f"{size / 1e6:.1f} MB"
        layout.label(text=f"Size {size_text} of {paths.max_bytes() / 1e9:.0f} GB")
        watcher = runtime.COVERAGE
        manual = watcher.mode == "manual"
        row = layout.row(align=True)
        row.label(text=watcher.describe(), icon="ERROR" if manual else "HIDE_OFF")
        row.operator("faceswap.refresh_coverage", text="" if not manual else "Refresh Coverage", icon="FILE_REFRESH")
        if watcher.last_error:
            layout.label(text=f"Coverage refresh failed: {watcher.last_error}", icon="ERROR")
        layout.prop(scene.faceswap, "show_coverage")
        layout.prop(scene.faceswap, "live_preview")
        row = layout.row(align=True)
        row.operator("faceswap.cache_prune")
        row.operator("faceswap.cache_clear")


classes = (FACESWAP_UL_sources, FACESWAP_PT_main, FACESWAP_PT_strip, FACESWAP_PT_models, FACESWAP_PT_cache)


register, unregister = bpy.utils.register_classes_factory(classes)
