"""Eyes that follow the target (`swap.eye_follow`, the `classic_eyes` swapper): the local warp that moves the
source's lids and iris onto the target's, on laid-out eyes; and on the real portraits, read by the iris model
and the default analysis, the swapped face looking where the target looks."""

import shutil

import cv2
import numpy as np
import pytest

from facecache.analysis.iris import IRIS_MODEL, IrisChecker
from facecache.errors import FaceCacheError
from facecache.jobs.run_summary import describe_run
from facecache.models.runtime import SessionFactory
from facecache.models.store import ModelStore
from facecache.pipeline import Parts, Settings, build_analyzer, build_pipeline
from facecache.swap.classic import ClassicSwapper
from facecache.swap.composite import paste_back
from facecache.swap.eye_follow import (between_lids, carried, eye_frame, follow_map, kept_lids, led_iris,
                                       with_own_lids)
from facecache.swap.piecewise import TRIANGLES, layout_68
from facecache.swap.face_region import with_forehead

SIZE = 128


def laid_out_eye(middle, width=30.0, opening=0.3, iris=(0.0, 0.0)):
    """(lids, iris centre) of a level eye: lid points as the iris model orders them (0-8 the lower lid from
    corner to corner, 9-15 the upper lid above 1-7); y grows downwards, so the upper lid has the smaller y."""
    steps = np.arange(9) / 8.0
    x = middle[0] + width * (steps - 0.5)
    lower = np.stack([x, middle[1] + width * opening * 0.4 * np.sin(np.pi * steps)], axis=1)
    upper = np.stack([x[1:8], middle[1] - width * opening * 0.6 * np.sin(np.pi * steps[1:8])], axis=1)
    return np.vstack([lower, upper]), np.array(middle, np.float64) + width * np.array(iris)


def test_an_eye_frame_runs_along_the_corners_and_up_to_the_upper_lid():
    lids, _ = laid_out_eye((60.0, 50.0))
    middle, along, up, width = eye_frame(lids)
    assert np.allclose(middle, (60.0, 50.0)) and np.isclose(width, 30.0)
    assert np.allclose(along, (1.0, 0.0)) and np.allclose(up, (0.0, -1.0))  # picture y grows downwards


def test_an_iris_guessed_beyond_a_closed_lid_is_moved_between_the_lids():
    lids, iris = laid_out_eye((60.0, 50.0), opening=0.02, iris=(0.1, -0.3))
    inside = between_lids(lids, iris)
    assert np.isclose(inside[0], iris[0])  # along the eye it stays
    assert 50.0 - 30 * 0.02 * 0.6 - 1e-6 <= inside[1] <= 50.0 + 1e-6
    open_lids, open_iris = laid_out_eye((60.0, 50.0), iris=(0.1, -0.05))
    assert np.allclose(between_lids(open_lids, open_iris), open_iris)  # an iris between open lids stays


def test_the_source_eye_lands_on_the_target_eye_and_nothing_beyond_the_ring_moves():
    # The target looks to its left and lowers its lids; the source looks ahead with open eyes.
    target = [laid_out_eye((40.0, 60.0), opening=0.12, iris=(0.15, 0.0)), laid_out_eye((88.0, 60.0), opening=0.12)]
    source = [laid_out_eye((41.0, 58.0)), laid_out_eye((87.0, 59.0), iris=(-0.1, 0.02))]
    map_x, map_y = follow_map(source, target, SIZE)
    for (s_lids, s_iris), (t_lids, t_iris) in zip(source, target):
        led = led_iris((s_lids, s_iris), (t_lids, t_iris))
        for found, wanted in ((led, between_lids(s_lids, s_iris)), (t_lids[12], s_lids[12]), (t_lids[4], s_lids[4])):
            x, y = np.round(found).astype(int)  # the map at a target point reads the source's matching point
            assert np.hypot(map_x[y, x] - wanted[0], map_y[y, x] - wanted[1]) < 1.0
    ys, xs = np.mgrid[0:SIZE, 0:SIZE]
    far = (np.abs(ys - 60) > 0.6 * 30 + 2) | (xs < 40 - 0.9 * 30 - 2) | (xs > 88 + 0.9 * 30 + 2)
    assert np.array_equal(map_x[far], xs[far]) and np.array_equal(map_y[far], ys[far])


