"""A piecewise-affine warp over 68 landmarks: the source face moved onto the target's shape.

One similarity from five points keeps the source's expression: its closed mouth and its gaze
land on a target that speaks. Here the 68 landmarks of both faces (in one aligned crop), ten
forehead points above their brows and eight points on the crop's border are joined into one
fixed mesh of triangles (``TRIANGLES``:
Delaunay on a face laid out with its mouth open, so the topology is the same for every face
and frame: it cannot flicker, and a mouth that opens or closes stretches triangles without
folding them), and each triangle is mapped onto the target's triangle by its own affine map.
The result is one map from target-crop pixels to source pixels, so the source is resampled once.

Both faces' points are laid out in the face's own frame (the aligned crop: eyes level, one scale),
and there a triangle must keep the orientation it has on an upright, frontal face. A head turned
or tilted far enough puts some landmarks across others in the picture (the far side's jaw inside
the eye's corner, the jaw behind the mouth's corner): such a triangle folds over its neighbours,
and the source read through it comes out mirrored, doubled or smeared. ``untangle`` moves the
points of folded triangles, jaw and forehead first, towards their place on the face's frontal
layout, just far enough that nothing folds.

    target = untangle(with_forehead(target68), size)
    map_x, map_y = piecewise_map(untangle(with_forehead(source68), size), target, TRIANGLES, size)
    warped = cv2.remap(source_crop, map_x, map_y, cv2.INTER_CUBIC)
"""

from __future__ import annotations

import cv2
import numpy as np

from facecache.swap.face_region import with_forehead

