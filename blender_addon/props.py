"""Settings (`scene.faceswap`) and per-strip links (`strip.faceswap`)."""

from __future__ import annotations

import json
import os
import sys

import bpy
from bpy.props import (BoolProperty, CollectionProperty, EnumProperty, FloatProperty, FloatVectorProperty,
                       IntProperty, IntVectorProperty, PointerProperty, StringProperty)

from . import compat, redraw
from .engine_client import engine_module
from .paths import DEFAULT_CACHE_DIR

choices = engine_module("choices")  # the engine's one list of choices: menus and ranges come from it
protocol = engine_module("protocol")  # the engine's settings, by name
# The add-on always lays RGBA face overlays over the original strip; a frame without a face is one
# transparent pixel (a full-frame one cost playback 7-14 ms), and keyed out of playback (faceless_keys).
OUTPUT_FORM = "sequencer"
# Options of `facecache swap` that this add-on does not offer, on purpose; every other one is a property
# (tests/blender/test_blender_settings.py checks that each is reachable).
CLI_ONLY = {
    "target": "the media files of the selected movie strips",
    "out": "the cache's swaps folder (the swapped strips read it)",
    "frames": "the frames the strips show on the timeline",
    protocol.OUTPUT_FORM: "always face overlays for the sequencer, laid over the original strip",
    "json": "the command line's output format (the add-on keeps each job's summary in last_report)",
    protocol.PICTURE_RULES: "always the picture of the Blender the add-on runs in (bpy.app.version, sys.platform)",
    "quality": "a finished movie's codec quality: the add-on's output is the swapped strips, never a movie",
    protocol.DEINTERLACE: "each strip's own Deinterlace option (movie and image strips), sent with its items",
}


def enum_items(options) -> list[tuple[str, str, str]]:
    return [(choice.name, choice.label, choice.description) for choice in options]


def enum_property(name: str, options, setting: str, **extra):
    return EnumProperty(name=name, items=enum_items(options), default=choices.DEFAULTS[setting], **extra)


def number_property(number, **extra):
    kind = IntProperty if isinstance(number.default, int) else FloatProperty
    return kind(name=number.label, description=number.description, min=number.minimum, max=number.maximum,
                default=number.default, **extra)


PATH_OPTIONS = compat.blend_relative_path_options()


def _redraw(_self, _context):
    redraw.redraw()


def _blend_changed(self, _context):
    from . import preview

    preview.request(self.id_data)  # the scene whose blend settings changed


def _load_thumbnail(self, _context):
    path = bpy.path.abspath(self.filepath)
    if path and os.path.isfile(path):
        try:
            image = bpy.data.images.load(path, check_existing=True)
            image.use_fake_user = False
            image.preview_ensure()
        except (RuntimeError, AttributeError):
            pass


class FaceSwapSource(bpy.types.PropertyGroup):
    filepath: StringProperty(name="Image", subtype="FILE_PATH", description="A photo of the source face",
                             update=_load_thumbnail, options=PATH_OPTIONS)


class FaceSwapStrip(bpy.types.PropertyGroup):
    """Stored on every strip. Split and duplicate copy it: `uid` is re-minted for copies by Update."""
    uid: StringProperty(name="Identity")
    role: EnumProperty(name="Role", items=[("NONE", "None", ""), ("ORIGINAL", "Original", ""),
                                           ("SWAPPED", "Swapped", ""),
                                           ("GROUP", "Group", "Meta strip holding an original and its swapped strip")],
                       default="NONE")
    link: StringProperty(name="Original", description="Identity of the original strip (on a swapped strip)")
    synced: IntVectorProperty(name="Synced Ranges", size=4,
                              description="On a group: the original's and the group's frame ranges at the last update")
    not_followed: StringProperty(name="Not Followed",
                                 description="Edits of this original its swapped strip does not follow, one a line")
    kept: StringProperty(name="Kept", description="What the editor set on the swapped strip itself, kept as it is, "
                                                  "and what that costs, one a line")
    settings_key: StringProperty(name="Settings Key", description="Settings the swapped frames were made with")


