"""The quality bench's eye check: MediaPipe's iris model, installed with the `check` pack from the pinned wheel
the face mesh comes from, converted by our TFLite converter and pinned by SHA-256. Its squares around the
eyes, and what it reads on real photographs: the group photo's two women looking down read as lowered
lids where the face mesh reads open eyes, and a mirrored picture reads the same. (The conversion's parity with the TFLite runtime: tests/models/test_tflite_float16.py.)"""

import cv2
import numpy as np
import pytest

from facecache.analysis.iris import EYE_CORNERS, EYE_SQUARE, INPUT_SIZE, IrisChecker, eye_matrix
from facecache.models.runtime import SessionFactory
from facecache.models.store import ModelStore
from facecache.pipeline import Parts, Settings, build_analyzer
from facecache.samples import sample_image

EYES = "iris_landmark"
# The 68-point scheme mirrored: the eyes trade places (36-41 <-> 45-42, 46, 47), the rest is not read here.
_MIRRORED_EYES = dict(zip(range(36, 48), (45, 44, 43, 42, 47, 46, 39, 38, 37, 36, 41, 40)))


def test_an_eye_square_levels_the_corners_and_mirrors_the_image_right_eye():
    first, second = np.array([100.0, 210.0]), np.array([140.0, 190.0])  # a tilted eye, corners 44.7 px apart
    for mirrored in (False, True):
        matrix = eye_matrix(first, second, mirrored)
        ends = np.array([[*first, 1.0], [*second, 1.0]]) @ matrix.T
        half = INPUT_SIZE / EYE_SQUARE / 2
        assert np.allclose(ends[:, 1], INPUT_SIZE / 2)  # level, through the middle
        expected = [INPUT_SIZE / 2 - half, INPUT_SIZE / 2 + half]
        assert np.allclose(ends[:, 0], expected[::-1] if mirrored else expected)


@pytest.fixture(scope="module")
def checker(default_models_dir):
    store = ModelStore(default_models_dir)
    store.install(["check"])
    assert store.model(EYES).verified
    return IrisChecker(store.session(SessionFactory("cpu"), store.model(EYES)), model=EYES)


@pytest.fixture(scope="module")
def group(default_models_dir, portrait_paths, tmp_path_factory):
    """The group photo (BGR) and its faces as the default analysis finds them (68 landmarks, head pose)."""
    frame = cv2.imread(str(sample_image("group", portrait_paths["grace_hopper"].parent)))
    settings = Settings(cache_dir=str(tmp_path_factory.mktemp("cache")), models_dir=str(default_models_dir),
                        providers="cpu")
    faces = build_analyzer(settings, Parts()).analyze_frame(frame).faces
    assert len(faces) == 6 and all(face.landmarks68 is not None for face in faces)
    return frame, faces


@pytest.mark.index
def test_lowered_lids_read_lowered_where_the_face_mesh_reads_them_open(checker, group):
    frame, faces = group
    readings = checker.read(frame, [face.landmarks68 for face in faces])
    # the woman at the front left looks down at the table; the man in the middle looks at the camera
    front_left = next(i for i, face in enumerate(faces) if face.box[0] < 200 and face.box[1] > 200)
    middle = next(i for i, face in enumerate(faces) if 400 < face.box[0] < 600 and face.box[1] > 200)
    assert all(eye.opening < 0.2 for eye in readings[front_left])
    assert all(eye.opening > 0.2 for eye in readings[middle])
    # the 68 points the swap works from see both as open eyes (their lids 0.3 eye widths apart)
    for index in (front_left, middle):
        points = faces[index].landmarks68
        for first, second in EYE_CORNERS:
            lids = points[first + 1:first + 3] - points[[first + 5, first + 4]]  # 37/41, 38/40 and the like
            assert np.linalg.norm(lids, axis=1).mean() / np.linalg.norm(points[second] - points[first]) > 0.25
    for eyes, face in zip(readings, faces):  # each iris lies between its eye's corners
        for eye, (first, second) in zip(eyes, EYE_CORNERS):
            corners = face.landmarks68[[first, second]]
            along = np.dot(eye.iris[0] - corners[0], corners[1] - corners[0]) / np.sum((corners[1] - corners[0]) ** 2)
            assert 0 < along < 1


def frontal(faces):
    """The faces whose both eyes the quality bench reads (turned up to 30 degrees)."""
    return [face for face in faces if abs(float(face.pose[1])) <= 30]


@pytest.mark.index
def test_a_reading_follows_the_eye_when_the_picture_moves(checker, group):
    """The same landmarks over a picture moved by a few pixels (as a swapped eye lies a little off the
    target's): each eye reads the same opening, and its iris moves with the picture. One square's reading
    moved by up to 0.13 and 0.18 here; the two readings of nine squares by at most 0.018 and 0.047."""
    frame, faces = group
    landmarks = [face.landmarks68 for face in frontal(faces)]
    still = [eye for pair in checker.read(frame, landmarks) for eye in pair]
    for dx, dy in ((1, 0), (0, 2), (3, 1), (-2, -3)):
        moved = cv2.warpAffine(frame, np.float32([[1, 0, dx], [0, 1, dy]]), frame.shape[1::-1],
                               borderMode=cv2.BORDER_REPLICATE)
        for eye, again in zip(still, (eye for pair in checker.read(moved, landmarks) for eye in pair)):
            assert abs(again.opening - eye.opening) < 0.03
            assert np.linalg.norm(again.iris[0] - eye.iris[0] - (dx, dy)) / eye.width < 0.07


@pytest.mark.index
def test_a_mirrored_picture_reads_the_same_eyes(checker, group):
    frame, faces = group
    faces = frontal(faces)
    width = frame.shape[1]
    mirrored = []
    for face in faces:
        points = face.landmarks68.copy()
        points[:, 0] = width - 1 - points[:, 0]
        order = np.arange(68)
        for index, other in _MIRRORED_EYES.items():
            order[index] = other
        mirrored.append(points[order])
    straight = checker.read(frame, [face.landmarks68 for face in faces])
    turned = checker.read(np.ascontiguousarray(frame[:, ::-1]), mirrored)
    for (left, right), (turned_left, turned_right) in zip(straight, turned):
        assert abs(left.opening - turned_right.opening) < 0.03 and abs(right.opening - turned_left.opening) < 0.03

