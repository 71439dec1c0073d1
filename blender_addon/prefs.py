"""Add-on preferences: models folder (install / import), execution provider, the NVIDIA GPU runtime (its
folder, install / remove, what runs where), cache location and cap, the remote cache (its URL, read-only, and
its S3 client: install / remove). Preferences live in Blender's user preferences, never in a .blend."""

from __future__ import annotations

import sys

import bpy
from bpy.props import BoolProperty, FloatProperty, StringProperty

from . import gpu_ops, jobs, paths, remote_ops, runtime
from .props import choices, enum_property
from .ui import wrapped_label


def _engine_environment_changed(_prefs, _context) -> None:
    runtime.ENGINE.configure(paths.engine_environment())  # the engine reads it when it starts
    remote_ops.look_at_support()


class FaceSwapPreferences(bpy.types.AddonPreferences):
    bl_idname = __package__

    models_dir: StringProperty(name="Models Folder", subtype="DIR_PATH", default="",
                               description="Where face models are installed (empty: $FACECACHE_MODELS, else the extension's user folder)")
    execution_provider: enum_property("Execution Provider", choices.PROVIDERS, "providers")
    gpu_runtime_dir: StringProperty(name="GPU Runtime Folder", subtype="DIR_PATH", default="",
                                    update=_engine_environment_changed,
                                    description="Where the NVIDIA GPU runtime is installed (empty: "
                                                "$FACECACHE_GPU_RUNTIME, else the per-user folder every Blender "
                                                "version and the facecache command share)")
    cache_dir_override: StringProperty(name="Cache Location", subtype="DIR_PATH", default="",
                                       description="Use this cache folder for every project "
                                                   "(empty: a folder beside each .blend file; the "
                                                   "FACESWAP_CACHE_DIR environment variable overrides it)")
    cache_max_gb: FloatProperty(name="Cache Size Cap (GB)", min=0.1, default=10.0)
    remote_cache: StringProperty(name="Remote Cache", default="", update=_engine_environment_changed,
                                 description="A remote cache tier in an S3-compatible bucket, s3://bucket/prefix, "
                                             "read after the cache folder (empty: none; on a farm "
                                             "$FACECACHE_REMOTE_CACHE). Credentials and endpoint come from the "
                                             "standard AWS configuration (AWS_PROFILE, ~/.aws, AWS_ENDPOINT_URL)")
    remote_read_only: BoolProperty(name="Read Only", default=False,
                                   description="Read the remote cache, never upload to it (render nodes)")

    def draw(self, context):
        layout = self.layout
        col = layout.column()
        col.prop(self, "models_dir")
        if not self.models_dir:
            col.label(text=f"Using {paths.models_dir(create=False)}", icon="INFO")  # drawing creates nothing
        row = col.row()
        row.operator("faceswap.install_models", icon="IMPORT")
        row.operator("faceswap.import_models", icon="FILE_FOLDER")
        if not bpy.app.online_access:
            col.label(text="Online access is off: model downloads are disabled", icon="ERROR")
        layout.prop(self, "execution_provider")
        _draw_gpu(layout.box(), self, context)
        layout.prop(self, "cache_dir_override")
        layout.prop(self, "cache_max_gb")
        remote_ops.draw(layout.box(), self, context)


def _draw_gpu(box, prefs, context) -> None:
    """What the engine last said about the GPU (runtime.STATE.gpu), and the runtime's buttons."""
    box.label(text="GPU", icon="MEMORY")
    if sys.platform == "darwin":
        wrapped_label(box.column(align=True), "Apple GPUs: choose CoreML as the execution provider. It has not "
                      "been measured faster than the CPU for these models, so Automatic uses the CPU.", context)
        return
    box.prop(prefs, "gpu_runtime_dir")
    job = runtime.STATE.job
    if job.running and job.kind in jobs.GPU_JOBS:  # its progress and a way to stop it, where it was started
        box.progress(factor=job.progress, text=job.text)
        box.operator("faceswap.cancel", icon="CANCEL")
        return
    status = runtime.STATE.gpu
    for line in _status_lines(status):
        wrapped_label(box.column(align=True), line, context)
    if not status:
        box.label(text="Check GPU asks the engine what runs where")
    row = box.row()
    row.operator("faceswap.gpu_check", icon="VIEWZOOM")
    if status.get("runtime", {}).get("installed"):
        row.operator("faceswap.gpu_uninstall", icon="TRASH")
    else:
        size = gpu_ops.gigabytes(gpu_ops.download_bytes())
        row.operator("faceswap.gpu_install", icon="IMPORT", text=f"Install NVIDIA GPU Runtime ({size} download)")


def _status_lines(status: dict) -> list[str]:
    if not status:
        return []
    driver, installed = status.get("driver", {}), status.get("runtime", {})
    gpus = ", ".join(g["name"] for g in driver.get("gpus", []))
    lines = [f"NVIDIA driver {driver['version']}" + (f" ({gpus})" if gpus else "") if driver.get("present")
             else f"No NVIDIA driver: {driver.get('problem', '')}"]
    if installed.get("installed"):
        lines.append(f"NVIDIA runtime: CUDA {installed['cuda']}, onnxruntime-gpu {installed['onnxruntime']}, "
                     f"{installed['disk_bytes'] / 1e9:.1f} GB in {installed['platform_folder']}")
    else:
        lines.append(f"NVIDIA runtime: not installed ({installed.get('folder', '')})")
    if installed.get("problem"):
        lines.append(installed["problem"])
    for name, state in status.get("providers", {}).items():
        usable = {True: "usable", False: "not usable", None: "not checked"}[state["usable"]]
        lines.append(f"{name.replace('ExecutionProvider', '')}: {usable} ({state['reason']})")
    runs_on: dict[str, list[str]] = {}
    for file, model in status.get("sessions", {}).get("models", {}).items():
        if model.get("runs_on"):
            runs_on.setdefault(model["runs_on"][0].replace("ExecutionProvider", ""), []).append(file)
    lines += [f"Runs on {provider}: {', '.join(files)}" for provider, files in runs_on.items()]
    return lines


def register():
    bpy.utils.register_class(FaceSwapPreferences)
    runtime.ENGINE.configure(paths.engine_environment())  # an engine started from now on reads the folder
    remote_ops.look_at_support()


def unregister():
    bpy.utils.unregister_class(FaceSwapPreferences)
