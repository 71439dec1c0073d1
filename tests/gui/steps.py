"""Steps the GUI scenarios share (`scenario_*.py`, run in Blender's real window by `driver.py`). A scenario is a
generator that acts as an editor would (clicks, drags, key presses through X events), yields while Blender works
and draws, and records in `ctx.result` what the host's test checks: screenshots, the words read from them,
screen positions, and what the extension's runtime state says. Timings are recorded and reported by
`./dev gui-test`; tests assert behaviour, never wall-clock time.
"""

from __future__ import annotations

import importlib
import time
import types

import bpy

from window import Rect, find, phrase

MODULE = "bl_ext.user_default.vse_faceswap"
TIMEOUT = 240.0  # seconds a scenario waits for anything (a hang guard: a broken build fails, it does not hang)


def addon_modules():
    """The installed extension's modules the scenarios read (its runtime state, its geometry)."""
    names = ("compat", "coverage_overlay", "engine_client", "frame_mapping", "jobs", "ops", "preview", "runtime",
             "timeline", "paths")
    return types.SimpleNamespace(**{name: importlib.import_module(f"{MODULE}.{name}") for name in names})


def wait_until(predicate, what: str, timeout: float = TIMEOUT, poll: float = 0.05):
    """Yield until `predicate()` holds; raise (naming `what`) after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up after {timeout:.0f} s waiting for {what}")
        yield poll


def scene():
    return bpy.context.window.scene


def shot(ctx):
    """The project's one original movie strip and what stands for it at the top level (its face swap group)."""
    original = ctx.addon.timeline.movie_strips(scene())[0]
    return original, ctx.addon.coverage_overlay.drawn_at(scene(), original) or original


def settle(ctx, seconds: float = 1.0):
    """Redraw everything and give Blender `seconds` to do it."""
    ctx.window.redraw_all()
    yield seconds


def open_project(ctx):
    """The window has drawn the project and the engine has said which frames are in the cache."""
    win = ctx.window
    win.count_draws("timeline", bpy.types.SpaceSequenceEditor, "WINDOW")

    def drawn() -> bool:
        win.redraw_all()  # an idle window draws nothing new on its own
        return bool(win.draws("timeline"))

    yield from wait_until(drawn, "the first redraw of the sequencer", poll=0.2)
    original, _ = shot(ctx)
    media = ctx.addon.paths.media_path(original)
    if original.faceswap.role == "ORIGINAL":
        yield from wait_until(lambda: media in ctx.addon.runtime.STATE.swapped, "the engine's coverage answer")
    timeline = win.area("SEQUENCER")
    with win.override(timeline):
        bpy.ops.sequencer.view_all()  # the strips fill the timeline: a frame is many pixels wide
    timeline.spaces.active.show_region_ui = True
    yield from settle(ctx)


def open_face_swap_tab(ctx, name: str):
    """Click the sidebar's "Face Swap" tab, found by reading the tabs (written top to bottom)."""
    win = ctx.window
    sidebar = win.region(win.area("SEQUENCER"), "UI")
    rect = win.rect(sidebar)
    shot_path = win.screenshot(f"{name}_tabs")
    tabs = Rect(rect.x + rect.width - 24, rect.y, 24, rect.height)
    words = win.ocr(shot_path, tabs, f"{name}_tabs", rotate=-90)
    tab = phrase(words, "Face Swap") or find(words, "Face")
    ctx.result["tabs"] = [w.text for w in words]
    if tab is None:
        raise AssertionError(f"no Face Swap tab among the sidebar's tabs: {[w.text for w in words]}")
    yield from win.click(*tab.rect.center)
    yield from settle(ctx)
    sidebar = win.region(win.area("SEQUENCER"), "UI")
    if sidebar.active_panel_category != "Face Swap":
        raise AssertionError(f"clicking the Face Swap tab showed {sidebar.active_panel_category!r}")