def test_the_iris_is_led_past_the_targets_by_half_its_move_and_kept_between_the_lids():
    source = laid_out_eye((40.0, 60.0), iris=(-0.1, 0.0))
    target = laid_out_eye((90.0, 62.0), opening=0.3, iris=(0.1, 0.0))
    assert np.allclose(led_iris(source, target), (90.0 + 30 * 0.2, 62.0))  # 0.1 + half of the move of 0.2
    assert np.allclose(led_iris(source, source), source[1])  # an iris that stays where it is
    closed = laid_out_eye((90.0, 62.0), opening=0.05, iris=(0.1, 0.0))
    high = laid_out_eye((40.0, 60.0), iris=(-0.1, -0.2))  # the source's iris guessed above its lids
    led = led_iris(high, closed)
    assert np.allclose(led, between_lids(closed[0], led)) and abs(led[1] - 62.0) < 30 * 0.05
    # near a corner the fan has no room: led no further than 0.3 eye widths along, and not at all from beyond
    assert np.allclose(led_iris(source, laid_out_eye((90.0, 62.0), iris=(0.25, 0.0))), (90.0 + 30 * 0.3, 62.0))
    beyond = laid_out_eye((90.0, 62.0), iris=(0.35, 0.0))
    assert np.allclose(led_iris(source, beyond), beyond[1])


@pytest.mark.parametrize("aside", [0.1, 0.2])
def test_an_iris_moved_aside_carries_its_middle_most_of_the_way(aside):
    # A source looking ahead, a target looking `aside` eye widths to the side: a pupil at the source's iris
    # centre lands near the target's. The warp between the centre and the lids stretches the iris's one side,
    # so its middle lags. Measured: with the mesh cut on the laid-out eye (swap format follow/3), 2.9 of 4
    # pixels and 5.3 of 8; with the fan from the iris centre, 1.5 and 3.0; with the iris led on by half its
    # move (follow/5), 0.26 and 0.53.
    width = 40.0
    source = [laid_out_eye((40.0, 64.0), width)]
    target = [laid_out_eye((40.0, 64.0), width, iris=(aside, 0.0))]
    picture = np.full((SIZE, SIZE), 255, np.uint8)
    cv2.circle(picture, tuple(int(v) for v in np.round(source[0][1] * 16)), int(0.08 * width * 16), 0, -1,
               cv2.LINE_AA, 4)
    map_x, map_y = follow_map(source, target, SIZE)
    dark = 255.0 - cv2.remap(picture, map_x, map_y, cv2.INTER_LINEAR)
    ys, xs = np.mgrid[0:SIZE, 0:SIZE]
    middle = np.array([(dark * xs).sum(), (dark * ys).sum()]) / dark.sum()
    assert np.linalg.norm(middle - target[0][1]) < 0.15 * aside * width


@pytest.mark.parametrize("aside, opening", [(0.2, 0.3), (0.3, 0.3), (0.3, 0.2), (-0.4, 0.2)])
def test_an_iris_moved_towards_a_corner_folds_no_triangle(aside, opening):
    # Along each row through the eye the map reads the source from left to right: no triangle turned over,
    # none left out (a pixel on a thin triangle's edge may read a little back: under one pixel). Measured: the
    # mesh cut on the laid-out eye had chords from lid to lid across the eye, and an iris moved past one read
    # pixels 11-15 back (speckles in the swapped eye); the fan from the iris centre, 0.13-0.63.
    source = [laid_out_eye((40.0, 64.0), 40.0, iris=(-0.1, 0.02))]
    target = [laid_out_eye((40.0, 64.0), 40.0, opening=opening, iris=(aside, 0.0))]
    map_x, _ = follow_map(source, target, SIZE)
    assert np.diff(map_x[56:73, 12:69], axis=1).min() > -1.0


