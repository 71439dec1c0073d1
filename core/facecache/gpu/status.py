"""What runs where, said plainly: `facecache gpu status`, the add-on's preferences and every job's report.

`gpu_status()` tells which execution providers are usable here and why the others are not: the NVIDIA
driver (as nvidia-smi reports it), the runtime folder and what is installed in it, the onnxruntime the
engine imports, each CUDA library that failed to load with the loader's reason, and, for each installed
model, the provider its session really runs on (ONNX Runtime's own answer after the session was made,
not what was asked for).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from facecache import protocol
from facecache.errors import FaceCacheError
from facecache.gpu_runtime.activate import load_cuda_libraries, use_runtime
from facecache.gpu_runtime.driver import choose_cuda, driver_problem, read_driver
from facecache.gpu.install import GpuRuntimeInstaller
from facecache.gpu_runtime.layout import RuntimeFolder
from facecache.gpu_runtime.pins import this_platform, this_python

CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"


def gpu_status(runtime_dir: str | os.PathLike | None = None, models_dir: str | os.PathLike | None = None,
               providers: str = "auto", sessions: bool = True) -> dict:
    """The whole report as one JSON-ready dict (`facecache gpu status --json`)."""
    setup = use_runtime(runtime_dir)  # a no-op when the process already did it at its start
    location = RuntimeFolder.resolve(runtime_dir)
    driver = read_driver()
    report = {"platform": this_platform() or sys.platform, "python": this_python(),
              "runtime": _runtime(location, setup), "driver": driver.as_dict()}
    if this_platform():
        choice = choose_cuda(driver)
        report["cuda_choice"] = {"cuda": choice.cuda, "reason": choice.reason}
        try:
            report["install_plan"] = GpuRuntimeInstaller(runtime_dir).plan(driver=driver).as_dict()
        except FaceCacheError as exc:
            report["install_plan"] = {"error": str(exc)}
    try:
        import onnxruntime as ort
    except ImportError as exc:
        report["onnxruntime"] = {"error": f"onnxruntime cannot be imported ({exc})"}
        report["providers"] = {}
        return report
    package = Path(ort.__file__).parent
    offered = list(ort.get_available_providers())
    report["onnxruntime"] = {"version": ort.__version__, "path": str(package), "cuda": getattr(ort, "cuda_version", ""),
                             "from_runtime": setup.site is not None and setup.site in package.parents,
                             "available_providers": offered}
    libraries = load_cuda_libraries(ort) if CUDA in offered else None
    if libraries is not None:
        report["libraries"] = libraries.as_dict()
    if sessions:
        report["sessions"] = _sessions(models_dir, providers, libraries)
    report["providers"] = _providers(offered, driver, libraries, report.get("sessions"), setup)
    return report


def _runtime(location: RuntimeFolder, setup) -> dict:
    installed = location.installed()
    info = {"folder": str(location.root), "platform_folder": str(location.folder) if location.platform else "",
            "installed": installed is not None, "used": setup.site is not None, "problem": setup.problem}
    if installed is not None:
        info.update(cuda=installed.cuda, onnxruntime=installed.onnxruntime, pythons=sorted(installed.pythons),
                    disk_bytes=location.disk_bytes())
    return info


def _sessions(models_dir, providers: str, libraries=None) -> dict:
    """{model file: {"asked": [...], "runs_on": [...]}} for every installed model, made with `providers`
    (`libraries`: the CUDA libraries already loaded, which the sessions' factory need not load again)."""
    from facecache.models.runtime import SessionFactory
    from facecache.models.store import ModelStore

    store = ModelStore(models_dir)
    factory = SessionFactory(providers, warn=lambda _message: None)
    if libraries is not None:
        factory.cuda_load = libraries
    found: dict = {"models_dir": str(store.root), "setting": providers, "models": {}}
    for status in store.statuses():
        if not status.installed:
            continue
        try:
            model = store.model(status.name)
            for role in model.paths:
                asked = factory.requested_providers()
                store.session(factory, model, role)
                name = model.paths[role].name
                found["models"][name] = {"model": status.name, "asked": list(asked),
                                         "runs_on": list(factory.placements.get(name, ()))}
        except FaceCacheError as exc:
            found["models"][status.name] = {"model": status.name, "error": str(exc)}
    found["fallback"] = factory.fallback.message if factory.fallback else ""
    return found


def _providers(offered: list[str], driver, libraries, sessions: dict | None, setup) -> dict:
    """{provider: {"usable": True / False / None (not checked), "reason": "..."}}."""
    found = {CPU: {"usable": True, "reason": "always"}}
    if this_platform():
        found[CUDA] = _cuda(offered, driver, libraries, sessions, setup)
    for name in offered:
        if name in found:
            continue
        if name == "TensorrtExecutionProvider":
            found[name] = {"usable": None, "reason": "offered; TensorRT's own libraries are not part of the NVIDIA "
                                                     "runtime and are not checked"}
        elif name == "CoreMLExecutionProvider":
            found[name] = {"usable": True, "reason": "offered; not measured faster than the CPU for these models, "
                                                     "so `auto` does not pick it: choose coreml to use it"}
        else:
            found[name] = {"usable": True, "reason": "offered by this onnxruntime"}
    return found


def _cuda(offered, driver, libraries, sessions, setup) -> dict:
    if CUDA not in offered:
        hint = setup.problem or "install the NVIDIA GPU runtime: `facecache gpu install` (or the add-on's button)"
        return {"usable": False, "reason": f"this onnxruntime has no CUDA provider; {hint}"}
    problem = driver_problem(driver)
    if problem:
        return {"usable": False, "reason": problem}
    if libraries is not None and libraries.failures:
        return {"usable": False, "reason": libraries.problem}
    runs = [m["runs_on"][0] for m in (sessions or {}).get("models", {}).values()
            if m.get("runs_on") and CUDA in m.get("asked", ())]
    if runs and CUDA not in runs:
        return {"usable": False, "reason": f"sessions asked for CUDA run on {runs[0]}: {sessions.get('fallback')}"}
    if not runs:
        return {"usable": True, "reason": "the driver and the libraries load; no model session asked for CUDA "
                                          "to confirm it"}
    return {"usable": True, "reason": f"{runs.count(CUDA)} of {len(runs)} model sessions run on CUDA"}


def session_report(factory) -> dict:
    """A job's part of the report: the provider each model file's session runs on, and the fallback
    warning the first time after it happened."""
    report = {protocol.PROVIDERS: {name: providers[0] for name, providers in sorted(factory.placements.items())
                                   if providers}}
    message = factory.take_fallback_message()
    if message:
        report[protocol.GPU_WARNING] = message
    return report
