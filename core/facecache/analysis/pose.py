"""Head pose (pitch, yaw, roll) from 2D landmarks and a generic 3D face.

The 3D points below are this project's own rough average adult face, in
millimetres, in camera axes for a face looking straight into the camera:
x to the image's right, y down, z away from the camera (so the nose tip,
nearest the camera, has the most negative z). The origin is midway between
the eye centres. A pinhole camera with focal length = frame width and the
principal point at the frame centre is assumed; ``cv2.solvePnP`` fits the pose.

Expressions move the mouth: a broad smile lifts the mouth corners by a
centimetre or more, which a rigid model would read as the head bowing. So
with five points the mouth corners' height below the eyes is fitted along
with the pose (within the range faces and expressions cover), and pitch comes
from the rigid eyes-and-nose geometry; with 68 points only rigid landmarks
(brows, eye corners, nose, the jaw line's ends) are used.
"""

from __future__ import annotations

from types import MappingProxyType

import cv2
import numpy as np

from facecache.analysis.results import HeadPose

# left eye centre, right eye centre, nose tip, left mouth corner, right mouth corner
FACE_5_MM = np.array(
    [[-32.0, 0.0, 0.0], [32.0, 0.0, 0.0], [0.0, 37.0, -28.0], [-26.0, 70.0, -5.0], [26.0, 70.0, -5.0]],
)
MOUTH_HEIGHT_RANGE_MM = (45.0, 95.0)

# Rigid landmarks among the 68 iBUG points: index -> (x, y, z) mm.
FACE_68_MM = MappingProxyType({
    0: (-70.0, 8.0, 70.0),  # jaw line at the ear (image-left)
    16: (70.0, 8.0, 70.0),
    17: (-47.0, -20.0, 4.0),  # brow ends
    21: (-12.0, -26.0, -10.0),
    22: (12.0, -26.0, -10.0),
    26: (47.0, -20.0, 4.0),
    27: (0.0, -2.0, -14.0),  # nose bridge between the eyes
    30: (0.0, 37.0, -28.0),  # nose tip
    31: (-13.0, 42.0, -12.0),  # nostril wings
    33: (0.0, 44.0, -18.0),  # below the nose
    35: (13.0, 42.0, -12.0),
    36: (-45.0, 1.0, 12.0),  # eye corners: outer, inner, inner, outer
    39: (-18.0, 1.0, 5.0),
    42: (18.0, 1.0, 5.0),
    45: (45.0, 1.0, 12.0),
})
INDEX_68 = np.array(sorted(FACE_68_MM))
FACE_68_RIGID_MM = np.array([FACE_68_MM[i] for i in INDEX_68])
for _constant in (FACE_5_MM, INDEX_68, FACE_68_RIGID_MM):
    _constant.setflags(write=False)


def camera_matrix(frame_width: float, frame_height: float) -> np.ndarray:
    """Pinhole intrinsics: focal length = frame width, principal point = centre."""
    f = float(frame_width)
    return np.array([[f, 0.0, frame_width / 2.0], [0.0, f, frame_height / 2.0], [0.0, 0.0, 1.0]])


def rotation_angles(rotation: np.ndarray) -> HeadPose:
    """HeadPose of a model-to-camera rotation matrix, decomposed as
    ``Rz(roll) @ Ry(a) @ Rx(b)`` with yaw = -a and pitch = -b (see HeadPose's signs)."""
    r = np.asarray(rotation, dtype=np.float64).reshape(3, 3)
    about_x = np.degrees(np.arctan2(r[2, 1], r[2, 2]))
    about_y = np.degrees(np.arctan2(-r[2, 0], np.hypot(r[2, 1], r[2, 2])))
    about_z = np.degrees(np.arctan2(r[1, 0], r[0, 0]))
    return HeadPose(pitch=float(-about_x), yaw=float(-about_y), roll=float(about_z))


def pose_rotation(pose: HeadPose) -> np.ndarray:
    """The model-to-camera rotation matrix of a HeadPose (inverse of ``rotation_angles``)."""
    a, b, c = np.radians([-pose.pitch, -pose.yaw, pose.roll])
    rx = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
    ry = np.array([[np.cos(b), 0, np.sin(b)], [0, 1, 0], [-np.sin(b), 0, np.cos(b)]])
    rz = np.array([[np.cos(c), -np.sin(c), 0], [np.sin(c), np.cos(c), 0], [0, 0, 1]])
    return rz @ ry @ rx


