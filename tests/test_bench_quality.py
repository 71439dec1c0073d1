"""`facecache bench quality`: the measures on pictures whose answer is known, and one real run on
the group photo (six faces, one turned past the classic swapper's yaw limit) with its contact sheet."""

import cv2
import numpy as np
import pytest

from facecache.bench import quality_metrics as qm
from facecache.bench import quality_bench
from facecache.bench.quality_bench import (GOALS, Pair, default_pairs, eye_target_pairs, held_out_pairs, run, second_check_pairs,
                                           by_pose, shortfall, summarise)
from facecache.bench.quality_pictures import rolled
from facecache.cli import build_parser
from facecache.cli.bench_cmd import SUITES, print_table
from facecache.swap.piecewise import layout_68


def textured(seed=0, shape=(120, 160)):
    rng = np.random.default_rng(seed)
    grey = cv2.GaussianBlur(rng.integers(0, 256, shape).astype(np.float32), (0, 0), 1.0)
    grey = 60 + (grey - grey.min()) / (grey.max() - grey.min()) * 140
    return cv2.merge([grey * 0.8, grey * 0.9, grey]).astype(np.uint8)


def disk_alpha(shape=(120, 160), radius=40, fade=8):
    alpha = np.zeros(shape, np.float32)
    cv2.circle(alpha, (shape[1] // 2, shape[0] // 2), radius, 1.0, -1)
    distance = cv2.distanceTransform((alpha > 0).astype(np.uint8), cv2.DIST_L2, 3)
    return np.clip(distance / fade, 0, 1).astype(np.float32)


def test_newly_clipped_counts_only_clips_neither_input_had():
    region = np.ones((2, 3), bool)
    source = np.array([[[10, 10, 10], [255, 9, 9], [40, 40, 40]], [[50, 50, 50]] * 3], np.uint8)
    target = np.array([[[20, 20, 20], [30, 30, 30], [0, 40, 40]], [[60, 60, 60]] * 3], np.uint8)
    output = np.array([[[0, 10, 10], [255, 9, 9], [0, 40, 40]], [[50, 50, 255], [50, 50, 50], [9, 9, 9]]], np.uint8)
    # (0,0) newly clipped; (0,1) clipped in the source; (0,2) clipped in the target; (1,0) newly clipped
    assert qm.newly_clipped(output, source, target, region) == (2, 6)


def test_sharpness_ratio_falls_when_the_face_is_blurred():
    sharp = textured()
    alpha = disk_alpha()
    assert qm.sharpness_ratio(sharp, sharp, alpha) == pytest.approx(1.0)
    assert qm.sharpness_ratio(cv2.GaussianBlur(sharp, (0, 0), 1.2), sharp, alpha) < 0.5


def test_seam_ratio_sees_a_pasted_patch_of_another_colour():
    target = textured(1)
    alpha = disk_alpha()
    same = target.copy()
    assert qm.seam_ratio(same, target, alpha) == pytest.approx(1.0)
    patch = np.clip(target.astype(int) + [40, -30, -40], 0, 255).astype(np.uint8)
    pasted = (target * (1 - alpha[..., None]) + patch * alpha[..., None]).astype(np.uint8)
    assert qm.seam_ratio(pasted, target, alpha) > 3


def test_seams_are_told_apart_by_part_of_the_edge_and_turn_with_the_face():
    target = textured(1, (200, 200))
    alpha = disk_alpha((200, 200), radius=60, fade=8)
    kps5 = np.array([[85, 95], [115, 95], [100, 110], [88, 125], [112, 125]], float)
    # a band brighter than the picture across the top of the face only: the forehead's seam
    band = target.copy()
    band[:75] = np.clip(band[:75].astype(int) + 40, 0, 255)
    pasted = (target * (1 - alpha[..., None]) + band * alpha[..., None]).astype(np.uint8)
    seams = qm.seam_ratios_by_part(pasted, target, alpha, kps5)
    assert seams["forehead"] > 3 and seams["jaw"] == pytest.approx(1.0, abs=0.05)
    # the parts turn with the face: rolled a quarter turn, "up" points along the picture's x axis
    turned = np.array([[p[1], 200 - p[0]] for p in kps5])
    assert qm.outline_part(np.array([[100, 30]]), kps5)[0] == 0
    assert qm.outline_part(np.array([[100, 30]]), turned)[0] != 0
    assert qm.outline_part(np.array([[30, 100]]), turned)[0] == 0


def test_the_top_edge_step_sees_a_band_where_the_swapped_face_ends():
    """A darker band in the mask's fade just inside its top edge: the forehead's seam ratio compares the
    fully swapped side with the untouched side, both beyond the band, and misses it; the top-edge step
    is measured across the edge itself. The same band along the jaw is not the top edge's."""
    target = textured(5, (200, 200))
    alpha = disk_alpha((200, 200), radius=60, fade=12)
    alpha = np.roll(alpha, 10, axis=0)  # centred at (100, 110): its top half-edge 1 eye distance above the eyes
    kps5 = np.array([[80, 95], [120, 95], [100, 115], [85, 135], [115, 135]], np.float32)
    fading = (alpha >= 0.5) & (alpha < 0.99)
    rows = np.arange(200)[:, None]
    for band, top in ((fading & (rows < 80), True), (fading & (rows > 150), False)):
        swapped = target.copy()
        swapped[band] = (swapped[band] * 0.75).astype(np.uint8)
        step = qm.top_edge_step(swapped, target, alpha, kps5)
        seams = qm.seam_ratios(swapped, target, alpha, kps5)[1]
        if top:
            assert step > 1.6 and seams["forehead"] < 1.2
        else:
            assert step <= 1.0 and seams["jaw"] < 1.2
    assert qm.top_edge_step(target, target, alpha, kps5) <= 1.0  # nothing changed: no step beyond the picture's
    # turned in the picture's plane, the face's columns turn with it: the band is still at its top edge
    turn = cv2.getRotationMatrix2D((100.0, 100.0), 30, 1.0)
    def turned(image, flags=cv2.INTER_LINEAR):
        return cv2.warpAffine(image, turn, (200, 200), flags=flags, borderMode=cv2.BORDER_REFLECT)
    swapped = target.copy()
    swapped[fading & (rows < 80)] = (swapped[fading & (rows < 80)] * 0.75).astype(np.uint8)
    turned_kps5 = (np.c_[kps5, np.ones(5)] @ turn.T).astype(np.float32)
    assert qm.top_edge_step(turned(swapped), turned(target), turned(alpha), turned_kps5) > 1.6
    # a mask without a top edge within reach (the whole picture swapped) has no top-edge step
    assert qm.top_edge_step(swapped, target, np.ones((200, 200), np.float32), kps5) is None


def test_the_independent_check_judges_only_faces_it_finds_on_the_original():
    from facecache.analysis.blazeface import KeyPoints
    from facecache.bench.quality_checks import independent_shift as _independent_shift

    points = np.array([[0, 0], [40, 0], [20, 20], [20, 35], [-10, 10], [50, 10]], np.float64)
    original = KeyPoints(np.array([-20, -20, 60, 60.0]), 0.9, points)
    moved = KeyPoints(original.box, 0.9, points + np.array([[4, 0]] * 4 + [[40, 40]] * 2))  # the ears are not counted
    assert _independent_shift(original, moved) == {"independent_found": True, "independent_shift": 0.1}
    assert _independent_shift(original, None) == {"independent_found": False}
    assert _independent_shift(None, moved) == {}
    good = {"landmark_shift": 0.03, "seam_worst": 1.1, "leftover_ratio": 1.0, "sharpness_ratio": 1.2}
    assert shortfall({**good, "independent_shift": 0.24}) == pytest.approx(2.0)
    assert shortfall({**good, "top_edge_step": 2.4}) == pytest.approx(1.5)
    assert shortfall({**good, "independent_found": False}) is None
    summary = summarise([dict(clipped_pixels=0, face_pixels=10, ms=1.0, independent_found=True,
                              independent_shift=0.05, top_edge_step=1.2),
                         dict(clipped_pixels=0, face_pixels=10, ms=1.0, independent_found=False, top_edge_step=2.0)])
    assert summary["independent_shift_worst"] == 0.05 and summary["independent_lost"] == 1
    assert summary["goals_met"]["independent_shift_worst"] is False  # a face it lost is as far off as can be
    assert summary["top_edge_step_worst"] == 2.0 and summary["goals_met"]["top_edge_step_worst"] is False


def test_leftovers_count_strong_edges_left_just_outside_the_face():
    source = textured(2, (200, 200))
    alpha = disk_alpha((200, 200), radius=50, fade=6)
    clean = cv2.GaussianBlur(source, (0, 0), 3)
    glasses = clean.copy()
    cv2.line(glasses, (10, 100), (190, 100), (20, 20, 20), 3)  # an arm crossing the ring on both sides
    assert qm.leftover_ratio(glasses, clean, alpha, 30.0) > 2 * max(qm.leftover_ratio(clean, clean, alpha, 30.0), 0.5)


def test_a_rolled_picture_keeps_all_of_the_photograph():
    picture = textured(5, (60, 100))
    turned = rolled(picture, 30)
    assert turned.shape[0] > 60 and turned.shape[1] > 100
    assert (turned[0, 0] == 128).all()  # the canvas, not a mirrored copy
    assert np.array_equal(rolled(picture, 0), picture)


def test_the_source_is_measured_as_the_swap_read_it():
    """A source read mirrored (turned the other way from the target) is compared as mirrored: the
    mirror image of a picture, read mirrored, is the picture itself."""
    picture = textured(6, (120, 160))
    kps5 = np.array([[60, 50], [100, 52], [80, 70], [64, 90], [98, 91]], np.float64)
    flipped_kps5 = np.array([[159 - x, y] for x, y in kps5[[1, 0, 2, 4, 3]]])
    target_kps5 = kps5 * 1.3 + [10, 5]
    as_is = qm.source_in_frame(picture, kps5, target_kps5, (200, 240))
    mirrored = qm.source_in_frame(np.ascontiguousarray(picture[:, ::-1]), flipped_kps5, target_kps5, (200, 240), True)
    assert np.abs(as_is.astype(int) - mirrored).mean() < 1.0
    assert np.abs(as_is.astype(int) - qm.source_in_frame(picture, kps5, target_kps5, (200, 240), True)).mean() > 10


def test_a_source_turned_the_other_way_is_read_mirrored():
    def turned(squeeze):  # a face whose image-right half is narrowed by ``squeeze`` (negative: widened)
        points = layout_68(kps5)
        middle = points[27:31, 0].mean()
        offset = points[:, 0] - middle
        points[:, 0] = middle + offset * np.where(offset > 0, 1.0 - squeeze, 1.0 + squeeze)
        return points

    kps5 = np.array([[80, 100], [176, 100], [128, 150], [90, 190], [166, 190]], np.float64)
    assert qm.read_mirrored(kps5, turned(0.5), kps5, turned(-0.5))
    assert not qm.read_mirrored(kps5, turned(0.5), kps5, turned(0.5))
    assert not qm.read_mirrored(kps5, None, kps5, turned(-0.5))  # without landmarks it is read as it is


def test_the_held_out_pairs_and_the_second_check_are_not_the_benchs(monkeypatch):
    bench, held_out, second = set(default_pairs()), set(held_out_pairs()), set(second_check_pairs())
    assert len(held_out) == len(second) == 8 and not (bench & held_out or bench & second or held_out & second)
    assert any(pair.source == "astronaut" and pair.target == "biden" for pair in held_out)  # a fringe
    assert Pair("obama2", "group", 720, roll=-15) in second  # a washed-out forehead beside orange hair
    asked = {}
    monkeypatch.setattr(quality_bench, "run", lambda **kwargs: asked.update(kwargs) or {})
    for flags, pairs in ((["--held-out"], held_out_pairs()), (["--second-check"], second_check_pairs()),
                         (["--eye-targets"], eye_target_pairs()), ([], None)):
        SUITES["quality"](build_parser().parse_args(["bench", "quality", *flags]))
        assert asked["pairs"] == pairs  # None: the bench's own
    with pytest.raises(SystemExit):  # one set at a time
        build_parser().parse_args(["bench", "quality", "--held-out", "--second-check"])
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "quality", "--eye-targets", "--held-out"])
    eyes = set(eye_target_pairs())
    assert len(eyes) == 6 and not eyes & (bench | held_out | second)
    assert {pair.target_frame for pair in eyes} == {12, 36, 300, 384, 444, 324}  # down, closed, aside, open


