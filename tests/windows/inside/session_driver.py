"""Run by Windows Python under Wine (tests/windows/test_windows_session.py): the add-on's engine client
(`engine_client.py` from the extension, loaded without bpy, which it does not need) drives an engine session
as Blender on Windows does: it spawns `python.exe -m facecache.worker --serve` with the add-on's folder on
PYTHONPATH and a hidden console, then asks for a swap, an update, a preview, a Cancel (a message: Windows
has no SIGTERM to send), and survives the engine process being killed (TerminateProcess) mid-swap.

Usage: python.exe session_driver.py CONFIG.json. Prints one JSON object a line: {"step": ..., ...}.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time


def load_engine_client(addon: str):
    spec = importlib.util.spec_from_file_location("engine_client", os.path.join(addon, "engine_client.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def say(step: str, **facts) -> None:
    print(json.dumps({"step": step, **facts}), flush=True)


def outcome(request) -> dict:
    return {"result": request.result, "error": request.error, "error_kind": request.error_kind}


def wait_for_progress(request, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not request.poll() and request.done == 0:
        if time.monotonic() > deadline:
            raise TimeoutError("no progress from the engine")
        time.sleep(0.05)


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        config = json.load(handle)
    client = load_engine_client(config["addon"])
    session = client.EngineSession()
    settings = {"models_dir": config["models"], "cache_dir": config["cache"], "sources": [config["source"]]}
    clip, out, frames = config["clip"], config["out"], config["frames"]
    whole = [{"media": clip, "start": 0, "stop": frames, "out": out}]

    swap = session.request({"kind": "swap", "settings": settings, "items": whole}).wait()
    say("swap", **outcome(swap), pid=session.process.pid, starts=session.starts)

    update = session.request({"kind": "update", "settings": settings, "items": whole}).wait()
    say("update", **outcome(update), starts=session.starts)

    blend = {**settings, "opacity": 0.5}
    preview = session.request({"kind": "preview", "settings": blend,
                               "items": [{"media": clip, "start": 3, "stop": 4, "out": out}]}).wait()
    say("preview", **outcome(preview), starts=session.starts)

    # Cancel: a message to the session, while it analyses a long clip into a fresh cache
    fresh = {**settings, "cache_dir": config["cache_cancel"]}
    long_items = [{"media": config["long_clip"], "start": 0, "stop": config["long_frames"], "out": config["out_cancel"]}]
    running = session.request({"kind": "swap", "settings": fresh, "items": long_items})
    wait_for_progress(running)
    running.cancel()
    running.wait()
    alive_after_cancel = session.alive
    coverage = session.request({"kind": "coverage", "settings": fresh, "items": long_items}).wait()
    say("cancel", **outcome(running), alive=alive_after_cancel, starts=session.starts,
        analysed_after=len(coverage.result["analysed"][config["long_clip"]]) if coverage.result else None,
        coverage_error=coverage.error)

    # A killed writer: the engine process ends abruptly in the middle of a swap (TerminateProcess)
    killed_settings = {**settings, "cache_dir": config["cache_killed"]}
    killed_items = [{"media": config["long_clip"], "start": 0, "stop": config["long_frames"], "out": config["out_killed"]}]
    doomed = session.request({"kind": "swap", "settings": killed_settings, "items": killed_items})
    wait_for_progress(doomed)
    session.process.kill()
    doomed.wait()
    say("killed", **outcome(doomed), starts=session.starts)
    again = session.request({"kind": "swap", "settings": killed_settings, "items": killed_items}).wait()
    stats = session.request({"kind": "cache_stats", "settings": killed_settings}).wait()
    say("after_kill", **outcome(again), starts=session.starts, stats=stats.result and stats.result["stats"])
    session.stop()
    say("stopped", alive=session.alive)


if __name__ == "__main__":
    main()
