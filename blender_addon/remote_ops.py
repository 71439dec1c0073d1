"""The remote cache support from the preferences: Install Remote Cache Support (its download size said first)
and Remove. Each is a request to the engine session (facecache.remote_support: remote_support_install,
remote_support_uninstall) naming the folder (paths.remote_support_dir); the engine is restarted afterwards,
since it puts the support on its path when it starts with a remote cache set."""

from __future__ import annotations

import bpy

from . import jobs, paths, runtime
from .engine_client import engine_module
from .gpu_ops import JobOperator
from .ui import wrapped_label

pins = engine_module("remote_support.pins")  # standard library only: the size before the engine is asked
protocol = engine_module("protocol")  # the engine's request keys


def megabytes() -> str:
    return f"{pins.download_bytes() / 1e6:.0f} MB"


def look_at_support() -> None:
    """Whether the support is installed, kept in runtime state for drawing (which touches no file)."""
    runtime.STATE.remote_support = paths.remote_support.is_installed(paths.remote_support_dir())


def _restart(_scene, _ended: jobs.Ended) -> None:
    runtime.ENGINE.stop()  # the next engine puts the support on its path (or no longer finds it)
    look_at_support()


class FACESWAP_OT_remote_support_install(JobOperator, bpy.types.Operator):
    """Download botocore, the S3 client of the remote cache, with the packages it needs (pinned and hash-checked) into the extension's user folder"""
    bl_idname = "faceswap.remote_support_install"
    bl_label = "Install Remote Cache Support"

    def invoke(self, context, event):
        message = (f"Download {megabytes()} from the Python package index "
                   "(botocore, urllib3, python-dateutil, jmespath, six)?")
        return context.window_manager.invoke_confirm(self, event, title="Install Remote Cache Support",
                                                     message=message, confirm_text="Download")

    def execute(self, context):
        if not bpy.app.online_access:
            self.report({"ERROR"}, "online access is disabled: allow it in Preferences > System > Network")
            return {"CANCELLED"}
        runtime.ENGINE.stop()  # nothing of an older support stays loaded while it is replaced
        return self.start(context, "remote_support_install", _restart, {protocol.FOLDER: paths.remote_support_dir()})


class FACESWAP_OT_remote_support_uninstall(JobOperator, bpy.types.Operator):
    """Remove the remote cache support (the remote cache is then not used)"""
    bl_idname = "faceswap.remote_support_uninstall"
    bl_label = "Remove Remote Cache Support"

    def invoke(self, context, event):
        return context.window_manager.invoke_confirm(self, event)

    def execute(self, context):
        runtime.ENGINE.stop()  # the engine must not hold the support's files while they are deleted
        return self.start(context, "remote_support_uninstall", _restart, {protocol.FOLDER: paths.remote_support_dir()})


def draw(box, prefs, context) -> None:
    """The Remote Cache box of the preferences: the URL, read-only, and the support's state and buttons."""
    box.label(text="Remote Cache", icon="WORLD")
    box.prop(prefs, "remote_cache")
    box.prop(prefs, "remote_read_only")
    job = runtime.STATE.job
    if job.running and job.kind in jobs.REMOTE_SUPPORT_JOBS:  # its progress and a way to stop it
        box.progress(factor=job.progress, text=job.text)
        box.operator("faceswap.cancel", icon="CANCEL")
        return
    missing = paths.remote_support_missing()
    if missing:
        wrapped_label(box.column(align=True), missing.capitalize(), context, icon="ERROR")
    if runtime.STATE.remote_support:
        box.operator("faceswap.remote_support_uninstall", icon="TRASH")
    else:
        box.operator("faceswap.remote_support_install", icon="IMPORT",
                     text=f"Install Remote Cache Support ({megabytes()} download)")


classes = (FACESWAP_OT_remote_support_install, FACESWAP_OT_remote_support_uninstall)
register, unregister = bpy.utils.register_classes_factory(classes)