class FaceSwapSettings(bpy.types.PropertyGroup):
    sources: CollectionProperty(type=FaceSwapSource)
    source_index: IntProperty(name="Active Source", default=0)
    source_face: number_property(choices.SOURCE_FACE)
    selector: enum_property("Faces", choices.SELECTORS, "selector")
    use_position: BoolProperty(name="Face Nearest a Point", default=False,
                               description="Swap the face nearest a point of the picture instead of the largest")
    position: FloatVectorProperty(name="Point", size=2, min=0.0, max=1.0, default=(0.5, 0.5), subtype="XYZ",
                                  description="The point, as fractions of the picture's width and height "
                                              "(0, 0 = top left)")
    references: CollectionProperty(type=FaceSwapSource)
    reference_index: IntProperty(name="Active Reference", default=0)
    reference_threshold: number_property(choices.REFERENCE_THRESHOLD)
    swapper: enum_property("Swapper", choices.SWAPPERS, "swapper")
    detector: enum_property("Detector", choices.DETECTORS, "detector")
    tracking: enum_property("Tracking", choices.TRACKING, "tracking")
    landmarker: enum_property("Landmarker", choices.LANDMARKERS, "landmarker")
    recognizer: enum_property("Recognizer", choices.RECOGNIZERS, "recognizer")
    mask_blur: number_property(choices.COMPOSITE[0], update=_blend_changed)
    color_match: number_property(choices.COMPOSITE[1], update=_blend_changed)
    opacity: number_property(choices.COMPOSITE[2], update=_blend_changed)
    limit_yaw: BoolProperty(name="Skip Turned Faces", default=True,
                            description="Classic swapper: leave faces turned further than the yaw limit as they "
                                        "are (a frontal source on a profile looks wrong); they show orange in "
                                        "the coverage bar")
    max_yaw: number_property(choices.MAX_YAW)
    cache_dir: StringProperty(name="Cache", subtype="DIR_PATH", default=DEFAULT_CACHE_DIR, options=PATH_OPTIONS,
                              description="Cache folder (// = beside the .blend file)")
    show_coverage: BoolProperty(name="Coverage Bars", default=True, update=_redraw,
                                description="Show analysed and swapped frames under each movie strip")
    live_preview: BoolProperty(name="Live Preview", default=True,
                               description="Remake the swapped frame under the playhead when it rests there or a "
                                           "blend setting changes (from the cache: a blend change runs no model)")
    # The running job's progress and status are runtime state (runtime.STATE.job), never saved here.
    last_report: StringProperty(name="Last Report", default="",  # for scripts and farms: the add-on never reads it back
                                description="JSON summary of the last job: frames, written, skipped, inferences")

    def source_paths(self) -> list[str]:
        return [bpy.path.abspath(s.filepath) for s in self.sources if s.filepath]

    def reference_paths(self) -> list[str]:
        return [bpy.path.abspath(s.filepath) for s in self.references if s.filepath]

    def engine_settings(self) -> dict:
        """This scene's part of the engine's settings: every field of `facecache.pipeline.Settings`
        (protocol.SETTINGS_NAMES) but those the preferences give, as `SENT_OTHERWISE` makes it, else as the
        property of the same name holds it (a float rounded: the settings key stays stable)."""
        return {name: SENT_OTHERWISE[name](self) if name in SENT_OTHERWISE else _plain(getattr(self, name))
                for name in protocol.SETTINGS_NAMES if name not in FROM_PREFERENCES}

    def settings_key(self) -> str:
        return json.dumps(self.engine_settings(), sort_keys=True)


def _plain(value):
    return round(value, 6) if isinstance(value, float) else value


# The engine's settings that the preferences and the cache's location give (jobs.engine_settings), the remote
# cache tier's among them (never the scene's: no bucket is stored in a .blend).
FROM_PREFERENCES = (protocol.CACHE_DIR, protocol.MAX_BYTES, protocol.MODELS_DIR, protocol.PROVIDERS,
                    protocol.REMOTE_CACHE, protocol.REMOTE_READ_ONLY)
# The scene's settings that are not sent as their property holds them: what an unused option leaves unset,
# what the add-on always sends.
SENT_OTHERWISE = {
    protocol.SOURCES: lambda s: s.source_paths(),
    protocol.POSITION: lambda s: [round(v, 6) for v in s.position] if s.selector == "one" and s.use_position else None,
    protocol.REFERENCES: lambda s: s.reference_paths() if s.selector == "reference" else [],
    protocol.REFERENCE_THRESHOLD: lambda s: _plain(s.reference_threshold) if s.selector == "reference" else None,
    protocol.MAX_YAW: lambda s: _plain(s.max_yaw) if s.limit_yaw else None,
    protocol.OUTPUT_FORM: lambda s: OUTPUT_FORM,
    # the engine analyses the picture this Blender shows (rotation, colours, timing), on this platform: the engine
    # runs beside it, so a Linux render node and a Windows workstation each analyse the picture they show
    protocol.PICTURE_RULES: lambda s: choices.picture_rules_for(bpy.app.version, sys.platform),
}


classes = (FaceSwapSource, FaceSwapStrip, FaceSwapSettings)


def register():
    for cls in classes:
        bpy.utils.register_class(cls)
    bpy.types.Scene.faceswap = PointerProperty(type=FaceSwapSettings)
    compat.strip_type().faceswap = PointerProperty(type=FaceSwapStrip)


def unregister():
    del compat.strip_type().faceswap
    del bpy.types.Scene.faceswap
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
