"""MTCNN with its real weights (the `default` pack) on real portraits.

The expected boxes were checked by eye once on debug drawings: Grace Hopper's
face spans about x 175..356, y 113..338 (below the cap's brim to the chin);
the astronaut's about x 176..264, y 65..171 (hairline to chin).
"""

import tracemalloc

import cv2
import numpy as np
import pytest

from facecache.analysis.pose import head_pose

pytestmark = pytest.mark.index

EXPECTED = {  # (x1, y1, x2, y2) ranges
    "grace_hopper": ((160, 195), (95, 135), (335, 375), (315, 355)),
    "astronaut": ((165, 195), (50, 80), (250, 280), (155, 185)),
}


def assert_face_in(face, bounds, offset=(0, 0), scale=1.0):
    for value, (low, high), shift in zip(face.box, bounds, offset * 2):
        assert low * scale + shift <= value <= high * scale + shift, (face.box, bounds, offset, scale)


def assert_plausible_key_points(face):
    left_eye, right_eye, nose, left_mouth, right_mouth = face.kps5
    x1, y1, x2, y2 = face.box
    assert np.all((face.kps5[:, 0] > x1) & (face.kps5[:, 0] < x2) & (face.kps5[:, 1] > y1) & (face.kps5[:, 1] < y2))
    assert left_eye[0] < nose[0] < right_eye[0] and left_mouth[0] < right_mouth[0]
    assert max(left_eye[1], right_eye[1]) < nose[1] < min(left_mouth[1], right_mouth[1])


@pytest.mark.parametrize("name", ["grace_hopper", "astronaut"])
def test_one_face_per_portrait_with_its_key_points(mtcnn, portraits, name):
    frame = portraits[name]
    faces = mtcnn.detect(frame)
    assert len(faces) == 1
    face = faces[0]
    assert face.score > 0.95
    assert_face_in(face, EXPECTED[name])
    assert_plausible_key_points(face)
    pose = head_pose(face.kps5, (frame.shape[1], frame.shape[0]))
    assert abs(pose.yaw) < 25 and abs(pose.pitch) < 25 and abs(pose.roll) < 15


@pytest.mark.parametrize("name", ["grace_hopper", "astronaut"])
def test_mirrored_portrait_gives_the_mirrored_face(mtcnn, portraits, name):
    frame = portraits[name]
    width = frame.shape[1]
    (face,) = mtcnn.detect(frame)
    (mirrored,) = mtcnn.detect(frame[:, ::-1])  # a strided view is fine
    expected = np.array([width - face.box[2], face.box[1], width - face.box[0], face.box[3]])
    assert np.abs(mirrored.box - expected).max() < 0.12 * face.width
    assert_plausible_key_points(mirrored)  # "left eye" is again the image-left one
    # the same key points mirrored give the opposite yaw
    flipped = face.kps5[[1, 0, 2, 4, 3]].copy()
    flipped[:, 0] = width - flipped[:, 0]
    size = (width, frame.shape[0])
    assert head_pose(flipped, size).yaw == pytest.approx(-head_pose(face.kps5, size).yaw, abs=0.05)


def composite_1080p(portraits):
    frame = np.full((1080, 1920, 3), 90, np.uint8)
    frame[200:800, 100:612] = portraits["grace_hopper"]
    frame[300:812, 1200:1712] = portraits["astronaut"]
    return frame


def test_two_portraits_in_a_1080p_frame(mtcnn, portraits):
    frame = composite_1080p(portraits)
    faces = mtcnn.detect(frame)
    assert len(faces) == 2
    by_x = sorted(faces, key=lambda f: f.box[0])
    assert_face_in(by_x[0], EXPECTED["grace_hopper"], offset=(100, 200))
    assert_face_in(by_x[1], EXPECTED["astronaut"], offset=(1200, 300))
    assert faces[0].score >= faces[1].score
    again = mtcnn.detect(frame)  # results are a pure function of the frame
    assert [f.box.tolist() for f in again] == [f.box.tolist() for f in faces]


def test_refining_several_regions_in_shared_runs_finds_what_each_region_alone_finds(mtcnn, portraits):
    # the tracker's followed faces: each face's region and box, one R-Net and one O-Net run for all of them
    frame = composite_1080p(portraits)
    scales = mtcnn.scales(*frame.shape[:2])
    parts = []
    for face in mtcnn.detect(frame):
        x1, y1, x2, y2 = (int(v) for v in face.box)
        pad = (x2 - x1) // 2
        region = frame[max(0, y1 - pad):y2 + pad, max(0, x1 - pad):x2 + pad]
        moved = face.box + 6 - np.array([max(0, x1 - pad), max(0, y1 - pad)] * 2)  # where it went, a little off
        parts.append((region, moved, scales[2:6]))
    parts.append((frame[:200, :200], np.zeros((0, 4)), scales[2:6]))  # a region with no candidate
    parts.append((frame[900:, :300], np.array([[40.0, 40.0, 140.0, 140.0]]), scales[2:6]))  # grey: no face there
    together = mtcnn.refine_each(parts)
    alone = [mtcnn.refine(region, boxes, levels) for region, boxes, levels in parts]
    assert [len(found) for found in together] == [1, 1, 0, 0]
    for found, expected in zip(together, alone):
        assert [(f.box.tolist(), f.score, f.kps5.tolist()) for f in found] == \
               [(f.box.tolist(), f.score, f.kps5.tolist()) for f in expected]


def test_8k_frame_is_searched_with_bounded_memory(mtcnn, portraits):
    frame = cv2.resize(composite_1080p(portraits), (7680, 4320), interpolation=cv2.INTER_LINEAR)
    tracemalloc.start()
    try:
        faces = mtcnn.detect(frame)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20  # the frame alone is 100 MB; nothing near its size is allocated
    by_x = sorted(faces, key=lambda f: f.box[0])
    assert len(faces) == 2
    assert_face_in(by_x[0], EXPECTED["grace_hopper"], offset=(400, 800), scale=4.0)
    assert_face_in(by_x[1], EXPECTED["astronaut"], offset=(4800, 1200), scale=4.0)
    assert mtcnn.effective_min_face_size(4320, 7680) > 20


@pytest.mark.parametrize("shape", [(1080, 1920, 3), (8, 8, 3), (1, 1, 3), (12, 12, 3), (4320, 7680, 3)])
def test_empty_frames_have_no_faces(mtcnn, shape):
    assert mtcnn.detect(np.zeros(shape, np.uint8)) == []


def test_noise_has_no_faces(mtcnn):
    noise = np.random.default_rng(0).integers(0, 256, (720, 1280, 3), dtype=np.uint8)
    assert mtcnn.detect(noise) == []
