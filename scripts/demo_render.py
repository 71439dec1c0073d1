"""The demo's result, rendered by Blender as an editor would render it: a contact sheet (a few frames of the
timeline, the original and the swapped picture side by side, labelled) and an H.264 MP4 of the whole
timeline.

Every picture is Blender's own sequencer render of the scene: with the swapped strips (the overlays inside
each face swap group) shown for the swapped picture, and muted for the original. Nothing is composited
by hand; the sheet only lays the rendered frames side by side under their labels.

Used by `./dev demo` (scripts/blender_demo.py) and tests/blender/test_blender_demo_render.py; needs the
bpy module (Blender 5.0's output settings: `media_type`) and OpenCV.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

CELL_WIDTH = 480  # a frame's width on the sheet at most (a smaller frame keeps its own)
LABEL_HEIGHT = 28  # the label bar above each frame
GAP = 8  # between the original and the swapped frame
BACKGROUND = (32, 32, 32)  # BGR


@dataclass
class Rendered:
    sheet: Path  # the contact sheet (PNG)
    movie: Path  # the whole timeline (MP4, H.264)
    frames: list[int]  # the timeline frames on the sheet, top to bottom
    stills: list[tuple[Path, Path]]  # each of those frames rendered: (original, swapped), full size
    cell: tuple[int, int]  # (width, height) of a frame on the sheet


def render_demo(bpy, scene, swapped_strips, folder: Path, count: int = 4) -> Rendered:
    """Render the sheet's `count` frames both ways and the whole timeline as a movie into `folder`. The
    scene keeps the movie as its output (so `blender -b FILE -a` renders it again); the strips' mute
    flags and the current frame are as they were."""
    folder.mkdir(parents=True, exist_ok=True)
    frames = sheet_frames(scene.frame_start, scene.frame_end, count)
    stills = render_stills(bpy, scene, swapped_strips, frames, folder / "frames")
    sheet, cell = contact_sheet(stills, frames, folder / "contact_sheet.png")
    movie = render_movie(bpy, scene, folder / "swapped.mp4")
    return Rendered(sheet, movie, frames, stills, cell)


def sheet_frames(first: int, last: int, count: int) -> list[int]:
    """`count` timeline frames spread over first..last: the middle of each of `count` equal parts."""
    length = last - first + 1
    return sorted({first + int(length * (part + 0.5) / count) for part in range(min(count, length))})


def render_stills(bpy, scene, swapped_strips, frames: list[int], folder: Path) -> list[tuple[Path, Path]]:
    """Each frame rendered twice as PNG, the swapped strips muted (original) and shown (swapped)."""
    folder.mkdir(parents=True, exist_ok=True)
    settings = scene.render.image_settings
    if hasattr(settings, "media_type"):  # Blender 5.0: images and movies are separate media types
        settings.media_type = "IMAGE"
    settings.file_format, settings.color_mode = "PNG", "RGB"
    were_muted = [strip.mute for strip in swapped_strips]
    current = scene.frame_current
    stills = []
    try:
        for frame in frames:
            scene.frame_set(frame)
            pair = []
            for label, muted in (("original", True), ("swapped", False)):
                for strip in swapped_strips:
                    strip.mute = muted
                scene.render.filepath = str(folder / f"{frame:04d}_{label}.png")
                bpy.ops.render.render(write_still=True, scene=scene.name)
                pair.append(Path(scene.render.filepath))
            stills.append((pair[0], pair[1]))
    finally:
        for strip, muted in zip(swapped_strips, were_muted):
            strip.mute = muted
        scene.frame_set(current)
    return stills


def render_movie(bpy, scene, path: Path) -> Path:
    """The scene's whole frame range through Blender's FFmpeg output: MP4, H.264, no sound."""
    settings = scene.render.image_settings
    if hasattr(settings, "media_type"):
        settings.media_type = "VIDEO"
    settings.file_format = "FFMPEG"
    ffmpeg = scene.render.ffmpeg
    ffmpeg.format, ffmpeg.codec, ffmpeg.constant_rate_factor = "MPEG4", "H264", "MEDIUM"
    ffmpeg.audio_codec = "NONE"
    scene.render.filepath = str(path)
    bpy.ops.render.render(animation=True, scene=scene.name)
    return Path(scene.render.frame_path(frame=scene.frame_start))  # the name Blender gave the file


def contact_sheet(stills: list[tuple[Path, Path]], frames: list[int], path: Path) -> tuple[Path, tuple[int, int]]:
    """A row a frame: "original" and "swapped", each under its label bar. Returns the sheet and the size
    of a frame on it."""
    rows = []
    for frame, (original, swapped) in zip(frames, stills):
        cells = [_labelled(_read(picture), f"{label}, frame {frame}")
                 for picture, label in ((original, "original"), (swapped, "swapped"))]
        gap = np.full((cells[0].shape[0], GAP, 3), BACKGROUND, np.uint8)
        rows.append(np.hstack([cells[0], gap, cells[1]]))
    if not cv2.imwrite(str(path), np.vstack(rows)):
        raise OSError(f"could not write the contact sheet {path}")
    height, width = rows[0].shape[0] - LABEL_HEIGHT, (rows[0].shape[1] - GAP) // 2
    return path, (width, height)


def _read(path: Path) -> np.ndarray:
    picture = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if picture is None:
        raise OSError(f"Blender's render {path} cannot be read")
    if picture.shape[1] > CELL_WIDTH:
        height = round(picture.shape[0] * CELL_WIDTH / picture.shape[1])
        picture = cv2.resize(picture, (CELL_WIDTH, height), interpolation=cv2.INTER_AREA)
    return picture


def _labelled(picture: np.ndarray, text: str) -> np.ndarray:
    bar = np.full((LABEL_HEIGHT, picture.shape[1], 3), BACKGROUND, np.uint8)
    cv2.putText(bar, text, (8, LABEL_HEIGHT - 9), cv2.FONT_HERSHEY_SIMPLEX, 0.55, (255, 255, 255), 1, cv2.LINE_AA)
    return np.vstack([bar, picture])
