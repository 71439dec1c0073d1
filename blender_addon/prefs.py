"""Add-on preferences: models folder (install / import), execution provider, cache location and cap."""

from __future__ import annotations

import bpy
from bpy.props import FloatProperty, StringProperty

from .props import choices, enum_property



class FaceSwapPreferences(bpy.types.AddonPreferences):
    bl_idname = __package__

    models_dir: StringProperty(name="Models Folder", subtype="DIR_PATH", default="",
                               description="Where face models are installed (empty: $FACECACHE_MODELS, else the extension's user folder)")
    execution_provider: enum_property("Execution Provider", choices.PROVIDERS, "providers")
    cache_dir_override: StringProperty(name="Cache Location", subtype="DIR_PATH", default="",
                                       description="Use this cache folder for every project "
                                                   "(empty: a folder beside each .blend file; the "
                                                   "FACESWAP_CACHE_DIR environment variable overrides it)")
    cache_max_gb: FloatProperty(name="Cache Size Cap (GB)", min=0.1, default=10.0)

    def draw(self, context):
        from .jobs import models_dir

        layout = self.layout
        col = layout.column()
        col.prop(self, "models_dir")
        if not self.models_dir:
            col.label(text=f"Using {models_dir(create=False)}", icon="INFO")  # drawing creates nothing
        row = col.row()
        row.operator("faceswap.install_models", icon="IMPORT")
        row.operator("faceswap.import_models", icon="FILE_FOLDER")
        if not bpy.app.online_access:
            col.label(text="Online access is off: model downloads are disabled", icon="ERROR")
        layout.prop(self, "execution_provider")
        layout.prop(self, "cache_dir_override")
        layout.prop(self, "cache_max_gb")


def register():
    bpy.utils.register_class(FaceSwapPreferences)


def unregister():
    bpy.utils.unregister_class(FaceSwapPreferences)
