"""Jobs started by clicking the panel's buttons: Swap, then a blend setting typed in and Update, with the
progress they show and the longest gap between two redraws of the sidebar while they run; and the engine
process killed in the middle of a job."""

from __future__ import annotations

import json
import os
import signal
import time

import bpy

from steps import button, image_rect, open_face_swap_tab, open_project, read_sidebar, scene, select_shot, settle, \
    wait_until
from window import find


def idle_gaps(ctx, seconds: float = 3.0):
    """The same redraws with no job: the sidebar tagged every 50 ms as a job's progress tags it. The longest
    gap here is the machine's and Blender's own (the GUI suite runs on shared machines), beside a job's."""
    win = ctx.window
    sidebar = win.region(win.area("SEQUENCER"), "UI")
    draws = win.draws("sidebar")
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        sidebar.tag_redraw()
        yield 0.05
    stamps = [t for t in draws if t >= started]
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    return {"redraws": len(stamps), "max_redraw_gap_ms": round(1000 * max(gaps), 1) if gaps else None,
            "median_redraw_gap_ms": round(1000 * sorted(gaps)[len(gaps) // 2], 1) if gaps else None}


def within(predicate, seconds: float, poll: float = 0.01):
    """Yield until `predicate()` holds (True) or `seconds` pass (False)."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        yield poll
    return True


def job_by_click(ctx, label: str, name: str):
    """Click `label` (Swap or Update) and follow the job to its end: the progress seen, one screenshot while
    it runs, and the gaps between the sidebar's redraws while it runs (the gap that holds the screenshot,
    which stops Blender's loop, is left out and said)."""
    win, status = ctx.window, ctx.addon.runtime.STATE.job
    draws = win.draws("sidebar")
    for attempt in range(3):  # the sidebar may scroll back to its top between the reading and the click
        rect = yield from button(ctx, label, f"{name}_button_{attempt}")
        yield from win.click(*rect.center)
        started = yield from within(lambda: status.running, seconds=5.0)
        if started:
            break
    else:
        raise AssertionError(f"three clicks on {label} started no job: {status.text}")
    started, progress, shot = time.perf_counter(), [], None
    while status.running:
        progress.append(round(status.progress, 3))
        if shot is None and status.progress >= 0.3:
            before = time.perf_counter()
            win.screenshot(f"{name}_running")
            shot = (before, time.perf_counter())
        yield 0.02
    ended = time.perf_counter()
    if shot is not None:  # read after the job (tesseract would stop Blender's loop while it runs)
        words = win.ocr(win.out / win.shots[-1], win.rect(win.region(win.area("SEQUENCER"), "UI")), f"{name}_running")
        ctx.result.setdefault("read", {})[f"{name}_running"] = [[[w.text, *w.rect.as_list()] for w in words]]
    stamps = [t for t in draws if started <= t <= ended]
    gaps = [(b - a, a, b) for a, b in zip(stamps, stamps[1:])]
    kept = [g for g, a, b in gaps if shot is None or b < shot[0] or a > shot[1]]
    long = [[round(1000 * (a - started)), round(1000 * g)] for g, a, b in gaps if g > 0.1]
    return {"status": status.text, "seconds": round(ended - started, 2), "progress": sorted(set(progress)),
            "running_shot": win.shots[-1] if shot else None,
            "redraws": len(stamps), "max_redraw_gap_ms": round(1000 * max(kept), 1) if kept else None,
            "gaps_over_100ms": long, "screenshot_at_ms": round(1000 * (shot[0] - started)) if shot else None,
            "screenshot_ms": round(1000 * (shot[1] - shot[0]), 1) if shot else None,
            "report": json.loads(scene().faceswap.last_report or "{}")}


def type_into(ctx, label: str, value: str, name: str):
    """Double-click the field labelled `label` in the sidebar (Blender edits its value as text), type `value`
    over it and press Return."""
    win = ctx.window
    shot_path = win.screenshot(name)
    words = win.ocr(shot_path, win.rect(win.region(win.area("SEQUENCER"), "UI")), name)
    field = find(words, label)
    if field is None:
        raise AssertionError(f"no {label} field read in the sidebar: {[w.text for w in words]}")
    yield from win.hover(*field.rect.center)
    win.xdotool("click", "--repeat", 2, "--delay", 80, 1)
    yield 0.3
    win.xdotool("key", "ctrl+a")
    win.xdotool("type", "--delay", 40, value)
    win.xdotool("key", "Return")
    yield 0.3


def shot_selected(ctx, name: str):
    """The project open, its sidebar's redraws counted, the Face Swap tab shown, the shot clicked."""
    ctx.window.count_draws("sidebar", bpy.types.SpaceSequenceEditor, "UI")
    yield from open_project(ctx)
    yield from open_face_swap_tab(ctx, name)
    yield from select_shot(ctx)
    ctx.result["image_rect"] = image_rect(ctx)


def swap_and_update(ctx):
    """Select the shot, click Swap; type a new opacity, click Update."""
    yield from shot_selected(ctx, "jobs")
    ctx.result["idle"] = yield from idle_gaps(ctx)
    ctx.result["swap"] = yield from job_by_click(ctx, "Swap", "swap")
    yield from settle(ctx)
    yield from read_sidebar(ctx, "after_swap")
    yield from type_into(ctx, "Opacity", "0.6", "opacity_field")
    ctx.result["opacity"] = scene().faceswap.opacity
    flight = ctx.addon.runtime.PREVIEW
    yield from wait_until(lambda: flight.request is None, "the live preview of the new opacity")
    ctx.result["update"] = yield from job_by_click(ctx, "Update", "update")
    yield from settle(ctx)
    yield from read_sidebar(ctx, "after_update")


def dead_engine(ctx):
    """Click Swap, kill the engine process once frames are coming, read the panel; click Update."""
    yield from shot_selected(ctx, "dead")
    win, status, session = ctx.window, ctx.addon.runtime.STATE.job, ctx.addon.runtime.ENGINE
    rect = yield from button(ctx, "Swap", "swap_button")
    yield from win.click(*rect.center)
    yield from wait_until(lambda: status.running and status.progress >= 0.2, "the swap's first frames", poll=0.01)
    ctx.result["killed_at"] = status.progress
    ctx.result["engine_starts"] = [session.starts]
    os.kill(session.process.pid, signal.SIGKILL)
    yield from wait_until(lambda: not status.running, "the panel to notice the engine's end")
    ctx.result["status_after_kill"] = status.text
    yield from settle(ctx)
    ctx.result["after_kill_shot"] = win.screenshot("after_kill").name
    yield from read_sidebar(ctx, "after_kill")
    ctx.result["retry"] = yield from job_by_click(ctx, "Update", "retry")
    ctx.result["engine_starts"].append(session.starts)
    yield from settle(ctx)
    yield from read_sidebar(ctx, "after_retry")


def strips_now(ctx) -> list[list]:
    """Every strip of the scene, nested ones too: [name, type, channel, first frame, role], sorted."""
    editor = scene().sequence_editor
    compat = ctx.addon.compat
    return sorted([strip.name, strip.type, strip.channel, compat.left_handle(strip), strip.faceswap.role]
                  for strip in compat.all_strips(editor))


def press_over_timeline(ctx, *keys: str):
    """Keys pressed with the pointer over the timeline (Ctrl+Z there is the editor's undo), then a redraw."""
    win = ctx.window
    yield from win.keys(*win.rect(win.region(win.area("SEQUENCER"), "WINDOW")).center, *keys)
    yield from settle(ctx)



def undo_swap(ctx):
    """Ctrl+Z while a Swap runs; Swap clicked again (its frames are made), Ctrl+Z, Ctrl+Shift+Z, Update: the
    strips and the panel recorded after each."""
    yield from shot_selected(ctx, "undo")
    win, status = ctx.window, ctx.addon.runtime.STATE.job
    ctx.result["before"] = strips_now(ctx)
    rect = yield from button(ctx, "Swap", "swap_button")
    yield from win.click(*rect.center)
    yield from wait_until(lambda: status.running and status.progress >= 0.2, "the swap's first frames", poll=0.01)
    yield from press_over_timeline(ctx, "ctrl+z")
    yield from wait_until(lambda: not status.running, "the swap to end")
    ctx.result["undone_while_running"] = {"status": status.text, "report": json.loads(scene().faceswap.last_report or "{}")}
    yield from settle(ctx)
    ctx.result["after_undo_while_running"] = strips_now(ctx)
    yield from select_shot(ctx)
    ctx.result["again"] = yield from job_by_click(ctx, "Swap", "again")
    yield from settle(ctx)
    ctx.result["after_again"] = strips_now(ctx)
    for name, keys in (("undo", "ctrl+z"), ("redo", "ctrl+shift+z")):
        yield from press_over_timeline(ctx, keys)
        ctx.result[f"after_{name}"] = strips_now(ctx)
        yield from read_sidebar(ctx, f"after_{name}")
    ctx.result["update"] = yield from job_by_click(ctx, "Update", "update")
    yield from settle(ctx)
    yield from read_sidebar(ctx, "after_update")
