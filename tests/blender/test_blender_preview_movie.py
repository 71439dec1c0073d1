"""The preview's movie (issue 35): after a job in Blender's window the engine writes the shot's composited frames
as one movie, and the original strip's 100 % proxy becomes that movie (`preview_form.follow_movie`); the pictures
it holds are one transparent pixel. Checked here in the bpy module: the proxy's settings and files, that this
Blender's own proxy builder names a custom folder's movie proxy as the engine does, that this Blender's movie
reader reads the engine's movie frame for frame, that renders do not change, and that the pictures come back
where the movie cannot be shown. (`render.render` reads no proxy: the real window's preview of it is
tests/gui's.)"""

import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from blender_helpers import edit_with_operators, select_only, top_strips
from test_blender_edits import (FACELESS, FRAMES, element_paths, full_frames, make_shot, render, set_up,  # noqa: F401
                                shared_cache, shot_clip, swapped_of)

pytestmark = [pytest.mark.blender, pytest.mark.index]


def test_the_shots_movie_becomes_the_originals_proxy_and_renders_do_not_change(bpy, addon, make_shot, tmp_path):
    from facecache import output_layout, preview_movie_files

    shot = make_shot()
    scene, original = shot.scene, shot.original
    overlays = element_paths(bpy, swapped_of(shot))
    folder = overlays[0].parent
    pictures = {path.name: Path(output_layout.preview_path(path)).read_bytes() for path in overlays
                if path.name != FACELESS}
    before = [render(bpy, scene, frame, tmp_path / f"before_{frame}.png") for frame in (3, FRAMES)]
    assert not original.use_proxy

    # The first movie being written (its version folder, nothing on record yet) is left alone by a refresh.
    writing = Path(preview_movie_files.proxy_folder(folder, "beingwritten"))
    writing.mkdir(parents=True)
    addon.timeline.point_elements(scene)
    assert writing.is_dir() and not original.use_proxy
    writing.rmdir()

    assert addon.ops.start_preview_movies(scene)  # synchronous in the bpy module, as in a farm's scripts
    version, held = preview_movie_files.current(folder, original.filepath)
    movie = Path(preview_movie_files.movie_path(folder, original.filepath, version))
    assert movie.is_file() and held == FRAMES
    proxy = original.proxy
    assert original.use_proxy and proxy.build_100 and not (proxy.build_25 or proxy.build_50 or proxy.build_75)
    assert proxy.use_proxy_custom_directory and getattr(proxy, "timecode", "NONE") == "NONE"  # none in 5.2
    assert Path(bpy.path.abspath(proxy.directory)) == Path(preview_movie_files.proxy_folder(folder, version))
    for path in overlays:
        place = Path(output_layout.preview_path(path))
        if path.name == FACELESS:
            assert not place.exists()
        else:  # the movie holds it: one transparent pixel, the picture on the shelf
            assert place.read_bytes() == preview_movie_files.STAND_IN
            assert Path(preview_movie_files.shelf_path(path)).read_bytes() == pictures[path.name]
    for frame, want in zip((3, FRAMES), before):  # renders read no proxy
        assert np.array_equal(render(bpy, scene, frame, tmp_path / f"after_{frame}.png"), want), frame

    # Where the movie cannot be shown (here: a modifier on the swapped strip), the pictures come back.
    grade = swapped_of(shot).modifiers.new("Grade", "COLOR_BALANCE")
    addon.timeline.point_elements(scene)
    assert not swapped_of(shot).use_proxy and not original.use_proxy and not movie.exists()
    assert {name: Path(output_layout.preview_path(folder / name)).read_bytes() for name in pictures} == pictures
    swapped_of(shot).modifiers.remove(grade)


@pytest.mark.every_blender
@pytest.mark.parametrize("encoder, size", [("libx264rgb", (320, 240)), ("mpeg4", (320, 240)),
                                           ("libx264rgb", (321, 239))])
def test_this_blenders_movie_reader_reads_the_engines_movie_frame_for_frame(bpy, addon, tmp_path, monkeypatch,
                                                                          encoder, size):
    """The movie `swap.preview_movie` writes (MP4 content named .avi; x264 coding RGB, with B-frames, or FFmpeg's
    MPEG-4 where a build has no x264; x264 at odd sides too, a recorded window's), read by this Blender's movie
    reader, the one its proxies go through: each frame where the engine put it (an AVI's B-frames were read two
    frames late in a probe), at its size, the colours within the encoder's loss."""
    from fractions import Fraction

    from facecache import output_layout, preview_movie_files
    from facecache.swap import preview_movie

    rng = np.random.default_rng(7)
    width, height = size
    frames = [cv2.GaussianBlur(rng.integers(0, 256, (height, width, 3), np.uint8), (0, 0), 6) * 3
              for _ in range(FRAMES)]
    folder = tmp_path / "clip"
    for index in range(0, FRAMES, 2):  # pictures for every other frame, the movie's own frames for the rest
        place = Path(output_layout.preview_path(folder / f"{index:06d}.png"))
        place.parent.mkdir(parents=True, exist_ok=True)
        place.write_bytes(cv2.imencode(".jpg", frames[index], [cv2.IMWRITE_JPEG_QUALITY, 100])[1].tobytes())
    media = tmp_path / "clip.mp4"
    monkeypatch.setattr(preview_movie, "ENCODERS", tuple(e for e in preview_movie.ENCODERS if e[0] == encoder))
    preview_movie.write(folder, media, list(range(1, FRAMES)),
                        lambda wanted: ((index, frames[index]) for index in wanted), Fraction(25), size)
    player = bpy.data.scenes.new("movie")
    set_up(player, size)
    movie = preview_movie_files.movie_path(folder, media, preview_movie_files.current(folder, media)[0])
    top_strips(player).new_movie("movie", movie, 5, 1)  # over the colour strip
    edit_with_operators(bpy, player)
    for frame in (2, 3, 8, FRAMES):
        shown = render(bpy, player, frame, tmp_path / f"movie_{frame}.png")
        errors = [np.abs(shown - picture).mean() for picture in frames]
        # the others differ by about 12 (noise, blurred); the worst frame's own error: 6.05 (Blender 4.2, MPEG-4)
        assert int(np.argmin(errors)) == frame - 1 and errors[frame - 1] < 8, (frame, errors)


@pytest.mark.every_blender
def test_blenders_own_builder_names_a_movie_proxy_in_a_custom_folder_as_the_engine(bpy, addon, shot_clip, tmp_path):
    from facecache import preview_movie_files

    scene = bpy.data.scenes.new("proxy names")
    set_up(scene)
    scene.sequence_editor_create()
    strip = top_strips(scene).new_movie("clip", str(shot_clip), 1, 1)
    strip.use_proxy = True
    strip.proxy.build_25, strip.proxy.build_100 = False, True
    strip.proxy.use_proxy_custom_directory = True
    strip.proxy.directory = preview_movie_files.proxy_folder(tmp_path, "v1")
    edit_with_operators(bpy, scene)
    select_only(scene, strip)
    assert bpy.ops.sequencer.rebuild_proxy() == {"FINISHED"}
    built = [str(p) for p in tmp_path.rglob("*.avi") if p.stat().st_size]  # beside its timecode index
    assert built == [preview_movie_files.movie_path(tmp_path, shot_clip, "v1")]
    shutil.rmtree(tmp_path / "BL_proxy")