def test_a_lowered_or_closed_target_eye_keeps_its_own_lids_and_an_open_one_nothing():
    assert not kept_lids([laid_out_eye((40.0, 60.0)), laid_out_eye((110.0, 60.0))], SIZE).any()
    kept = kept_lids([laid_out_eye((40.0, 60.0), opening=0.03), laid_out_eye((110.0, 60.0), opening=0.03)], SIZE)
    assert kept[60, 40] == pytest.approx(1.0) and kept[60, 110] == pytest.approx(1.0)
    # the closed eye's lids and the crease over them (0.3 eye widths up), not the brow (0.6 up); out past its
    # corners (0.5 eye widths along), where the iris model reads what it guesses under the lid, and no further
    assert kept[51, 40] > 0.9 and kept[42, 40] == 0.0
    assert kept[60, 40 - 21] > 0.8 and kept[60, 40 + 21] > 0.8 and kept[60, 40 - 31] == kept[60, 40 + 31] == 0.0
    half_open = kept_lids([laid_out_eye((40.0, 60.0), opening=0.2)], SIZE)[60, 40]
    lowered = kept_lids([laid_out_eye((40.0, 60.0), opening=0.14)], SIZE)
    assert 0.0 < half_open < 1.0 and lowered[60, 40] == pytest.approx(1.0)
    # a lowered eye keeps less beyond its corners than a closed one
    assert lowered[60, 40 - 21] < 0.2 and lowered[60, 40 - 24] == 0.0


def test_both_eyes_are_kept_or_neither_by_the_faces_mean_opening():
    # lids lower together: a face looking down whose far eye reads nearly closed and near one 0.19 keeps both
    near, far = laid_out_eye((40.0, 60.0), opening=0.19), laid_out_eye((100.0, 60.0), opening=0.09)
    looking_down = kept_lids([near, far], SIZE)
    assert looking_down[60, 40] == pytest.approx(1.0) and looking_down[60, 100] == pytest.approx(1.0)
    # an open face with one eye a little less open than the other keeps neither
    assert not kept_lids([laid_out_eye((40.0, 60.0), opening=0.19), laid_out_eye((100.0, 60.0))], SIZE).any()


def test_a_kept_eye_has_the_targets_lashes_in_the_swapped_faces_colours():
    # A pale target whose closed eye is a dark lash line; a dark swapped face whose own open eye is darker still.
    target = np.full((SIZE, SIZE, 3), 200, np.uint8)
    target[60:62, 28:53] = 120
    swapped = np.full((SIZE, SIZE, 3), 80, np.uint8)
    cv2.ellipse(swapped, (40, 60), (8, 5), 0, 0, 360, (20, 20, 20), -1)
    eyes = [laid_out_eye((40.0, 60.0), opening=0.03), laid_out_eye((88.0, 60.0))]
    out = with_own_lids(swapped, target, eyes)
    # the swapped face's skin, where the swapped eye was too
    assert all(abs(int(out[y, x, 0]) - 80) <= 3 for y, x in ((54, 40), (64, 40), (66, 33)))
    assert abs(int(out[61, 40, 0]) - (80 - 80)) <= 6  # the target's lashes, as much darker than the skin
    assert np.array_equal(out[:, 66:], swapped[:, 66:])  # the open eye is the swapped face's
    assert with_own_lids(swapped, target, [laid_out_eye((40.0, 60.0))]) is swapped


def test_points_are_carried_through_the_piecewise_warp_as_its_triangles_move_them():
    from facecache.analysis.align import template_points

    source = with_forehead(layout_68(template_points("arcface_128", SIZE)))
    eyes = np.vstack([source[36:42].mean(axis=0), source[42:48].mean(axis=0), source[30]])
    assert np.allclose(carried(eyes, source, source, TRIANGLES, SIZE), eyes)
    moved = source + (2.0, -1.5)  # every face point moved; the crop's border points stay
    assert np.allclose(carried(eyes, source, moved, TRIANGLES, SIZE), eyes + (2.0, -1.5))


