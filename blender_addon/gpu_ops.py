"""The NVIDIA GPU runtime from the preferences: Check GPU, Install NVIDIA GPU Runtime (its download size
said first), Remove. Each is a request to the engine session (facecache.gpu: gpu_status, gpu_install,
gpu_uninstall); an install or removal restarts the engine afterwards, since the engine puts the runtime on
its path when it starts. What the engine answered is kept in `runtime.STATE.gpu` for the preferences."""

from __future__ import annotations

import bpy

from . import jobs, runtime
from .engine_client import engine_module

pins = engine_module("gpu_runtime.pins")  # standard library only: sizes before the engine is asked
protocol = engine_module("protocol")  # the engine's request and answer keys


def download_bytes() -> int | None:
    """What Install would download: the engine's last plan, else the default CUDA set for this platform."""
    plan = runtime.STATE.gpu.get("install_plan", {})
    if "download_bytes" in plan:
        return plan["download_bytes"]
    name = pins.this_platform()
    if name is None:
        return None
    python = pins.this_python()  # the engine runs on Blender's Python
    wanted = pins.runtime_set(pins.DEFAULT_CUDA, name)
    return wanted.download_bytes(python) if python in wanted.onnxruntime else None


def gigabytes(size: int | None) -> str:
    return "about 2 GB" if size is None else f"{size / 1e9:.1f} GB"


def _keep_status(_scene, ended: jobs.Ended) -> None:
    if ended.report is not None:
        runtime.STATE.gpu = ended.report.get(protocol.GPU, {})


def _restart_and_check(scene, ended: jobs.Ended) -> None:
    """The engine reads the runtime when it starts: a fresh one, then its status."""
    runtime.ENGINE.stop()
    runtime.STATE.gpu_notice = ""
    if ended.report is not None and not jobs.synchronous():
        bpy.app.timers.register(lambda: _check_when_idle(scene.name), first_interval=0.1)


def _check_when_idle(scene_name: str):
    scene = bpy.data.scenes.get(scene_name)
    if scene is None:
        return None
    if jobs.running():
        return 0.5
    jobs.start(scene, "gpu_status", [], on_done=_keep_status)
    return None


class JobOperator:
    """An operator of the preferences that starts one engine job (the GPU runtime's, the remote cache support's)."""

    @classmethod
    def poll(cls, context):
        return not jobs.running()

    def start(self, context, kind: str, on_done=None, extra: dict | None = None):
        try:
            ended = jobs.start(context.scene, kind, [], on_done=on_done, extra=extra)
        except (RuntimeError, OSError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        if ended is not None and ended.report is None:
            self.report({"ERROR"}, jobs.friendly(ended.request.error, ended.request.error_kind))
            return {"CANCELLED"}
        return {"FINISHED"}


class FACESWAP_OT_gpu_check(JobOperator, bpy.types.Operator):
    """Ask the engine which execution providers are usable and which one each model's session really runs on"""
    bl_idname = "faceswap.gpu_check"
    bl_label = "Check GPU"

    def execute(self, context):
        return self.start(context, "gpu_status", _keep_status)


class FACESWAP_OT_gpu_install(JobOperator, bpy.types.Operator):
    """Download onnxruntime-gpu with NVIDIA's CUDA and cuDNN libraries into one folder that every Blender version and the facecache command share"""
    bl_idname = "faceswap.gpu_install"
    bl_label = "Install NVIDIA GPU Runtime"

    def invoke(self, context, event):
        message = (f"Download {gigabytes(download_bytes())} from the Python package index "
                   "(onnxruntime-gpu, CUDA and cuDNN)?")
        return context.window_manager.invoke_confirm(self, event, title="Install NVIDIA GPU Runtime",
                                                     message=message, confirm_text="Download")

    def execute(self, context):
        if not bpy.app.online_access:
            self.report({"ERROR"}, "online access is disabled: allow it in Preferences > System > Network")
            return {"CANCELLED"}
        runtime.ENGINE.stop()  # nothing of an old runtime stays loaded while it is replaced
        return self.start(context, "gpu_install", _restart_and_check)


class FACESWAP_OT_gpu_uninstall(JobOperator, bpy.types.Operator):
    """Remove the NVIDIA GPU runtime (every Blender version and the facecache command use the CPU again)"""
    bl_idname = "faceswap.gpu_uninstall"
    bl_label = "Remove NVIDIA GPU Runtime"

    def invoke(self, context, event):
        return context.window_manager.invoke_confirm(self, event)

    def execute(self, context):
        runtime.ENGINE.stop()  # the engine must not hold the runtime's libraries while they are deleted
        return self.start(context, "gpu_uninstall", _restart_and_check)


classes = (FACESWAP_OT_gpu_check, FACESWAP_OT_gpu_install, FACESWAP_OT_gpu_uninstall)
register, unregister = bpy.utils.register_classes_factory(classes)
