"""The engine's GPU jobs (the add-on's preferences ask through the engine session, like every request):

    {"kind": "gpu_status", "sessions": true}        facecache.gpu.status.gpu_status
    {"kind": "gpu_install", "cuda": "12"}           download and unpack; progress in bytes; a cancel stops pip
    {"kind": "gpu_uninstall"}

The runtime folder is the engine process's ($FACECACHE_GPU_RUNTIME, which the add-on sets from its
preferences, else the per-user data folder's gpu-runtime). An install or removal takes effect in the
next engine process: the add-on restarts it afterwards.

A cancel of a gpu_install (the add-on's Cancel) stops pip within half a second and answers an error of kind
"Cancelled" saying what is left: nothing half-installed, the wheels that arrived whole kept for the next
install. A download with no new byte for $FACECACHE_GPU_STALL_SECONDS (default 60) fails the same way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from facecache import protocol
from facecache.gpu.install import GpuRuntimeInstaller
from facecache.jobs.run_summary import empty_summary
from facecache.models.download import Progress


def gpu_job(kind: str, job: dict, settings, emit: Callable[[dict], None],
            cancel: threading.Event | None = None) -> dict:
    summary = empty_summary()
    if kind == "gpu_status":
        from facecache.gpu.status import gpu_status

        summary[protocol.GPU] = gpu_status(models_dir=settings.models_dir, providers=settings.providers,
                                    sessions=bool(job.get(protocol.SESSIONS, True)))
    elif kind == "gpu_install":
        def progress(event: Progress) -> None:
            emit(protocol.progress(event.done, event.total or 0, event.file))

        summary[protocol.GPU_INSTALL] = GpuRuntimeInstaller().install(job.get(protocol.CUDA), progress=progress,
                                                                        cancel=cancel).as_dict()
    else:
        installer = GpuRuntimeInstaller()
        folder = str(installer.location.folder)
        summary[protocol.GPU_UNINSTALL] = {"folder": folder, "freed_bytes": installer.uninstall()}
    return summary