@pytest.fixture(scope="module")
def reader(default_models_dir):
    store = ModelStore(default_models_dir)
    store.install(["check"])
    return IrisChecker(store.session(SessionFactory("cpu"), store.model(IRIS_MODEL)))


@pytest.fixture(scope="module")
def faces(default_models_dir, portraits, tmp_path_factory):
    settings = Settings(cache_dir=str(tmp_path_factory.mktemp("cache")), models_dir=str(default_models_dir),
                        providers="cpu")
    analyzer = build_analyzer(settings, Parts())
    return {name: analyzer.analyze_frame(frame).faces[0] for name, frame in portraits.items()}


def _eyes(reader, image, face):
    return tuple((eye.lids, eye.iris[0]) for eye in reader.read(image, [face.landmarks68])[0])


@pytest.mark.index
@pytest.mark.parametrize("source, target", [("grace_hopper", "astronaut"), ("astronaut", "grace_hopper")])
def test_the_swapped_eyes_look_where_the_target_looks(reader, faces, portraits, source, target):
    swapper = ClassicSwapper()
    image, face = portraits[target], faces[target]
    plain = paste_back(image, [swapper.swap(image, face, swapper.prepare_source(portraits[source], faces[source]))])
    prepared = swapper.prepare_source(portraits[source], faces[source], _eyes(reader, portraits[source], faces[source]))
    followed = paste_back(image, [swapper.swap(image, face, prepared, _eyes(reader, image, face))])
    original = reader.read(image, [face.landmarks68])[0]

    def iris_shift(picture):  # in eye widths, the larger of the two eyes, read as the quality bench reads them
        return max(float(np.linalg.norm(eye.iris[0] - was.iris[0])) / was.width
                   for eye, was in zip(reader.read(picture, [face.landmarks68])[0], original))

    def opening_change(picture):
        return max(abs(eye.opening - was.opening) for eye, was in zip(reader.read(picture, [face.landmarks68])[0],
                                                                     original))

    # Measured: the iris 0.081 / 0.098 eye widths from the target's with the plain swap, 0.019 / 0.035
    # followed; the lids' opening changed by 0.058 / 0.063 and 0.033 / 0.033.
    assert iris_shift(plain) > 0.06 and iris_shift(followed) < 0.05
    assert opening_change(followed) < opening_change(plain)
    assert not np.array_equal(plain, followed)


def test_the_classic_eyes_swapper_asks_for_the_iris_model_it_needs(tmp_path, models_dir, portrait_paths):
    """A models folder without the iris model: the swap is refused in one line naming the install command."""
    settings = Settings(cache_dir=str(tmp_path / "cache"), models_dir=str(models_dir), providers="cpu",
                        swapper="classic_eyes", sources=(str(portrait_paths["grace_hopper"]),))
    with pytest.raises(FaceCacheError, match="facecache models install iris_landmark"):
        build_pipeline(settings, Parts()).swap_job()


def test_without_68_landmarks_the_eyes_swapper_swaps_as_the_classic_one(tmp_path, swap_models_with_eyes,
                                                                         portrait_paths):
    """MTCNN alone finds no 68 points: no eye is read, and the pixels are the classic swap's."""
    outputs = {}
    for swapper in ("classic", "classic_eyes"):
        settings = Settings(cache_dir=str(tmp_path / swapper), models_dir=str(swap_models_with_eyes),
                            providers="cpu", swapper=swapper, sources=(str(portrait_paths["grace_hopper"]),))
        out = tmp_path / f"out-{swapper}"
        build_pipeline(settings, Parts()).swap_job().run(portrait_paths["astronaut"], out)
        outputs[swapper] = [cv2.imread(str(p), cv2.IMREAD_UNCHANGED) for p in sorted(out.rglob("*.png"))]
    assert outputs["classic"] and len(outputs["classic"]) == len(outputs["classic_eyes"])
    assert all(np.array_equal(a, b) for a, b in zip(outputs["classic"], outputs["classic_eyes"]))


