"""Settings (`scene.faceswap`) and per-strip links (`strip.faceswap`)."""

from __future__ import annotations

import json
import os

import bpy
from bpy.props import (BoolProperty, CollectionProperty, EnumProperty, FloatProperty, IntProperty,
                       PointerProperty, StringProperty)

from . import compat
from .paths import DEFAULT_CACHE_DIR

SELECTOR_MODES = [("one", "One", "The largest face of each frame"),
                  ("many", "Many", "Every face of each frame")]
SWAPPERS = [("classic", "Classic", "No model needed: warps the source face onto each target face"),
            ("inswapper_128", "InSwapper 128", "FaceFusion's inswapper_128 (import FaceFusion models first)"),
            ("hyperswap_1a_256", "HyperSwap 1a 256", "FaceFusion's hyperswap_1a_256 (import FaceFusion models first)")]


PATH_OPTIONS = compat.blend_relative_path_options()


def _redraw(_self, context):
    for area in getattr(context.screen, "areas", ()):
        if area.type == "SEQUENCE_EDITOR":
            area.tag_redraw()


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
                                           ("SWAPPED", "Swapped", "")], default="NONE")
    link: StringProperty(name="Original", description="Identity of the original strip (on a swapped strip)")
    settings_key: StringProperty(name="Settings Key", description="Settings the swapped frames were made with")


class FaceSwapSettings(bpy.types.PropertyGroup):
    sources: CollectionProperty(type=FaceSwapSource)
    source_index: IntProperty(name="Active Source", default=0)
    selector: EnumProperty(name="Faces", items=SELECTOR_MODES, default="one")
    swapper: EnumProperty(name="Swapper", items=SWAPPERS, default="classic")
    mask_blur: FloatProperty(name="Mask Blur", min=0.0, max=1.0, default=0.3)
    color_match: FloatProperty(name="Color Match", min=0.0, max=1.0, default=0.0)
    opacity: FloatProperty(name="Opacity", min=0.0, max=1.0, default=1.0)
    cache_dir: StringProperty(name="Cache", subtype="DIR_PATH", default=DEFAULT_CACHE_DIR, options=PATH_OPTIONS,
                              description="Cache folder (// = beside the .blend file)")
    show_coverage: BoolProperty(name="Coverage Bars", default=True, update=_redraw,
                                description="Show analysed and swapped frames under each movie strip")
    auto_preview: BoolProperty(name="Preview Missing Frames", default=True,
                               description="Compute the swapped frame under the playhead first when it is missing")
    # job state (drawn by the panel)
    running: BoolProperty(name="Running", default=False)
    progress: FloatProperty(name="Progress", min=0.0, max=1.0, default=0.0, subtype="FACTOR")
    status: StringProperty(name="Status", default="")
    last_report: StringProperty(name="Last Report", default="",
                                description="JSON summary of the last job: frames, written, skipped, inferences")

    def source_paths(self) -> list[str]:
        return [bpy.path.abspath(s.filepath) for s in self.sources if s.filepath]

    def engine_settings(self) -> dict:
        return {"sources": self.source_paths(), "selector": self.selector, "swapper": self.swapper,
                "composite": {"mask_blur": self.mask_blur, "color_match": self.color_match,
                              "opacity": self.opacity}}

    def settings_key(self) -> str:
        return json.dumps(self.engine_settings(), sort_keys=True)

    def report(self) -> dict:
        try:
            return json.loads(self.last_report) if self.last_report else {}
        except ValueError:
            return {}


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
