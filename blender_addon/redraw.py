"""Redrawing what the add-on shows, after the runtime state changed: the one loop over Blender's windows and
their areas (none in the bpy module, which has no window; a window that is closing has no screen)."""

from __future__ import annotations

import bpy


def areas(area_type: str = "SEQUENCE_EDITOR"):
    """(window, area) for every open area of `area_type` (the sequencer's by default), in every window."""
    for window in getattr(bpy.context.window_manager, "windows", ()):
        screen = window.screen
        for area in screen.areas if screen is not None else ():
            if area.type == area_type:
                yield window, area


def redraw(regions: tuple[str, ...] | None = None, area_type: str = "SEQUENCE_EDITOR") -> None:
    """Redraw the sequencer areas, or those of `area_type` (only their regions of these types, when given:
    e.g. ("UI",), the sidebar alone, for a progress bar)."""
    for _window, area in areas(area_type):
        if regions is None:
            area.tag_redraw()
            continue
        for region in area.regions:
            if region.type in regions:
                region.tag_redraw()