@pytest.fixture
def swap_models_with_eyes(tmp_path, models_dir, default_models_dir):
    """MTCNN and the iris model, nothing else."""
    import shutil

    folder = tmp_path / "models"
    folder.mkdir()
    ModelStore(default_models_dir).install(["check"])
    for store, name in ((ModelStore(models_dir), "mtcnn"), (ModelStore(default_models_dir), IRIS_MODEL)):
        for path in store.paths(name).values():
            shutil.copy(path, folder / path.name)
    return folder


@pytest.fixture(scope="module")
def eyes_models(default_models_dir):
    """The embedded default and the iris model."""
    ModelStore(default_models_dir).install(["check"])
    return default_models_dir


def _eyes_pipeline(cache, models, source):
    settings = Settings(cache_dir=str(cache), models_dir=str(models), providers="cpu", swapper="classic_eyes",
                        sources=(str(source),))
    return build_pipeline(settings, Parts())


def _eyes_job(cache, models, source):
    return _eyes_pipeline(cache, models, source).swap_job()


def _pictures(folder):
    return [cv2.imread(str(path), cv2.IMREAD_UNCHANGED) for path in sorted(folder.rglob("*.png"))]


@pytest.mark.index
def test_a_frames_eyes_are_read_once_whatever_the_source(tmp_path, eyes_models, portrait_paths):
    from facecache.samples import sample_image

    target = portrait_paths["grace_hopper"]
    other_source = sample_image("portrait_112", portrait_paths["grace_hopper"].parent)
    pipeline = _eyes_pipeline(tmp_path / "cache", eyes_models, portrait_paths["astronaut"])
    first = pipeline.swap_job()
    report = first.run(target, tmp_path / "first")
    assert (first.analyzer.inferences.eyes, first.analyzer.inferences.swap) == (1, 1)
    assert describe_run(pipeline.summary(report, "x")).endswith("embed 0, swap 1, eyes 1")  # the summary line
    # Another source: the target's eyes come from the cache (the source's own are read once, not counted).
    pipeline = _eyes_pipeline(tmp_path / "cache", eyes_models, other_source)
    second = pipeline.swap_job()
    report = second.run(target, tmp_path / "second")
    assert (second.analyzer.inferences.eyes, second.analyzer.inferences.swap) == (0, 1)
    assert describe_run(pipeline.summary(report, "x")).endswith("embed 0, swap 1")
    assert second.eyes.store.namespace_key == first.eyes.store.namespace_key != second.store.namespace_key
    # ...and they steer the swap exactly as a fresh reading does.
    cold = _eyes_job(tmp_path / "cold-cache", eyes_models, other_source)
    cold.run(target, tmp_path / "cold")
    assert cold.analyzer.inferences.eyes == 1
    second_pictures, cold_pictures = _pictures(tmp_path / "second"), _pictures(tmp_path / "cold")
    assert second_pictures and len(second_pictures) == len(cold_pictures)
    assert all(np.array_equal(a, b) for a, b in zip(second_pictures, cold_pictures))


def test_eye_records_round_trip_and_a_damaged_pack_is_refused():
    from facecache.errors import CorruptPack
    from facecache.store.records import GroupRecords
    from facecache.swap.eye_records import EYE_CODEC, EyeRecord, unread

    group = GroupRecords()
    eyes = unread(3)
    eyes[1] = np.arange(68, dtype=np.float32).reshape(2, 17, 2)
    group.records["a" * 32] = EyeRecord("a" * 32, eyes)
    group.records["b" * 32] = EyeRecord("b" * 32, unread(0))
    meta, arrays, entries = EYE_CODEC.encode(group)
    back = EYE_CODEC.decode(meta, arrays)
    assert entries == 2 and list(back.records) == list(group.records)
    record = back.records["a" * 32]
    assert not record.has(0) and record.has(1) and record.of_face(0) is None
    lids, iris = record.of_face(1)[1]
    assert np.array_equal(lids, eyes[1, 1, :16]) and np.array_equal(iris, eyes[1, 1, 16])
    assert EYE_CODEC.richer(record, EyeRecord("a" * 32, unread(3)))
    for damaged in ({**arrays, "eyes": arrays["eyes"][:2]}, {**arrays, "eyes": arrays["eyes"].astype(np.float64)},
                    {**arrays, "eyes": np.full_like(arrays["eyes"], np.inf)}):
        with pytest.raises(CorruptPack):
            EYE_CODEC.decode(meta, damaged)
    with pytest.raises(CorruptPack):
        EYE_CODEC.decode({**meta, "records": [["not a digest", 3]]}, arrays)


