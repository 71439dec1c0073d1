"""The preview's movie (`swap.preview_movie`, the engine's `preview_movie` job): a shot's composited frames as
the movie Blender's preview reads as the original strip's 100 % proxy; the pictures it holds stood in for by a
transparent pixel, and put back where the movie cannot be shown. Real models and portraits."""

from pathlib import Path

import av
import cv2
import numpy as np
import pytest

from facecache import output_layout, protocol
from facecache.engine import run_job
from facecache.media.reader import MediaReader
from facecache import preview_movie_files as preview_movie

from swap.test_swap_job import four_frames_one_without_a_face, run_job as swap

pytestmark = pytest.mark.index  # real weights and portraits come from the package index


def decoded(path) -> list[np.ndarray]:
    with av.open(str(path)) as movie:
        return [frame.to_ndarray(format="bgr24").astype(int) for frame in movie.decode(video=0)]


def jpeg(data: bytes) -> np.ndarray:
    return cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR).astype(int)


def movie_of(folder, clip) -> Path:
    """The clip's current movie."""
    version, _ = preview_movie.current(folder, clip)
    return Path(preview_movie.movie_path(folder, clip, version))


def movie_job(clip, out, start, stop) -> dict:
    item = {protocol.MEDIA: str(clip), protocol.START: start, protocol.STOP: stop, protocol.OUT: str(out)}
    return run_job({protocol.KIND: "preview_movie", protocol.ITEMS: [item]}, lambda message: None)


def test_the_shots_movie_holds_each_frame_as_the_preview_shows_it(tmp_path, models_dir, portrait_paths, portraits):
    clip, source = four_frames_one_without_a_face(tmp_path, portrait_paths, portraits)
    swap(tmp_path, models_dir, source, clip, out="sequencer", output_form="sequencer")
    folder = tmp_path / "sequencer" / "clip"
    places = {index: Path(output_layout.preview_path(folder / f"{index:06d}.png")) for index in range(4)}
    pictures = {index: places[index].read_bytes() for index in (0, 1, 3)}  # frame 2 has no face: no picture
    assert not places[2].exists()

    summary = movie_job(clip, tmp_path / "sequencer", 1, 4)  # the shot shows media frames 1 to 3
    version, held = preview_movie.current(folder, clip)
    movie = movie_of(folder, clip)
    assert movie == folder / "BL_proxy" / "movie" / version / "clip.mp4" / "proxy_100.avi" and held == 4
    assert summary[protocol.FRAMES] == 3 and summary[protocol.MOVIE_BYTES] == movie.stat().st_size
    with av.open(str(movie)) as container:
        assert container.format.name.startswith("mov,mp4")  # MP4 content: each frame read in place
    frames = decoded(movie)
    with MediaReader(clip) as reader:
        original = dict(reader.frames(range(4)))
    assert len(frames) == 4 and frames[0].max() < 8  # before the shot: black, never shown
    for index in (1, 3):
        assert np.abs(frames[index] - jpeg(pictures[index])).mean() < 6  # the picture, through x264 (3.7, 4.3)
        assert np.abs(frames[index] - original[index].astype(int)).mean() > 2  # not the unswapped frame
        assert places[index].read_bytes() == preview_movie.STAND_IN  # the swapped strip shows the movie there
        assert Path(preview_movie.shelf_path(folder / f"{index:06d}.png")).read_bytes() == pictures[index]
    assert np.abs(frames[2] - original[2].astype(int)).mean() < 3  # no face: the movie's own frame
    assert places[0].read_bytes() == pictures[0]  # outside the shot: untouched

    # A frame made again after the movie (the live preview): its new picture covers the movie, and a movie
    # written again takes it.
    new_picture = cv2.imencode(".jpg", np.full((512, 512, 3), 200, np.uint8))[1].tobytes()
    places[1].write_bytes(new_picture)
    movie_job(clip, tmp_path / "sequencer", 1, 4)
    assert not movie.exists()  # each movie a new version (Blender keeps the one it read open): the old one went
    movie = movie_of(folder, clip)
    frames = decoded(movie)
    assert np.abs(frames[1] - 200).mean() < 4 and np.abs(frames[3] - jpeg(pictures[3])).mean() < 6
    assert places[1].read_bytes() == preview_movie.STAND_IN == places[3].read_bytes()

    # Where the movie cannot be shown, the pictures come back; one made again meanwhile stays the newer.
    newest = cv2.imencode(".jpg", np.full((512, 512, 3), 90, np.uint8))[1].tobytes()
    places[3].write_bytes(newest)
    assert preview_movie.restore(folder) == 1
    assert places[1].read_bytes() == new_picture and places[3].read_bytes() == newest
    assert preview_movie.current(folder, clip) is None and not movie.exists()
    assert [p.name for p in (folder / "BL_proxy" / "movie").iterdir()] == ["shelf"]
    assert not any((folder / "BL_proxy" / "movie" / "shelf").iterdir())


def test_the_stand_in_is_one_transparent_pixel():
    assert cv2.imdecode(np.frombuffer(preview_movie.STAND_IN, np.uint8), cv2.IMREAD_UNCHANGED).tolist() == [[[0] * 4]]