def face_5_model(mouth_height_mm: float) -> np.ndarray:
    """The five-point model with the mouth corners ``mouth_height_mm`` below the eyes."""
    model = FACE_5_MM.copy()
    model[3:, 1] = mouth_height_mm
    return model


def fit_pose(object_points: np.ndarray, image_points: np.ndarray, camera: np.ndarray):
    """solvePnP from a face looking into the camera; returns (rotation (3, 3), rms error px)."""
    centre = image_points.mean(axis=0)
    offset = object_points.mean(axis=0)
    image_spread = float(np.sqrt(np.mean(np.sum((image_points - centre) ** 2, axis=1))))
    model_spread = float(np.sqrt(np.mean(np.sum((object_points[:, :2] - offset[:2]) ** 2, axis=1))))
    if image_spread < 1e-6:
        raise ValueError("the landmarks all coincide; no head pose can be estimated")
    depth = camera[0, 0] * model_spread / image_spread  # distance at which the face has this size
    tvec = np.array(
        [[(centre[0] - camera[0, 2]) * depth / camera[0, 0] - offset[0]], [(centre[1] - camera[1, 2]) * depth / camera[1, 1] - offset[1]], [depth]]
    )
    ok, rvec, tvec = cv2.solvePnP(
        object_points.reshape(-1, 1, 3),
        image_points.reshape(-1, 1, 2),
        camera,
        None,
        np.zeros((3, 1)),
        tvec,
        useExtrinsicGuess=True,
        flags=cv2.SOLVEPNP_ITERATIVE,
    )
    if not ok:
        raise ValueError("cv2.solvePnP found no head pose for these landmarks")
    projected, _ = cv2.projectPoints(object_points, rvec, tvec, camera, None)
    rms = float(np.sqrt(np.mean(np.sum((projected.reshape(-1, 2) - image_points) ** 2, axis=1))))
    return cv2.Rodrigues(rvec)[0], rms


def _fit_5(image_points: np.ndarray, camera: np.ndarray) -> np.ndarray:
    """Best pose over the mouth height: a coarse scan, then a golden-section search."""
    low, high = MOUTH_HEIGHT_RANGE_MM
    heights = np.linspace(low, high, 11)
    errors = [fit_pose(face_5_model(h), image_points, camera)[1] for h in heights]
    best = int(np.argmin(errors))
    a, b = heights[max(best - 1, 0)], heights[min(best + 1, len(heights) - 1)]
    ratio = (np.sqrt(5.0) - 1.0) / 2.0
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    error_c = fit_pose(face_5_model(c), image_points, camera)[1]
    error_d = fit_pose(face_5_model(d), image_points, camera)[1]
    for _ in range(12):
        if error_c <= error_d:
            b, d, error_d = d, c, error_c
            c = b - ratio * (b - a)
            error_c = fit_pose(face_5_model(c), image_points, camera)[1]
        else:
            a, c, error_c = c, d, error_d
            d = a + ratio * (b - a)
            error_d = fit_pose(face_5_model(d), image_points, camera)[1]
    return fit_pose(face_5_model((a + b) / 2.0), image_points, camera)[0]


def head_pose(points: np.ndarray, frame_size: tuple[int, int]) -> HeadPose:
    """Pitch, yaw and roll in degrees from five key points or 68 landmarks.

    ``frame_size`` is (width, height) of the frame the points are in.
    """
    points = np.asarray(points, dtype=np.float64)
    if points.shape not in ((5, 2), (68, 2)):
        raise ValueError(f"head pose needs (5, 2) or (68, 2) landmarks, got shape {points.shape}")
    if not np.all(np.isfinite(points)):
        raise ValueError("landmarks contain NaN or infinite values; no head pose can be estimated")
    camera = camera_matrix(float(frame_size[0]), float(frame_size[1]))
    if points.shape == (5, 2):
        rotation = _fit_5(points, camera)
    else:
        rotation = fit_pose(FACE_68_RIGID_MM, points[INDEX_68], camera)[0]
    return rotation_angles(rotation)
