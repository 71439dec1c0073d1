"""What the preview shows of a swapped strip: the composited frames, as the strip's proxy.

The engine writes, beside each overlay with faces, the frame with its overlay laid over it, opaque, where
Blender looks for an image strip element's proxy at 100 % and, at half the size, at 50 %
(`output_layout.preview_path`). With the swapped strip's proxy on at those sizes, the preview (proxy size 100 %
with proxies on: the Video Editing workspace's default; 50 %, where an editor plays on a slow machine) shows
that picture, and an opaque picture in an alpha-over strip hides the movie below it: Blender
does not decode the movie at all. A full-frame RGBA overlay cost about 10 ms a 1080p frame over the movie's
own. Renders (F12, `render.render`, the farm, OpenGL renders) never read proxies and keep the exact overlays.

The picture holds the movie as the engine decoded it, under nothing else. Where the shot shows the movie
otherwise, the preview keeps today's overlay (proxy off), so it never shows what a render would not:
- edits the next Update moves to the face swap group still on the original (modifiers, opacity, blend mode,
  saturation, multiply): the hidden movie would drop them;
- a blend mode, saturation, multiply or modifier set on the swapped strip itself: they would act on the whole
  picture instead of the face;
- proxies stored per project (`proxy_storage`): Blender names those by the element's file name alone, and
  every shot's overlays are called `000000.png`...
Transform, crop and flip need nothing: the strip mirrors them and the picture has the movie's size. Where
they uncover the frame's edge the strip is no longer opaque, and Blender blends it over the movie (same
pixels, the movie decoded again). At the preview's other proxy sizes (25 %, 75 %) there is no picture of that
size, and Blender shows the overlay.
"""

from __future__ import annotations

import os

import bpy

from . import paths, shot_group
from .engine_client import engine_module

movie_files = engine_module("preview_movie_files")  # standard library only: the movie's and the pictures' files

# The proxy sizes the engine writes pictures for, and the others (Blender's sizes: 25, 50, 75, 100 %).
PICTURE_SIZES = tuple(f"build_{size}" for size in paths.layout.PREVIEW_SIZES)
OTHER_SIZES = tuple(f"build_{size}" for size in (25, 50, 75, 100) if size not in paths.layout.PREVIEW_SIZES)


def applies(scene, original, swapped) -> bool:
    """Whether the preview may show the composited picture in place of the overlay over the movie."""
    return (scene.sequence_editor.proxy_storage == "PER_STRIP"
            and not shot_group.has_composite_edits(original)
            and swapped.blend_type == "ALPHA_OVER" and len(swapped.modifiers) == 0
            and swapped.color_saturation == 1.0 and swapped.color_multiply == 1.0)


def follow(scene, original, swapped) -> None:
    """Turn the swapped strip's proxy on at 100 % and 50 % (Blender's own folders) where `applies`, else off.
    Only what differs is set: each change makes Blender drop the strip's cached images."""
    wanted = applies(scene, original, swapped)
    if swapped.use_proxy != wanted:
        swapped.use_proxy = wanted
    if not wanted:
        return
    proxy = swapped.proxy
    settings = ({size: False for size in OTHER_SIZES} | {size: True for size in PICTURE_SIZES}
                | {"use_proxy_custom_directory": False, "use_proxy_custom_file": False})
    for name, value in settings.items():
        if getattr(proxy, name) != value:
            setattr(proxy, name, value)


def movie_wanted(original, swapped, folder: str) -> bool:
    """Whether the shot's preview may be its movie (in the clip's output `folder`): its pictures show, and the
    original shows its file's first stream and has no proxy of the editor's."""
    return (swapped.use_proxy and original.stream_index == 0
            and (not original.use_proxy or movie_is_proxy(original, folder)))


def follow_movie(original, swapped, folder: str, shown: list[int]) -> None:
    """Make the shot's movie (in the clip's output `folder`) the original's 100 % proxy where it is wanted
    (`movie_wanted`) and holds every media frame the shot shows (`shown`); else turn ours off and put the
    pictures back."""
    wanted = shown and movie_wanted(original, swapped, folder)
    held = movie_files.current(folder, paths.media_path(original)) if wanted else None
    if held is not None and max(shown) < held[1]:
        if not original.use_proxy:
            original.use_proxy = True
        settings = ({size: False for size in ("build_25", "build_50", "build_75")}
                    | {"build_100": True, "use_proxy_custom_file": False, "use_proxy_custom_directory": True})
        if "timecode" in original.proxy.bl_rna.properties:  # gone in 5.2, whose proxies have no timecode index
            settings["timecode"] = "NONE"
        for name, value in settings.items():
            if getattr(original.proxy, name) != value:
                setattr(original.proxy, name, value)
        directory = movie_files.proxy_folder(folder, held[0])
        if os.path.normpath(bpy.path.abspath(original.proxy.directory)) != os.path.normpath(directory):
            original.proxy.directory = paths.stored_path(directory)  # `//…` beside the .blend, as the overlays
        return
    if movie_is_proxy(original, folder):
        original.use_proxy = False
    if movie_files.stood_in(folder):  # not on every refresh: only where there is something to put back
        movie_files.restore(folder)


def movie_is_proxy(original, folder: str) -> bool:
    """Whether the original's proxy is one of the shot's movies (ours, not the editor's)."""
    proxy = original.proxy if original.use_proxy else None
    return (proxy is not None and proxy.use_proxy_custom_directory and proxy.build_100
            and os.path.dirname(os.path.normpath(bpy.path.abspath(proxy.directory)))
            == os.path.normpath(movie_files.movies_folder(folder)))