def test_a_damaged_picture_keeps_its_place_over_the_movies_own_frame(tmp_path, models_dir, portrait_paths, portraits):
    """Blender falls back to the overlay where a picture does not load: the movie holds the frame itself there."""
    clip, source = four_frames_one_without_a_face(tmp_path, portrait_paths, portraits)
    swap(tmp_path, models_dir, source, clip, out="sequencer", output_form="sequencer")
    folder = tmp_path / "sequencer" / "clip"
    damaged = Path(output_layout.preview_path(folder / "000001.png"))
    damaged.write_bytes(b"not a jpeg")
    movie_job(clip, tmp_path / "sequencer", 0, 4)
    assert damaged.read_bytes() == b"not a jpeg"
    assert Path(output_layout.preview_path(folder / "000000.png")).read_bytes() == preview_movie.STAND_IN
    with MediaReader(clip) as reader:
        original = dict(reader.frames([1]))
    assert np.abs(decoded(movie_of(folder, clip))[1] - original[1].astype(int)).mean() < 4
    # a stand-in whose shelved picture is gone goes too: the overlay over the movie's own frame
    Path(preview_movie.shelf_path(folder / "000000.png")).unlink()
    movie_job(clip, tmp_path / "sequencer", 0, 4)
    assert not Path(output_layout.preview_path(folder / "000000.png")).exists()


def test_a_frame_the_movie_holds_that_loses_its_faces_has_the_movie_forgotten(tmp_path, models_dir, portrait_paths,
                                                                             portraits):
    """Its strip is keyed out there, so no picture can cover the movie's old faces: the add-on turns the movie off
    (its frame count is gone) and puts the pictures back until the movie is written again."""
    from facecache.jobs.preview_files import write_preview

    clip, source = four_frames_one_without_a_face(tmp_path, portrait_paths, portraits)
    swap(tmp_path, models_dir, source, clip, out="sequencer", output_form="sequencer")
    folder = tmp_path / "sequencer" / "clip"
    movie_job(clip, tmp_path / "sequencer", 0, 4)
    assert preview_movie.current(folder, clip)[1] == 4
    frame = np.zeros((512, 512, 3), np.uint8)
    write_preview(folder / "000003.png", frame, [(0, 0, np.full((8, 8, 4), 255, np.uint8))], 0o644, None)
    assert preview_movie.current(folder, clip)[1] == 4  # a new picture covers the movie
    write_preview(folder / "000001.png", frame, [], 0o644, None)  # no face any more
    assert preview_movie.current(folder, clip) is None
    assert preview_movie.restore(folder) == 1  # frame 0's picture; frame 1 has none now, 3 a newer one
    assert not Path(output_layout.preview_path(folder / "000001.png")).exists()


def test_a_frame_made_again_where_the_movie_stands_in_gets_its_whole_picture(tmp_path):
    """The live preview writes the frame's picture over the stand-in (splicing the shelved picture's bands):
    the same bytes as the picture made whole."""
    from facecache.jobs.preview_files import write_preview
    from facecache.swap.preview_frame import Preview

    rng = np.random.default_rng(3)
    frame = cv2.GaussianBlur(rng.integers(0, 256, (256, 320, 3), np.uint8), (0, 0), 3)
    face = np.full((40, 50, 4), 255, np.uint8)
    overlay = tmp_path / "clip" / "000004.png"
    place, shelf = Path(output_layout.preview_path(overlay)), Path(preview_movie.shelf_path(overlay))
    for path in (place, shelf):
        path.parent.mkdir(parents=True, exist_ok=True)
    shelf.write_bytes(Preview(frame, [(10, 20, face)], "clip|4").jpeg(100))
    place.write_bytes(preview_movie.STAND_IN)
    moved = [(200, 150, face * np.array([1, 0, 1, 1], np.uint8))]
    write_preview(overlay, frame, moved, 0o644, "clip|4")
    assert place.read_bytes() == Preview(frame, moved, "clip|4").jpeg(100)


@pytest.mark.parametrize("size", [(97, 95), (98, 95), (96, 94)])
def test_a_movie_of_odd_sides_is_written_where_an_encoder_codes_them(tmp_path, monkeypatch, size):
    """A recorded window's odd width or height: x264's RGB (no subsampled chroma) codes it at its own size;
    MPEG-4's 4:2:0, the fallback, is held to even sides, so there the preview keeps its pictures."""
    from fractions import Fraction

    from facecache.swap import preview_movie as writer

    width, height = size
    rng = np.random.default_rng(5)
    frames = [cv2.GaussianBlur(rng.integers(0, 256, (height, width, 3), np.uint8), (0, 0), 4) * 3 for _ in range(3)]
    media = tmp_path / "window.mkv"
    assert writer.can_hold(width, height)
    writer.write(tmp_path / "clip", media, [0, 1, 2], lambda wanted: ((index, frames[index]) for index in wanted),
                 Fraction(25), size)
    shown = decoded(movie_of(tmp_path / "clip", media))
    assert [picture.shape for picture in shown] == [(height, width, 3)] * 3
    assert all(np.abs(picture - frame.astype(int)).mean() < 6 for picture, frame in zip(shown, frames))

    monkeypatch.setattr(writer, "ENCODERS", tuple(e for e in writer.ENCODERS if e.name == "mpeg4"))
    assert writer.can_hold(width, height) == (width % 2 == 0 and height % 2 == 0)
    assert not writer.can_hold(0, 94)
