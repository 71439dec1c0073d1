"""A folder of frames, as the engine reads it, against Blender's own image strip of the same files (rendered by
this bpy, Standard view, no dither): the same size and, frame for frame, within 1/255 mean and 3/255 max per
channel. docs/blender.md's footage table lists the formats and what limits them.

What Blender shows otherwise, measured here and documented rather than followed:
- a JPEG's EXIF orientation: Blender (4.2 to 5.x) shows the picture as stored; the engine, as photo viewers
  do, upright. The extension swaps movie strips only, so this concerns the CLI, whose photos come out upright;
- alpha: Blender composites a frame's transparency, the engine takes its colour (as for movies with alpha).
"""

from __future__ import annotations

import struct

import cv2
import numpy as np
import pytest

from facecache.media.reader import MediaReader
from facecache.samples import sample_image
from test_blender_footage import source_compat

pytestmark = [pytest.mark.blender, pytest.mark.every_blender]

FRAMES = 3


def _exif_rotated_jpeg(picture: np.ndarray) -> bytes:
    """A JPEG whose EXIF orientation says "rotate 90 clockwise" (6), as a phone held upright writes it."""
    data = cv2.imencode(".jpg", picture, [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes()
    tiff = b"II*\x00" + struct.pack("<IH", 8, 1) + struct.pack("<HHIHH", 0x0112, 3, 1, 6, 0) + struct.pack("<I", 0)
    app1 = b"Exif\x00\x00" + tiff
    return data[:2] + b"\xff\xe1" + struct.pack(">H", len(app1) + 2) + app1 + data[2:]


WRITERS = {
    "PNG": (".png", lambda picture, i: cv2.imencode(".png", picture)[1].tobytes()),
    "PNG 16-bit": (".png", lambda picture, i: cv2.imencode(".png", picture.astype(np.uint16) * 257 + i * 37)[1].tobytes()),
    "JPEG": (".jpg", lambda picture, i: cv2.imencode(".jpg", picture, [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes()),
    "WebP": (".webp", lambda picture, i: cv2.imencode(".webp", picture, [cv2.IMWRITE_WEBP_QUALITY, 90])[1].tobytes()),
    "TIFF": (".tif", lambda picture, i: cv2.imencode(".tif", picture)[1].tobytes()),
    "JPEG with EXIF orientation": (".jpg", lambda picture, i: _exif_rotated_jpeg(picture)),
}


def blender_pictures(bpy, folder, files):
    """BGR pictures of the image strip of `files`, one per timeline frame, as this Blender renders it."""
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    strip = source_compat().top_strips(scene.sequence_editor_create()).new_image("frames", str(files[0]), 1, 1)
    for path in files[1:]:
        strip.elements.append(path.name)
    settings = scene.render
    settings.resolution_x, settings.resolution_y = strip.elements[0].orig_width, strip.elements[0].orig_height
    settings.resolution_percentage, settings.dither_intensity = 100, 0.0
    settings.image_settings.file_format, settings.image_settings.color_mode = "PNG", "RGB"
    scene.view_settings.view_transform, scene.view_settings.look = "Standard", "None"
    pictures = []
    for frame in range(1, len(files) + 1):
        scene.frame_set(frame)
        settings.filepath = str(folder / f"render_{frame:04d}.png")
        bpy.ops.render.render(write_still=True)
        pictures.append(cv2.imread(settings.filepath, cv2.IMREAD_COLOR))
    return pictures


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_folder_of_frames_is_read_as_blender_shows_its_image_strip(bpy, tmp_path, name):
    suffix, encode = WRITERS[name]
    base = cv2.resize(cv2.imread(str(sample_image("group"))), (320, 240), interpolation=cv2.INTER_AREA)
    folder = tmp_path / "frames"
    folder.mkdir()
    files = [folder / f"frame_{i:04d}{suffix}" for i in range(FRAMES)]
    for i, path in enumerate(files):
        path.write_bytes(encode(np.roll(base, 7 * i, axis=1), i))
    blender = blender_pictures(bpy, tmp_path, files)
    with MediaReader(folder) as reader:
        ours = [frame for _, frame in reader.frames(range(FRAMES))]
    if name == "JPEG with EXIF orientation":  # documented above: Blender as stored, the engine upright
        assert [p.shape for p in blender] == [(240, 320, 3)] * FRAMES
        assert [p.shape for p in ours] == [(320, 240, 3)] * FRAMES
        ours = [cv2.rotate(frame, cv2.ROTATE_90_COUNTERCLOCKWISE) for frame in ours]
    differences = [np.abs(b.astype(int) - o.astype(int)) for b, o in zip(blender, ours, strict=True)]
    worst_mean, worst_max = max(d.mean() for d in differences), max(int(d.max()) for d in differences)
    print(f"FOOTAGE | image sequence, {name} | mean {worst_mean:.3f} max {worst_max}")
    assert worst_mean <= 1.0 and worst_max <= 3