def sidebar_pages(ctx, name: str, pages: int, each):
    """From the sidebar's top, a page at a time as an editor scrolls it (the timeline's area is short): a
    screenshot, the words read on it, `each(words)`; stops at the first page where that is true and returns
    True, else returns False at the last page (the sidebar stays scrolled where it stopped)."""
    win = ctx.window
    sidebar = win.region(win.area("SEQUENCER"), "UI")
    x, y = win.rect(sidebar).center
    yield from win.scroll(x, y, -6 * pages)  # from the top, wherever an earlier step left it
    for page in range(pages):
        if page:
            yield from win.scroll(x, y, 6)
            yield from settle(ctx, 0.5)
        shot_path = win.screenshot(f"{name}_{page}")
        if each(win.ocr(shot_path, win.rect(sidebar), f"{name}_{page}")):
            return True
    return False


def read_sidebar(ctx, name: str, pages: int = 2):
    """The words read on each page of the sidebar, recorded in the result under `name` (a list of pages of
    [text, x, y, width, height]); then the sidebar is scrolled back to its top."""
    read = ctx.result.setdefault("read", {})[name] = []
    yield from sidebar_pages(ctx, name, pages, lambda words: read.append([[w.text, *w.rect.as_list()]
                                                                          for w in words]))
    win = ctx.window
    yield from win.scroll(*win.rect(win.region(win.area("SEQUENCER"), "UI")).center, -6 * pages)
    yield from settle(ctx, 0.5)


def button(ctx, label: str, name: str, pages: int = 2):
    """The screen rectangle of the button `label` on the row of Analyze, Swap and Update, looked for from the
    sidebar's top a page at a time (the sidebar stays scrolled there, for a click)."""
    found, seen = [], []

    def look(words) -> bool:
        seen.extend(w.text for w in words)
        row = find(words, "Analyze")
        found.append(next((w for w in words if row is not None and abs(w.rect.y - row.rect.y) <= 6
                           and w.text.strip(".,:;|").lower() == label.lower()), None))
        return found[-1] is not None

    if not (yield from sidebar_pages(ctx, name, pages, look)):
        raise AssertionError(f"no {label} button read in the sidebar: {seen}")
    return found[-1].rect


def select_shot(ctx):
    """Click the shot's strip in the timeline (it becomes selected and active)."""
    win = ctx.window
    _, shown = shot(ctx)
    timeline = win.region(win.area("SEQUENCER"), "WINDOW")
    x, y = win.point(timeline, *timeline.view2d.view_to_region(shown.frame_final_start + 2, shown.channel + 0.5))
    yield from win.click(x, y)
    yield from settle(ctx)


def preview_region(ctx):
    area = ctx.window.area("PREVIEW")
    return next(r for r in area.regions if r.type == "PREVIEW" and r.width > 1 and r.height > 1)


def image_rect(ctx) -> list[int]:
    """The scene's frame on the screen in the preview region: [x, y, width, height]."""
    win, region, render = ctx.window, preview_region(ctx), scene().render
    half = render.resolution_x / 2, render.resolution_y / 2
    x0, y0 = win.point(region, *region.view2d.view_to_region(-half[0], half[1], clip=False))  # top left
    x1, y1 = win.point(region, *region.view2d.view_to_region(half[0], -half[1], clip=False))
    return [x0, y0, x1 - x0, y1 - y0]


def labelled(ctx, text: str, name: str, pages: int = 2):
    """The rectangle of the words `text` (on one line) in the sidebar, looked for from its top a page at a time
    (the sidebar stays scrolled there, for a click)."""
    found, seen = [], []

    def look(words) -> bool:
        seen.extend(w.text for w in words)
        found.append(phrase(words, text))
        return found[-1] is not None

    if not (yield from sidebar_pages(ctx, name, pages, look)):
        raise AssertionError(f"{text!r} not read in the sidebar: {seen}")
    return found[-1].rect
