"""The tracking bench's measure of agreement with detection on every frame (a pure function)."""

import numpy as np

from facecache.bench.tracking_bench import _agreement
from facecache.store.records import Face


def face(x, y, side=100, shift=0.0):
    kps = np.array([[x + 30, y + 40], [x + 70, y + 40], [x + 50, y + 60], [x + 35, y + 80], [x + 65, y + 80]],
                   np.float32) + shift
    return Face(box=np.array([x, y, x + side, y + side], np.float32), score=0.99, kps5=kps)


def test_found_missed_late_extra_and_landmark_error():
    a, b = (0, 0), (500, 0)
    reference = [[face(*a), face(*b)], [face(*a), face(*b)], [face(*a), face(*b)], [face(*a)]]
    tracked = [[face(*a, shift=4.0)], [face(*a)], [face(*a), face(*b)], [face(*a), face(900, 0)]]
    result = _agreement(reference, tracked)
    assert (result["face_frames"], result["found"], result["recall"]) == (7, 5, round(5 / 7, 4))
    assert result["frames_late"] == 2  # face b missed on frames 0 and 1
    assert result["extra_faces"] == 1  # the face at 900 that the reference does not have
    # key points 4 px off in x and y on one of five matches, eye distance 40: sqrt(32) / 40 / 5
    assert abs(result["landmark_error_mean"] - round(np.sqrt(32) / 40 / 5, 4)) < 1e-4
    assert _agreement([[face(*a)]], [[face(*a)]])["frames_late"] == 0
