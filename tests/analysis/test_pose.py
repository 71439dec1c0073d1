import numpy as np
import pytest

from facecache.analysis.align import template_points
from facecache.analysis.pose import FACE_68_RIGID_MM, INDEX_68, camera_matrix, face_5_model, head_pose, pose_rotation, rotation_angles
from facecache.analysis.results import HeadPose

WIDTH, HEIGHT = 1920, 1080


def project(model_mm, pose, position=(80.0, -40.0, 700.0)):
    camera = camera_matrix(WIDTH, HEIGHT)
    points = model_mm @ pose_rotation(pose).T + np.asarray(position)
    uv = points @ camera.T
    return uv[:, :2] / uv[:, 2:]


def mirror(points5):
    """The same face in the horizontally flipped frame (left and right swap names)."""
    flipped = points5.copy()
    flipped[:, 0] = WIDTH - flipped[:, 0]
    return flipped[[1, 0, 2, 4, 3]]


def test_rotation_angles_invert_pose_rotation():
    pose = HeadPose(pitch=12.0, yaw=-33.0, roll=7.5)
    back = rotation_angles(pose_rotation(pose))
    assert (back.pitch, back.yaw, back.roll) == pytest.approx((12.0, -33.0, 7.5))


def test_sign_conventions():
    # yaw > 0: the nose moves towards the image's right; pitch > 0: the nose moves up
    nose = 2
    frontal = project(face_5_model(70.0), HeadPose(0, 0, 0))
    assert project(face_5_model(70.0), HeadPose(0, 20, 0))[nose, 0] > frontal[nose, 0] + 5
    assert project(face_5_model(70.0), HeadPose(20, 0, 0))[nose, 1] < frontal[nose, 1] - 5
    # roll > 0: clockwise on screen, so the right eye drops
    rolled = project(face_5_model(70.0), HeadPose(0, 0, 20))
    assert rolled[1, 1] > rolled[0, 1] + 10


@pytest.mark.parametrize(
    "pose, mouth",
    [(HeadPose(0, 0, 0), 70.0), (HeadPose(10, 0, 0), 60.0), (HeadPose(0, -35, 0), 80.0), (HeadPose(-20, 25, -15), 55.0), (HeadPose(25, -40, 20), 90.0)],
)
def test_five_point_pose_recovers_known_angles_whatever_the_mouth_height(pose, mouth):
    found = head_pose(project(face_5_model(mouth), pose), (WIDTH, HEIGHT))
    assert (found.pitch, found.yaw, found.roll) == pytest.approx((pose.pitch, pose.yaw, pose.roll), abs=0.1)


def test_68_point_pose_uses_the_rigid_landmarks():
    pose = HeadPose(-12.0, 30.0, 8.0)
    points = np.zeros((68, 2))
    points[INDEX_68] = project(FACE_68_RIGID_MM, pose)
    points[48:68] = [5000.0, -3000.0]  # a wild mouth must not matter
    found = head_pose(points, (WIDTH, HEIGHT))
    assert (found.pitch, found.yaw, found.roll) == pytest.approx((-12.0, 30.0, 8.0), abs=0.01)


def test_a_frontal_face_gives_small_angles():
    points = template_points("arcface_112_v2", 112) * 3 + [WIDTH / 2 - 168, HEIGHT / 2 - 168]
    found = head_pose(points, (WIDTH, HEIGHT))
    assert abs(found.pitch) < 8 and abs(found.yaw) < 3 and abs(found.roll) < 1


def test_mirrored_face_flips_yaw_and_roll_but_not_pitch():
    points = project(face_5_model(65.0), HeadPose(8.0, 27.0, -6.0), position=(0.0, 0.0, 700.0))
    pose = head_pose(points, (WIDTH, HEIGHT))
    flipped = head_pose(mirror(points), (WIDTH, HEIGHT))
    assert flipped.yaw == pytest.approx(-pose.yaw, abs=0.1)
    assert flipped.roll == pytest.approx(-pose.roll, abs=0.1)
    assert flipped.pitch == pytest.approx(pose.pitch, abs=0.1)
    assert pose.yaw == pytest.approx(27.0, abs=0.1)


def test_bad_landmarks_are_refused():
    with pytest.raises(ValueError, match=r"\(5, 2\) or \(68, 2\)"):
        head_pose(np.zeros((4, 2)), (WIDTH, HEIGHT))
    with pytest.raises(ValueError, match="NaN"):
        head_pose(np.full((5, 2), np.nan), (WIDTH, HEIGHT))
    with pytest.raises(ValueError, match="coincide"):
        head_pose(np.ones((5, 2)), (WIDTH, HEIGHT))