@pytest.mark.index
def test_an_eye_target_is_a_frame_of_the_clip_as_the_engine_decodes_it():
    from facecache.bench.quality_pictures import target_picture

    pair = Pair("obama", "eyes_clip", target_frame=36)
    assert pair.label == "obama_on_eyes_clip_frame36"
    picture = target_picture(pair)
    assert picture.shape == (360, 640, 3) and picture.dtype == np.uint8
    assert not np.array_equal(picture, target_picture(Pair("obama", "eyes_clip", target_frame=12)))


def test_the_quality_bench_judges_the_swapper_it_is_given(monkeypatch):
    asked = {}
    monkeypatch.setattr(quality_bench, "run", lambda **kwargs: asked.update(kwargs) or {})
    for flags, swapper in (([], "classic"), (["--swapper", "classic_eyes"], "classic_eyes")):
        SUITES["quality"](build_parser().parse_args(["bench", "quality", *flags]))
        assert asked["swapper"] == swapper
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "quality", "--swapper", "nope"])


def test_the_worst_face_is_the_one_furthest_from_its_goals():
    good = {"landmark_shift": 0.03, "seam_worst": 1.1, "leftover_ratio": 1.0, "sharpness_ratio": 1.2}
    assert shortfall(good) < 1
    assert shortfall({**good, "landmark_shift": 0.3}) == pytest.approx(3.0)
    assert shortfall({**good, "sharpness_ratio": 0.4}) == pytest.approx(2.0)
    assert shortfall({**good, "found_again": False}) is None  # lost: further than any