INNER_MOUTH = tuple(range(60, 68))  # iBUG inner-lip points
_LAYOUT_SIDE = 256
# The outline's points (the jaw line and the forehead points of ``with_forehead``): a fold is
# undone by moving these first, so the eyes, nose and mouth stay where the landmarker put them.
_OUTLINE = np.r_[0:17, 68:78]
# Each step keeps this share of a folded point's own offset from its frontal place.
_UNTANGLE_KEEP = 0.7
_UNTANGLE_STEPS = 24
# Triangles this small on the frontal layout (a closed mouth's inner lips) have no orientation to keep.
_FLAT_AREA = 1e-3
_IDENTITY = np.array([[[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]])  # an affine map's rows for x, y and 1


def layout_68(kps5: np.ndarray, mouth_open: float = 0.0) -> np.ndarray:
    """68 points laid out like the iBUG landmarks (jaw, brows, nose, eyes, outer and inner lips)
    around five key points; ``mouth_open`` is the inner lips' gap in eye distances. The mesh's
    triangles are cut on this layout with the mouth open, so that opening or closing a real
    mouth only stretches or flattens triangles, never folds one over another."""
    k = np.asarray(kps5, np.float64).reshape(5, 2)
    left, right, _, mouth_left, mouth_right = k
    eyes, mouth = (left + right) / 2, (mouth_left + mouth_right) / 2
    eye_distance = float(np.linalg.norm(right - left))
    x_axis = (right - left) / eye_distance
    y_axis = np.array([-x_axis[1], x_axis[0]])
    drop = float(np.dot(mouth - eyes, y_axis)) / eye_distance

    def at(u, v, origin=eyes):  # u across, v down, in eye distances
        return origin + eye_distance * (np.multiply.outer(u, x_axis) + np.multiply.outer(v, y_axis))

    turn = np.linspace(np.pi, 0.0, 17)
    jaw = at(0.95 * np.cos(turn), 0.2 + (drop + 0.45) * np.sin(turn))
    brow_x = np.concatenate([np.linspace(-0.85, -0.15, 5), np.linspace(0.15, 0.85, 5)])
    brows = at(brow_x, -0.35 - 0.08 * np.cos(2 * brow_x))
    nose = np.vstack([at(np.zeros(4), np.linspace(0.1, 0.55, 4)), at(np.linspace(-0.2, 0.2, 5), np.full(5, 0.7))])
    lid = np.radians([180, 240, 300, 0, 60, 120])
    eye_ring = np.stack([0.18 * np.cos(lid), 0.07 * np.sin(lid)], axis=1)
    eyes_68 = np.vstack([at(eye_ring[:, 0], eye_ring[:, 1], left), at(eye_ring[:, 0], eye_ring[:, 1], right)])
    half_width = float(np.linalg.norm(mouth_right - mouth_left)) / eye_distance / 2
    outer = np.radians([180, 210, 240, 270, 300, 330, 0, 30, 60, 90, 120, 150])
    inner = np.radians([180, 240, 270, 300, 0, 60, 90, 120])
    gap = max(mouth_open, 0.004) / 2  # the lips part around the mouth's centre line
    lips = np.vstack([at(half_width * np.cos(outer), (0.18 + gap) * np.sin(outer), mouth),
                      at(0.7 * half_width * np.cos(inner), gap * np.sin(inner), mouth)])
    return np.vstack([jaw, brows, nose, eyes_68, lips])


def border_points(size: int) -> np.ndarray:
    """Corners and edge midpoints of a crop of ``size`` (they map onto themselves)."""
    last, middle = size - 1.0, (size - 1.0) / 2.0
    return np.array([[0, 0], [middle, 0], [last, 0], [last, middle], [last, last], [middle, last],
                     [0, last], [0, middle]], dtype=np.float64)


def triangulate(points: np.ndarray, size: int) -> np.ndarray:
    """(T, 3) indices into ``points`` followed by the crop's eight border points: a Delaunay
    triangulation of them (points outside the crop are clamped into it for this)."""
    every = np.vstack([np.clip(np.asarray(points, np.float64), 0, size - 1), border_points(size)])
    subdivision = cv2.Subdiv2D((-1, -1, size + 2, size + 2))
    for x, y in every:
        subdivision.insert((float(x), float(y)))
    triangles = []
    for corners in subdivision.getTriangleList().reshape(-1, 3, 2):
        if np.any(corners < -1) or np.any(corners > size + 1):
            continue  # a triangle of Subdiv2D's outer frame
        distances = np.linalg.norm(every[None, :, :] - corners[:, None, :], axis=2)
        indices = distances.argmin(axis=1)
        if len(set(indices.tolist())) == 3:
            triangles.append(indices)
    return np.array(triangles, dtype=np.int32).reshape(-1, 3)


def _canonical_points() -> np.ndarray:
    """The 78 points the mesh is cut on: a frontal face in the aligned crop, its mouth open."""
    from facecache.analysis.align import template_points  # a face in the aligned crop

    return with_forehead(layout_68(template_points("arcface_128", _LAYOUT_SIDE), mouth_open=0.35))


def _canonical_triangles() -> np.ndarray:
    triangles = triangulate(_canonical_points(), _LAYOUT_SIDE)
    triangles.setflags(write=False)
    return triangles


def piecewise_map(source: np.ndarray, target: np.ndarray, triangles: np.ndarray,
                  size: int) -> tuple[np.ndarray, np.ndarray]:
    """(map_x, map_y), float32 (size, size): for each pixel of the target crop, where it lies in
    the source crop. ``source`` and ``target`` are matching (N, 2) points in crop pixels; the
    border points are added to both. Pixels no triangle covers map onto themselves."""
    src = np.vstack([np.asarray(source, np.float64), border_points(size)])
    dst = np.vstack([np.asarray(target, np.float64), border_points(size)])
    # Per triangle, the affine map taking its target corners onto its source corners, written out
    # (numpy's batched solve is slow here: see align.linear_det): with edges e1, e2 from the first
    # target corner and f1, f2 from the first source corner, a point p maps to s0 + F E^-1 (p - d0).
    d, s = dst[triangles], src[triangles]  # (T, 3, 2)
    e1, e2, f1, f2 = d[:, 1] - d[:, 0], d[:, 2] - d[:, 0], s[:, 1] - s[:, 0], s[:, 2] - s[:, 0]
    det = e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]
    usable = np.abs(det) > 1e-6  # a triangle squashed flat in the target maps nothing
    inv_det = np.where(usable, 1.0 / np.where(usable, det, 1.0), 0.0)
    # E^-1 = [[e2y, -e2x], [-e1y, e1x]] / det; the linear part L = F E^-1, column by column.
    lx = (f1 * e2[:, 1:2] - f2 * e1[:, 1:2]) * inv_det[:, None]   # L's column for x: (T, 2)
    ly = (f2 * e1[:, 0:1] - f1 * e2[:, 0:1]) * inv_det[:, None]   # L's column for y
    offset = s[:, 0] - lx * d[:, 0, 0:1] - ly * d[:, 0, 1:2]
    affine = np.stack([lx, ly, offset], axis=1)  # (T, 3, 2): rows for x, y and 1
    # One entry more, past the triangles: the identity, for the pixels no triangle covers. Each of the six
    # coefficients is looked up per pixel from its own row (one contiguous take: a third of the time of
    # gathering (size, size, 3, 2) and reading it strided).
    coefficients = np.concatenate([affine, _IDENTITY]).astype(np.float32).reshape(-1, 6).T.copy()  # (6, T + 1)
    ids = np.full((size, size), len(triangles), np.int32)
    fixed = np.round(d * 16).astype(np.int32)  # every triangle's corners, 4 fractional bits
    for number in np.nonzero(usable)[0].tolist():
        cv2.fillConvexPoly(ids, fixed[number], number, lineType=cv2.LINE_8, shift=4)
    per_pixel = np.take(coefficients, ids, axis=1)  # (6, size, size): x's, y's and 1's terms, map_x's then map_y's
    xs, ys = np.arange(size, dtype=np.float32)[None, :], np.arange(size, dtype=np.float32)[:, None]
    map_x = xs * per_pixel[0] + ys * per_pixel[2] + per_pixel[4]
    map_y = xs * per_pixel[1] + ys * per_pixel[3] + per_pixel[5]
    return map_x, map_y


