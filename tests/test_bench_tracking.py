"""The tracking bench's measure of agreement with detection on every frame (a pure function), and its
independent check of the faces only tracking reports (BlazeFace on a real photograph)."""

import cv2
import numpy as np
import pytest

from facecache.bench.tracking_bench import _agreement, _confirmed
from facecache.store.records import Face


@pytest.fixture(scope="module")
def checker(tmp_path_factory):
    """BlazeFace (the check pack's), as the bench asks it."""
    from facecache.analysis.blazeface import BlazeFaceChecker
    from facecache.bench.quality_checks import CHECK_MODEL
    from facecache.models.runtime import SessionFactory
    from facecache.models.store import ModelStore

    store = ModelStore(tmp_path_factory.mktemp("models"))
    store.install(["check"])
    return BlazeFaceChecker(store.session(SessionFactory("cpu"), store.model(CHECK_MODEL)), model=CHECK_MODEL)


def face(x, y, side=100, shift=0.0):
    kps = np.array([[x + 30, y + 40], [x + 70, y + 40], [x + 50, y + 60], [x + 35, y + 80], [x + 65, y + 80]],
                   np.float32) + shift
    return Face(box=np.array([x, y, x + side, y + side], np.float32), score=0.99, kps5=kps)


def test_found_missed_late_extra_and_landmark_error():
    a, b = (0, 0), (500, 0)
    reference = [[face(*a), face(*b)], [face(*a), face(*b)], [face(*a), face(*b)], [face(*a)]]
    tracked = [[face(*a, shift=4.0)], [face(*a)], [face(*a), face(*b)], [face(*a), face(900, 0)]]
    result, extras = _agreement(reference, tracked)
    assert (result["face_frames"], result["found"], result["recall"]) == (7, 5, round(5 / 7, 4))
    assert result["frames_late"] == 2  # face b missed on frames 0 and 1
    assert result["extra_faces"] == 1  # the face at 900 that the reference does not have
    assert len(extras) == 1 and extras[0][0] == 3 and np.array_equal(extras[0][1], [900, 0, 1000, 100])
    # key points 4 px off in x and y on one of five matches, eye distance 40: sqrt(32) / 40 / 5
    assert abs(result["key_point_error_mean"] - round(np.sqrt(32) / 40 / 5, 4)) < 1e-4
    assert result["landmarks_compared"] == 0  # faces without 68 landmarks: none to compare
    assert _agreement([[face(*a)]], [[face(*a)]])[0]["frames_late"] == 0


def test_the_landmark_error_is_the_68_landmarks_where_both_faces_have_them():
    def with_landmarks(x, shift=0.0):
        found = face(x, 0)
        found.landmarks68 = np.tile(found.kps5.mean(axis=0), (68, 1)).astype(np.float32) + shift
        return found

    reference = [[with_landmarks(0), face(500, 0)]]
    tracked = [[with_landmarks(0, shift=2.0), face(500, 0)]]  # landmarks 2 px off in x and y; eye distance 40
    result, _ = _agreement(reference, tracked)
    assert result["landmarks_compared"] == 1  # the face without landmarks is not compared
    assert abs(result["landmark_error_mean"] - round(np.sqrt(8) / 40, 4)) < 1e-4
    assert result["key_point_error_mean"] == 0.0


@pytest.mark.index  # the check pack's BlazeFace comes from the package index
def test_an_extra_face_counts_as_found_only_where_blazeface_sees_a_face(checker, portraits):
    # the portrait on a plain grey picture twice its size: the face, and a same-sized box on the grey
    portrait = cv2.resize(portraits["grace_hopper"], (256, 320), interpolation=cv2.INTER_AREA)
    frame = np.full((640, 768, 3), 128, np.uint8)
    frame[160:480, 0:256] = portrait
    face_box, grey_box = np.array([86.0, 221.0, 180.0, 344.0]), np.array([560.0, 221.0, 654.0, 344.0])  # MTCNN's box
    assert _confirmed(checker, [(7, frame)], [(7, face_box)]) == 1
    assert type(_confirmed(checker, [(7, frame)], [(7, face_box)])) is int  # the bench writes it as JSON
    assert _confirmed(checker, [(7, frame)], [(7, grey_box)]) == 0
    assert _confirmed(checker, [(3, frame), (7, frame)], [(3, grey_box), (7, face_box), (7, grey_box)]) == 1


@pytest.mark.index  # the check pack's BlazeFace and the group photo come from the package index
def test_a_face_cut_by_a_third_at_the_frames_edge_is_confirmed(checker):
    from facecache.bench.tracking_bench import _check_controls, _group_pan_frames

    # the pan's frame 15: a woman at the left edge, a third of her box out of the picture (her box as tracking
    # reported it); in windows of 2-3 times her box alone BlazeFace sees her too small and finds her neighbour
    frame = next(f for i, f in enumerate(_group_pan_frames(48)) if i == 15)
    her_box = np.array([-73.0, 201.0, 133.0, 535.0])
    assert _confirmed(checker, [(15, frame)], [(15, her_box)]) == 1
    assert _check_controls(checker, [(15, frame)], {15: [her_box]})["check_on_faces"] == [1, 1]