def test_landmarks_mouth_and_identity_measures():
    eyes = np.zeros((68, 2))
    eyes[36:42] = [0.0, 0.0]
    eyes[42:48] = [10.0, 0.0]
    assert qm.eye_distance(eyes) == 10.0
    moved = eyes + [0.5, 0.0]
    assert qm.landmark_error(moved, eyes) == pytest.approx(0.05)
    eyes[62], eyes[66] = [5, 20], [5, 22]
    assert qm.mouth_opening(eyes) == pytest.approx(0.2)
    source, target = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    assert qm.identity_margin(np.array([0.9, 0.1]), source, target) > 0
    assert qm.identity_margin(np.array([0.1, 0.9]), source, target) < 0


def test_summary_and_goals():
    faces = [dict(clipped_pixels=1, face_pixels=1000, sharpness_ratio=0.9, seam_ratio=1.2, ms=4.0, cpu_ms=3.0,
                  identity_margin=0.1, yaw=3.0),
             dict(clipped_pixels=0, face_pixels=1000, sharpness_ratio=0.7, seam_ratio=1.0, ms=6.0, cpu_ms=2.0,
                  identity_margin=-0.05, yaw=-12.0),
             dict(clipped_pixels=0, face_pixels=0, sharpness_ratio=None, seam_ratio=None, ms=5.0, cpu_ms=9.0,
                  identity_margin=-0.2, yaw=40.0)]  # turned: not a frontal pair
    result = summarise(faces)
    assert result["clipped_fraction"] == 0.0005 and result["sharpness_ratio"] == 0.8
    assert result["sharpness_worst"] == 0.7 and result["faces_lost"] == 0
    assert result["identity_closer_share"] == 0.5 and result["ms_per_face"] == 5.0 and result["cpu_ms_per_face"] == 3.0
    assert result["identity_closer_share_all"] == pytest.approx(1 / 3, abs=1e-3)
    assert result["expression_error"] is None and result["goals_met"]["expression_error"] is None
    assert result["goals_met"]["identity_closer_share"] is False and result["goals_met"]["clipped_fraction"] is True
    assert set(result["goals"]) == set(GOALS)