def untangle(points: np.ndarray, size: int) -> np.ndarray:
    """``points`` (the 68 landmarks and their 10 forehead points, in crop pixels) with every triangle
    of the mesh (TRIANGLES) that folds over (turned the other way than on the layout the mesh was
    cut on) undone: the points of folded triangles move step by step towards their place on the
    face's frontal layout (``layout_68`` around the same eyes and mouth, with the same opening),
    outline points first, until none folds. Triangles flat on that layout (a closed mouth's lips),
    or nearly flat where they are, have no side to keep. Points of triangles that do not fold are
    left exactly where they are."""
    points = np.asarray(points, np.float64).reshape(78, 2)
    every = np.vstack([points, border_points(size)])
    eyes = np.array([points[36:42].mean(axis=0), points[42:48].mean(axis=0)])
    eye_distance = max(float(np.linalg.norm(eyes[1] - eyes[0])), 1e-6)
    flat = _FLAT_AREA * eye_distance ** 2
    areas = _signed_areas(every, TRIANGLES)
    if not np.any((areas * _SIDES <= 0) & (np.abs(areas) > flat)):
        return points  # nothing folds (most faces): no layout to work out
    kps5 = np.vstack([eyes, points[30], points[48], points[54]])
    opening = float(np.linalg.norm(points[66] - points[62])) / eye_distance
    frontal = np.vstack([with_forehead(layout_68(kps5, opening)), border_points(size)])
    oriented = np.abs(_signed_areas(frontal, TRIANGLES)) > flat
    outline = np.zeros(len(every), bool)
    outline[_OUTLINE] = True
    keep = np.ones(len(every))
    for _ in range(_UNTANGLE_STEPS):
        current = every - (1.0 - keep[:, None]) * (every - frontal)  # exactly ``every`` where kept
        folded = oriented & (_signed_areas(current, TRIANGLES) * _SIDES <= 0)
        if not folded.any():
            return current[:78]
        for corners in TRIANGLES[folded]:
            movable = [i for i in corners if i < 78 and outline[i] and keep[i] > 0.05]
            for i in movable or [i for i in corners if i < 78]:
                keep[i] *= _UNTANGLE_KEEP
    return frontal[:78]  # still folded after every step: the frontal layout never is


def _signed_areas(points: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Twice the signed area of each triangle (positive: counter-clockwise in image coordinates)."""
    corners = points[triangles]
    e1, e2 = corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]
    return e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]


# The mesh every 68-point warp uses (indices into the 68 landmarks, their 10 forehead points
# (``face_region.with_forehead``) and the 8 border points).
TRIANGLES = _canonical_triangles()
# +1 or -1 per triangle: its orientation on the layout the mesh is cut on, which ``untangle`` keeps.
_SIDES = np.sign(_signed_areas(np.vstack([_canonical_points(), border_points(_LAYOUT_SIDE)]), TRIANGLES))
_SIDES.setflags(write=False)


def inner_mouth(points68: np.ndarray) -> np.ndarray:
    """The (8, 2) inner-lip polygon of 68 landmarks (the mouth's opening)."""
    return np.asarray(points68, np.float64)[list(INNER_MOUTH)]