@pytest.mark.index
@pytest.mark.parametrize("source, frame", [("obama", 36), ("astronaut", 444), ("astronaut", 12)])
def test_closed_and_lowered_eyes_stay_as_the_target_holds_them(reader, default_models_dir, tmp_path, source, frame):
    """Frames of a real clip where the target closes her eyes (frowning, smiling) or looks down: the classic
    swap gives her the source's open eyes; followed, she keeps her own lids, as open as hers within the
    quality goal (0.05 eye widths)."""
    from facecache.bench.quality_pictures import load, movie_frame

    settings = Settings(cache_dir=str(tmp_path), models_dir=str(default_models_dir), providers="cpu")
    analyzer = build_analyzer(settings, Parts())
    image, source_image = movie_frame("eyes_clip", frame), load(source)
    face, source_face = analyzer.analyze_frame(image).faces[0], analyzer.analyze_frame(source_image).faces[0]
    swapper = ClassicSwapper()
    plain = paste_back(image, [swapper.swap(image, face, swapper.prepare_source(source_image, source_face))])
    prepared = swapper.prepare_source(source_image, source_face, _eyes(reader, source_image, source_face))
    followed = paste_back(image, [swapper.swap(image, face, prepared, _eyes(reader, image, face))])

    def opening(picture):  # the wider open of the two eyes, in eye widths
        return max(eye.opening for eye in reader.read(picture, [face.landmarks68])[0])

    # Measured (the wider open eye): closed 0.087 / 0.088 and looking down 0.172; the plain swap 0.250 / 0.393
    # / 0.401, followed 0.096 / 0.106 / 0.199 (before the target kept its own lids: 0.127 / 0.258 / -).
    assert opening(image) < 0.18
    assert opening(plain) > opening(image) + 0.05 and abs(opening(followed) - opening(image)) <= 0.05


def test_a_new_sources_eyes_swap_converts_only_its_faces_rows_once_their_eyes_are_known(tmp_path, eyes_models,
                                                                                        portrait_paths, rows_asked,
                                                                                        monkeypatch):
    """Once a clip's eyes are read (the first source's run), a new source's run converts each frame only in its
    faces' crops' rows, and its overlays are byte for byte those of a run converting every row."""
    from facecache.jobs.swap_job import SwapJob
    from facecache.media.sample_clip import write_group_clip

    clip = write_group_clip([portrait_paths["grace_hopper"]], tmp_path / "clip.mp4", faces=1, frames=6,
                            size=(480, 360), empty_every=0)
    _eyes_job(tmp_path / "cache", eyes_models, portrait_paths["grace_hopper"]).run(clip, tmp_path / "first")
    shutil.copytree(tmp_path / "cache", tmp_path / "cache_copy")
    rows_asked.clear()  # the first run's frames
    job = _eyes_job(tmp_path / "cache", eyes_models, portrait_paths["astronaut"])
    job.run(clip, tmp_path / "some_rows")
    assert len(rows_asked) == 6 and all(spans and sum(b - t for t, b in spans) < 360 for spans in rows_asked)
    assert job.eyes.reads == 0

    monkeypatch.setattr(SwapJob, "rows_read", lambda self, analysis, swaps, index, form: None)
    _eyes_job(tmp_path / "cache_copy", eyes_models, portrait_paths["astronaut"]).run(clip, tmp_path / "all_rows")
    some, every = (sorted((tmp_path / folder).rglob("*.png")) for folder in ("some_rows", "all_rows"))
    assert len(some) == len(every) == 6
    assert all(a.name == b.name and a.read_bytes() == b.read_bytes() for a, b in zip(some, every))