def test_faces_are_judged_by_pose_too():
    faces = [dict(yaw=3.0, roll=2.0, landmark_shift=0.02, sharpness_ratio=0.9, eye_opening_change=0.04),
             dict(yaw=25.0, roll=-4.0, landmark_shift=0.07, sharpness_ratio=0.6),
             dict(yaw=-20.0, roll=30.0, landmark_shift=0.05, sharpness_ratio=0.8, eye_opening_change=0.2),
             dict(yaw=None, roll=None, landmark_shift=0.01)]  # no pose: counted as frontal
    table = by_pose(faces)
    assert {name: row["faces"] for name, row in table.items()} == {"frontal": 2, "turned": 2, "rolled": 1}
    assert table["frontal"]["landmark_shift"] == 0.02 and table["turned"]["landmark_shift"] == 0.07
    assert table["turned"]["sharpness_ratio"] == 0.6  # the worst of a least is the lowest
    assert table["rolled"]["eye_opening_change"] == 0.2 and table["rolled"]["seam_worst"] is None


def test_identity_and_expression_are_measured_with_the_models_the_analysis_has(tmp_path):
    """The swapped face goes through the analysis's own landmark and embedding stages (fake models
    with known answers here; the real ones come with the default models)."""
    from types import SimpleNamespace

    from facecache.analysis.analyzer import FaceAnalyzer, ModelSet
    from facecache.analysis.results import Landmarks68
    from facecache.bench.quality_bench import _measure_face, _reanalysed
    from facecache.store.cache import FaceCache
    from facecache.store.records import Face
    from facecache.swap.composite import CompositeParams
    from facecache.swap.piecewise import layout_68
    from facecache.swap.result import SwapResult

    kps5 = np.array([[60, 70], [100, 70], [80, 90], [65, 110], [95, 110]], np.float32)
    landmarks = layout_68(kps5, mouth_open=0.3).astype(np.float32)
    face = Face(box=np.array([40, 40, 120, 140], np.float32), score=1.0, kps5=kps5, landmarks68=landmarks,
                embedding=np.array([0.0, 1.0], np.float32))
    frame = textured(3, (160, 160))
    result = SwapResult(textured(4, (128, 128)), np.array([[1, 0, -20], [0, 1, -20]], np.float32))

    class Landmarker:  # one face a call; 0.4 px off the target's points, whose eyes are 40 px apart
        def landmarks_batch(self, image, faces, *angles):
            return [Landmarks68(landmarks + [0.4, 0.0], 1.0) for _ in faces]

    class Recognizer:  # nearer the source's [1, 0] than the target's [0, 1]
        def embed_batch(self, image, faces):
            return [np.array([0.8, 0.6], np.float32) for _ in faces]

    models = ModelSet({"fake": "0" * 32}, {}, lambda: None, Landmarker, Recognizer)
    analyzer = FaceAnalyzer(FaceCache(tmp_path / "cache"), models)
    source = SimpleNamespace(image=frame, face=face)
    sources = SimpleNamespace(embedding=np.array([1.0, 0.0], np.float32))
    # found again by the detector alone (here: at the same place, as a real detector would report it)
    again = Face(box=face.box, score=1.0, kps5=kps5 + [0.8, 0.0])
    entry = _measure_face(frame, frame, face, result, CompositeParams(), source, sources, analyzer, 1.0, again)
    assert entry["found_again"] and entry["kps5_shift"] == pytest.approx(0.02, abs=1e-3)
    assert entry["landmark_shift"] == pytest.approx(0.01, abs=1e-3)  # the 68 points, found on the face found again
    assert entry["identity_margin"] == pytest.approx(0.2, abs=1e-3)
    assert entry["target_mouth_open"] and entry["mouth_kept_open"]
    lost = _measure_face(frame, frame, face, result, CompositeParams(), source, sources, analyzer, 1.0, None)
    assert not lost["found_again"] and "landmark_shift" not in lost
    assert _reanalysed(analyzer, frame, face).landmarks68 is not None


