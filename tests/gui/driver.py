"""Run by Debian's Blender in its real window (`blender ... FILE.blend --python driver.py -- JOB.json`): plays one
scenario (JOB's "scenario": "panel.panel" is `scenario_panel.panel`) step by step from a `bpy.app.timers`
callback, so Blender's own event loop runs between the steps (it handles the X events the steps send,
redraws, and runs the extension's timers), then writes `result.json` in the job's folder and quits Blender.

A scenario is a generator: each `yield` gives Blender that many seconds before the next step. It fills
`ctx.result` (what it measured and read) and may raise; the error and its traceback go into the result, and
the host's test fails on them.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
import traceback
from pathlib import Path

import bpy

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import steps  # noqa: E402
from window import Window  # noqa: E402

JOB = json.loads(Path(sys.argv[sys.argv.index("--") + 1]).read_text(encoding="utf-8"))
OUT = Path(JOB["out"])
STARTED = time.perf_counter()


class Context:
    def __init__(self):
        self.job = JOB
        self.window = Window(OUT)
        self.result: dict = {"scenario": JOB["scenario"], "shots": self.window.shots}
        self.addon = steps.addon_modules()


def run() -> None:
    ctx = Context()
    group, name = JOB["scenario"].split(".")
    scenario = getattr(importlib.import_module(f"scenario_{group}"), name)(ctx)

    def finish(error: str | None) -> None:
        ctx.window.close()
        ctx.result["error"] = error
        ctx.result["seconds"] = round(time.perf_counter() - STARTED, 1)
        (OUT / "result.json").write_text(json.dumps(ctx.result, indent=1), encoding="utf-8")
        bpy.ops.wm.quit_blender()

    def step():
        try:
            wait = next(scenario)
        except StopIteration:
            finish(None)
            return None
        except Exception:  # noqa: BLE001 - whatever failed is reported to the test, which fails on it
            traceback.print_exc()
            finish(traceback.format_exc())
            return None
        return max(0.0, float(wait))

    bpy.app.timers.register(step, first_interval=0.5)


run()
