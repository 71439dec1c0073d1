"""The smoke scenario: the project with its swapped shot, the Face Swap tab, the coverage bar."""

from __future__ import annotations

from steps import labelled, open_face_swap_tab, open_project, read_sidebar, scene, select_shot, settle, shot


def coverage_columns(ctx) -> dict:
    """Where each timeline frame of the shot is on the screen below its strip (a column of pixels from the
    strip's channel line up a third of a channel: the coverage bar lies in it), what the extension's runtime
    state says of the frame, and the engine request that asks the cache the same."""
    win, addon = ctx.window, ctx.addon
    original, shown = shot(ctx)
    timeline = win.region(win.area("SEQUENCER"), "WINDOW")
    media = addon.paths.media_path(original)
    state = addon.runtime.STATE
    columns = []
    for frame, index in sorted(addon.frame_mapping.shown_media_frames(original).items()):
        x, bottom = win.point(timeline, *timeline.view2d.view_to_region(frame + 0.5, shown.channel, clip=False))
        _, top = win.point(timeline, *timeline.view2d.view_to_region(frame + 0.5, shown.channel + 0.33, clip=False))
        columns.append({"frame": frame, "media": index, "x": x, "top": top, "bottom": bottom,
                        "analysed": index in state.analysed.get(media, ()),
                        "swapped": index in state.swapped.get(media, ())})
    return {"columns": columns, "media": media,
            "colors": {"analysed": addon.coverage_overlay.ANALYSED_COLOR,
                       "swapped": addon.coverage_overlay.SWAPPED_COLOR},
            "coverage_request": {"kind": "coverage", "settings": addon.jobs.engine_settings(scene()),
                                 "items": addon.timeline.work_items(scene(), [original])}}


def panel(ctx):
    """The smoke scenario: the project opens with its swapped shot; the Face Swap tab shows its panels with
    nothing clicked but the tab; the coverage bar under the shot; then the shot clicked (its group active)."""
    yield from open_project(ctx)
    yield from open_face_swap_tab(ctx, "panel")
    yield from read_sidebar(ctx, "panel_opened")
    ctx.result["coverage"] = coverage_columns(ctx)
    ctx.result["coverage"]["shot"] = ctx.window.shots[-1]
    yield from select_shot(ctx)
    ctx.result["active_after_click"] = scene().sequence_editor.active_strip.name
    yield from read_sidebar(ctx, "panel_clicked")


def match_scene(ctx):
    """The shot's panel offers to match the scene to the clip; its button is clicked."""
    yield from open_project(ctx)
    yield from open_face_swap_tab(ctx, "size")
    yield from read_sidebar(ctx, "size_before")
    rect = yield from labelled(ctx, "Match Scene", "size_button")
    yield from ctx.window.click(*rect.center)
    yield from settle(ctx)
    ctx.result["resolution"] = [scene().render.resolution_x, scene().render.resolution_y]
    yield from read_sidebar(ctx, "size_after")
