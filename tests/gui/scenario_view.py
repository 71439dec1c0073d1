"""What the sequencer's preview shows: the live preview when a blend slider is dragged in the panel, against
a render of the same frame; the engine's composited picture at the preview's proxy sizes; and playback with
the UI's play operator, with and without the swapped strips (at the preview's 100 % and 50 %)."""

from __future__ import annotations

import time
from pathlib import Path

import bpy
import cv2
import numpy as np

from steps import image_rect, open_face_swap_tab, open_project, scene, settle, wait_until
from window import find

PLAY_ROUNDS = 2  # each: the shot with its swapped strips, then the movie alone


def watch_preview(ctx) -> list:
    """[(time, frame, the last preview answer then), ...] at every redraw of the preview region."""
    stamps = []
    runtime = ctx.addon.runtime

    def drawn():
        if bpy.context.region is not None and bpy.context.region.type == "PREVIEW":
            stamps.append((time.perf_counter(), bpy.context.scene.frame_current, id(runtime.STATE.last_preview)))

    ctx.window.add_draw_handler(bpy.types.SpaceSequenceEditor, drawn, "PREVIEW")
    return stamps


def render_frame(ctx, name: str) -> str:
    """The current frame rendered by the sequencer (as File > Render would), saved beside the screenshots."""
    path = ctx.window.out / f"{name}.png"
    render = scene().render
    render.filepath, render.image_settings.file_format = str(path), "PNG"
    bpy.ops.render.render(write_still=True)
    return path.name


def preview(ctx):
    """Drag the Opacity slider from 1.0 to about 0.6 with the playhead resting on a frame with a face; record
    when the preview region first shows the frame of the last answer after the release."""
    stamps = watch_preview(ctx)
    yield from open_project(ctx)
    yield from open_face_swap_tab(ctx, "preview")
    win, runtime, flight = ctx.window, ctx.addon.runtime, ctx.addon.runtime.PREVIEW
    ctx.result["frame"] = scene().frame_current
    ctx.result["image_rect"] = image_rect(ctx)
    before = win.screenshot("preview_before")
    words = win.ocr(before, win.rect(win.region(win.area("SEQUENCER"), "UI")), "preview_sidebar")
    label = find(words, "Opacity")
    if label is None:
        raise AssertionError(f"no Opacity slider read in the sidebar: {[w.text for w in words]}")
    sidebar = win.rect(win.region(win.area("SEQUENCER"), "UI"))
    answers_before = id(runtime.STATE.last_preview)
    # Blender's slider moves by its whole range over its width (the sidebar's, less its margins)
    yield from win.drag((label.rect.center[0] + 60, label.rect.center[1]), -int(0.4 * sidebar.width), steps=20)
    released = time.perf_counter()
    ctx.result["opacity"] = round(scene().faceswap.opacity, 3)
    yield from wait_until(lambda: flight.request is None and not flight.pending
                          and id(runtime.STATE.last_preview) != answers_before, "the last preview's answer")
    final = id(runtime.STATE.last_preview)
    yield from settle(ctx, 0.5)
    shown = next((t for t, _, answer in stamps if answer == final and t >= released), None)
    ctx.result["slider_to_screen_ms"] = round(1000 * (shown - released), 1) if shown is not None else None
    ctx.result["last_preview"] = runtime.STATE.last_preview
    ctx.result["after"] = win.screenshot("preview_after").name
    ctx.result["before"] = before.name
    ctx.result["render"] = render_frame(ctx, "render_swapped")
    swapped = ctx.addon.timeline.swapped_strips(scene())
    for strip in swapped:
        strip.mute = True
    ctx.result["render_unswapped"] = render_frame(ctx, "render_unswapped")
    for strip in swapped:
        strip.mute = False
    original = ctx.addon.timeline.originals(scene())[0]
    ctx.result["overlay"] = str(ctx.addon.paths.output_folder(scene(), ctx.addon.paths.media_path(original)))