@pytest.mark.index
def test_a_real_run_on_the_group_photo(tmp_path, default_models_dir, capsys):
    # (the bench installs the whole default into the folder it is given: never the MTCNN-only one)
    result = run(tmp_path / "pictures", models_dir=default_models_dir, providers="cpu",
                 pairs=(Pair("grace_hopper", "group"),))
    for key in ("identity_closer_share", "identity_margin_mean", "clipped_fraction", "sharpness_ratio",
                "sharpness_worst", "expression_error", "landmark_shift_worst", "seam_ratio", "seam_worst",
                "leftover_worst", "ms_per_face", "cpu_ms_per_face", "independent_shift_worst", "top_edge_step_worst",
                "eye_opening_change_worst", "iris_shift_worst"):
        assert key in result
    # six people: the one turned three-quarters (and any other the head pose puts past 45 degrees) is
    # left and listed; every other face is swapped and measured
    turned = result["faces_turned_away"]
    assert 1 <= len(turned) <= 2 and result["faces"] + len(turned) == 6
    assert all(abs(face["yaw"]) > 45 for face in turned)
    assert all(abs(face["yaw"]) <= 45 for face in result["per_face"])
    assert any(face["box"][1] < 100 for face in turned)  # the man standing at the back, turned aside
    assert result["clipped_fraction"] <= 0.001
    assert result["sharpness_ratio"] >= 0.8 and result["seam_ratio"] <= 1.5
    # every face is where it was (no fold, no smear) and meets the target's skin without a seam
    assert result["faces_lost"] == 0 and result["landmark_shift_worst"] <= 0.10 and result["seam_worst"] <= 1.5
    assert result["goals_met"]["landmark_shift_worst"] and result["goals_met"]["seam_worst"]
    assert all(set(face["seams"]) <= {"forehead", "temples", "jaw"} and face["seams"] for face in result["per_face"])
    # the independent check (a model the swap does not use) finds every face on both pictures, and every
    # face's mask has a top edge to measure
    assert result["independent_lost"] == 0 and result["models"]["check"] == "blazeface_short_range"
    assert all(face["independent_shift"] is not None and face["top_edge_step"] is not None
               for face in result["per_face"])
    # the eye check (another model the swap does not use) reads both eyes of a face turned up to 30 degrees,
    # the nearer one of a face turned further; the woman at the front left looks down, and the swap gives her
    # the source's open eyes (the classic swap does not follow them; classic_eyes does: tests/swap/test_eye_follow.py)
    assert result["models"]["eye_check"] == "iris_landmark" and result["eye_check_independent"]
    for face in result["per_face"]:
        assert len(face["eye_opening_target"]) == (2 if abs(face["yaw"]) <= 30 else 1)
        assert face["eye_opening_change"] is not None and face["iris_shift"] is not None
    looking_down = next(face for face in result["per_face"] if face["box"][0] < 200 and face["box"][1] > 200)
    assert max(looking_down["eye_opening_target"]) < 0.2 and looking_down["eye_opening_change"] > 0.05
    picture = cv2.imread(str(tmp_path / "pictures" / "grace_hopper_on_group.png"))
    assert picture is not None and picture.shape[0] == 256 and picture.shape[1] > 3 * 200  # three panels
    # the contact sheet holds every face at twice its size; the worst five are kept on their own
    sheet = cv2.imread(result["contact_sheet"])
    smallest = min(face["box"][3] - face["box"][1] for face in result["per_face"])
    assert sheet is not None and sheet.shape[0] > len(result["per_face"]) * 2 * smallest
    assert len(result["worst_faces"]) == min(5, result["faces"])
    shortfalls = [face["shortfall"] for face in result["worst_faces"]]
    assert shortfalls == sorted(shortfalls, reverse=True)
    assert all(cv2.imread(face["picture"]) is not None for face in result["worst_faces"])
    print_table(result)
    shown = capsys.readouterr().out
    assert "clipped_fraction" in shown and "(goal <= 0.001: met)" in shown
    # with the default models' landmarker and recognizer, identity and expression are measured too
    assert (result["models"]["landmarker"] is None) == (result["expression_error"] is None)
    assert (result["models"]["recognizer"] is None) == (result["identity_margin_mean"] is None)
    assert ("not measured" in shown) == (result["expression_error"] is None)


@pytest.mark.index
def test_identity_is_measured_with_the_default_models(tmp_path, default_models_dir):
    """The classic swap itself needs no source identity (its source set has no embedding); the
    measurement gets one from the same cache."""
    result = run(tmp_path / "pictures", models_dir=default_models_dir, providers="cpu",
                 pairs=(Pair("astronaut", "grace_hopper"),))
    assert result["faces"] == 1 and result["identity_margin_mean"] is not None
    assert result["expression_error"] is not None


@pytest.mark.index
def test_a_fringe_over_a_bare_forehead_meets_the_seam_goal(tmp_path, default_models_dir):
    """The held-out pair whose source's hair covers her forehead, onto a bare forehead: where the
    mask took half of her fringe, it left a grey band there (a seam of 2.75)."""
    result = run(tmp_path / "pictures", models_dir=default_models_dir, providers="cpu",
                 pairs=(Pair("astronaut", "biden", roll=20),))
    assert result["faces"] == 1 and result["seam_worst"] <= GOALS["seam_worst"][1]
