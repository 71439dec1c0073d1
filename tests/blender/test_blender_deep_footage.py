"""10-bit, 4:2:2 and interlaced footage (also with the strip's Deinterlace option set) swapped through the
extension and rendered by Blender, not only
decoded by the engine: the render of the face swap group equals the engine's own composite of the frame (its
full swapped frame, output form "full", made by the extension's engine session under this Blender's picture
rules), which Blender shows as a plain image; and the face did change. Blender composites the overlay over a
10-bit clip in float, the engine in 8 bits: no channel may be off by more than 3/255 (measured: 1 on bpy
5.0.1, 4.2.23 and 4.5.15). On every Blender: their rules differ (4.2's swscale model for 10-bit 4:2:0)."""

from __future__ import annotations

from pathlib import Path

import av
import cv2
import numpy as np
import pytest

from blender_helpers import add_movie, compat, render_uncached, report, select_only, top_strips

pytestmark = [pytest.mark.blender, pytest.mark.every_blender, pytest.mark.index]

SIZE = (320, 240)
FRAMES = 6
NEAR, MAX_DIFF = 8, 3  # a changed face: many pixels off by more than NEAR
KINDS = {  # name: (file, codec, pixel format, codec options, the strip's Deinterlace option)
    "HEVC 10-bit 4:2:0": ("deep.mp4", "libx265", "yuv420p10le", {"x265-params": "log-level=error"}, False),
    "H.264 4:2:2": ("chroma422.mp4", "libx264", "yuv422p", {}, False),
    "H.264 interlaced": ("fields.mp4", "libx264", "yuv420p", {"x264-params": "interlaced=1:tff=1"}, False),
    "H.264 interlaced, Deinterlace set": ("fields.mp4", "libx264", "yuv420p", {"x264-params": "interlaced=1:tff=1"},
                                          True),
}


@pytest.fixture(scope="module")
def face_clip(tmp_path_factory, portrait_paths) -> Path:
    from facecache.media.sample_clip import write_sample_clip

    return write_sample_clip(portrait_paths["grace_hopper"], tmp_path_factory.mktemp("deep") / "face.mp4",
                             frames=FRAMES, size=SIZE)


def transcode(source: Path, out: Path, codec: str, pix_fmt: str, options: dict) -> Path:
    """`source`'s frames written again with another encoder, pixel format and options (tagged BT.709)."""
    with av.open(str(source)) as inp, av.open(str(out), "w") as output:
        stream = output.add_stream(codec, rate=25, options=options)
        stream.width, stream.height, stream.pix_fmt = *SIZE, pix_fmt
        stream.codec_context.colorspace = stream.codec_context.color_primaries = 1
        for frame in inp.decode(video=0):
            picture = av.VideoFrame.from_ndarray(frame.to_ndarray(format="rgb24"), format="rgb24")
            output.mux(stream.encode(picture.reformat(format=pix_fmt, dst_colorspace=1)))
        output.mux(stream.encode())
    return out


def render(bpy, scene, frame: int, path: Path) -> np.ndarray:
    scene.frame_set(frame)
    scene.render.filepath = str(path)
    bpy.ops.render.render(write_still=True, scene=scene.name)
    return cv2.imread(str(path), cv2.IMREAD_COLOR).astype(np.int16)


def differences(a: np.ndarray, b: np.ndarray) -> tuple[int, int]:
    channel = np.abs(a - b).max(axis=2)
    return int(channel.max()), int((channel > NEAR).sum())


@pytest.mark.parametrize("kind", list(KINDS))
def test_deep_and_interlaced_footage_renders_as_the_engine_composites_it(bpy, addon, project, face_clip, kind,
                                                                          tmp_path):
    filename, codec, pix_fmt, options, deinterlace = KINDS[kind]
    clip = transcode(face_clip, tmp_path / filename, codec, pix_fmt, options)
    scene = project
    # the engine's full composite, by the extension's own engine session with this Blender's settings and rules
    settings = {**addon.jobs.engine_settings(scene), "output_form": "full", "cache_dir": str(tmp_path / "cache")}
    full = addon.runtime.ENGINE.request({"kind": "swap", "settings": settings, "items": [
        {"media": str(clip), "start": 0, "stop": FRAMES, "out": str(tmp_path / "full"),
         "deinterlace": deinterlace}]}).wait()
    assert full.result is not None, full.error
    scene.view_settings.view_transform = "Standard"
    scene.render.resolution_x, scene.render.resolution_y = SIZE
    scene.render.resolution_percentage, scene.render.dither_intensity = 100, 0.0
    scene.render.image_settings.file_format = "PNG"
    render_uncached(scene)
    strip = add_movie(scene, clip, frame_start=1)
    strip.use_deinterlace = deinterlace
    select_only(scene, strip)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    assert report(scene)["faces_swapped"] >= FRAMES - 1
    reference = bpy.data.scenes.new("reference")
    reference.view_settings.view_transform = "Standard"
    reference.render.resolution_x, reference.render.resolution_y = SIZE
    reference.render.resolution_percentage, reference.render.dither_intensity = 100, 0.0
    reference.render.image_settings.file_format = "PNG"
    render_uncached(reference)
    frames = tmp_path / "full" / clip.stem
    image = compat().top_strips(reference.sequence_editor_create()).new_image("full", str(frames / "000000.png"), 1, 1)
    for index in range(1, FRAMES):
        image.elements.append(f"{index:06d}.png")
    swapped = next(s for s in compat().meta_contents(top_strips(scene)[0]) if s.faceswap.role == "SWAPPED")
    for frame in (1, 3, 5):
        got = render(bpy, scene, frame, tmp_path / f"got_{frame}.png")
        want = render(bpy, reference, frame, tmp_path / f"want_{frame}.png")
        largest, off = differences(got, want)
        swapped.mute = True
        plain = render(bpy, scene, frame, tmp_path / f"plain_{frame}.png")
        swapped.mute = False
        print(f"DEEP | {kind} | frame {frame} | max {largest}, {off} pixels off by more than {NEAR}")
        assert largest <= MAX_DIFF, f"{kind}, frame {frame}: max {largest}, {off} pixels off"
        assert differences(plain, want)[1] > 300, f"{kind}, frame {frame}: the face did not change"