def proxy_sizes(ctx):
    """The preview at its proxy sizes 100 % and 50 %, on a frame with a face, with every picture the engine wrote
    for 50 % replaced by magenta: the preview at 50 % reads those files, at 100 % the full-size ones."""
    yield from open_project(ctx)
    win, sc = ctx.window, scene()
    sc.frame_set(ctx.job["frame"])
    original = ctx.addon.timeline.originals(sc)[0]
    folder = Path(ctx.addon.paths.output_folder(sc, ctx.addon.paths.media_path(original)))
    half = sorted((folder / "BL_proxy" / "images" / "50").glob("*.jpg"))
    ctx.result["pictures_at_50"] = len(half)
    for path in half:
        height, width = cv2.imread(str(path)).shape[:2]
        cv2.imwrite(str(path), np.full((height, width, 3), (255, 0, 255), np.uint8))
    space = win.area("PREVIEW").spaces.active
    ctx.result["proxy_render_size"] = space.proxy_render_size
    for size in ("PROXY_100", "PROXY_50", "PROXY_100"):
        space.proxy_render_size = size
        with win.override(win.area("SEQUENCER")):
            bpy.ops.sequencer.refresh_all()  # the sequencer's caches emptied: the picture is read again
        yield from settle(ctx, 1.0)
        ctx.result.setdefault("shots_by_size", []).append([size, win.screenshot(f"preview_{size}").name])
    ctx.result["image_rect"] = image_rect(ctx)


def play_once(ctx, stamps: list, with_swap: bool):
    """Play the scene from its first frame to its last once, every frame drawn (no frame dropping), Blender's
    caches emptied first; returns the frames after the first drawn, and how many a second from the press of
    play to the last one's redraw."""
    win, sc = ctx.window, scene()
    for strip in ctx.addon.timeline.swapped_strips(sc):
        strip.mute = not with_swap
    sc.frame_set(sc.frame_start)
    timeline = win.area("SEQUENCER")
    with win.override(timeline):
        bpy.ops.sequencer.refresh_all()  # empties the sequencer's caches: every frame is read and composited
    yield from settle(ctx, 1.0)
    first, started = len(stamps), time.perf_counter()
    with win.override(timeline):
        bpy.ops.screen.animation_play()
    yield from wait_until(lambda: sc.frame_current >= sc.frame_end, "playback to reach the last frame", poll=0.005)
    with win.override(timeline):
        bpy.ops.screen.animation_cancel(restore_frame=False)
    yield from settle(ctx, 0.5)
    shown = {}  # frame -> when the preview first drew it after play was pressed
    for t, frame, _ in stamps[first:]:
        if sc.frame_start < frame <= sc.frame_end:
            shown.setdefault(frame, t)
    span = max(shown.values()) - started if shown else 0
    return {"frames_drawn": len(shown), "fps": round(len(shown) / span, 2) if span > 0 else None}


def playback(ctx):
    """The shot played with the UI's play operator, with its swapped strips and as the movie alone, in turns;
    first the shot's movie is written, as after a Swap in the window (the project was made in background mode)."""
    stamps = watch_preview(ctx)
    yield from open_project(ctx)
    sc = scene()
    ctx.result["movie_job_started"] = ctx.addon.ops.start_preview_movies(sc)
    yield from wait_until(lambda: not ctx.addon.jobs.running(), "the preview movie's job")
    yield from settle(ctx)
    original = ctx.addon.timeline.originals(sc)[0]
    ctx.result["movie_is_proxy"] = original.use_proxy and original.proxy.build_100
    sc.sync_mode = "NONE"  # Play Every Frame: the rate is what Blender manages, no frame is skipped
    ctx.window.area("PREVIEW").spaces.active.proxy_render_size = ctx.job.get("proxy_size", "PROXY_100")
    ctx.result["scene_fps"] = sc.render.fps / sc.render.fps_base
    ctx.result["frames"] = sc.frame_end - sc.frame_start + 1
    runs = {"with_swap": [], "movie_alone": []}
    for _ in range(PLAY_ROUNDS):
        for name, with_swap in (("with_swap", True), ("movie_alone", False)):
            original.use_proxy = with_swap  # the movie alone: the clip itself, as before the swap
            runs[name].append((yield from play_once(ctx, stamps, with_swap)))
    ctx.result["runs"] = runs
    win = ctx.window
    sc.frame_set(12)
    yield from settle(ctx)
    win.screenshot("playback_frame_12")
