"""Eyes that follow the target: the source's lids and iris moved onto the target's (the `classic_eyes` swapper).

The piecewise warp over 68 landmarks (``swap.piecewise``) puts the source's eye where the target's 68 points
say its eye is; those read a lowered lid as open and know no iris, so the source's open eye, looking where the
source looked, lands on a target that blinks or looks away. Here a second, local warp around each eye moves
the source's lids (the iris model's 16 lid points, ``analysis.iris``) and its iris centre, where the first warp
carried them, onto the target's own lids and iris centre. A ring of fixed points around each eye keeps
everything beyond it where the first warp put it. The two maps are composed, so the source is still resampled
once.

An eye is given as (lids (16, 2), iris centre (2,)) in crop pixels: lid points 0-8 the lower lid from corner
to corner, 9-15 the upper lid between the corners (9 + k over 1 + k), as the iris model gives them.

    carried_eyes = [carried(np.vstack([lids, iris]), source_mesh, target_mesh, TRIANGLES, size) ...]
    follow_x, follow_y = follow_map(source_eyes, target_eyes, size)
    map_x = cv2.remap(map_x, follow_x, follow_y, cv2.INTER_LINEAR)   # and map_y: the composed map
"""

from __future__ import annotations

import cv2
import numpy as np

from facecache.swap.piecewise import border_points, piecewise_map

Eye = tuple[np.ndarray, np.ndarray]  # (lids (16, 2), iris centre (2,)), crop pixels

LID_POINTS = 16
_RING_POINTS = 16
# The ring's half axes along and across the eye, in eye widths (corner to corner) from the middle of its
# corners: beyond a wide open lid (about 0.2 above the middle) and short of the brows.
_RING = (0.9, 0.6)


def _canonical_eye() -> np.ndarray:
    """An open eye in its own frame (corners at -0.5 and 0.5 along, the upper lid up, in eye widths): its
    16 lid points, its iris centre and the ring. The mesh is cut on it, once."""
    steps = np.arange(9) / 8.0
    lower = np.stack([steps - 0.5, -0.12 * np.sin(np.pi * steps)], axis=1)
    upper = np.stack([steps[1:8] - 0.5, 0.18 * np.sin(np.pi * steps[1:8])], axis=1)
    turn = np.linspace(0.0, 2 * np.pi, _RING_POINTS, endpoint=False)
    ring = np.stack([_RING[0] * np.cos(turn), _RING[1] * np.sin(turn)], axis=1)
    return np.vstack([lower, upper, [[0.0, 0.03]], ring])


def _delaunay(points: np.ndarray) -> np.ndarray:
    """(T, 3) indices: a Delaunay triangulation of ``points`` (scaled into a square for Subdiv2D)."""
    side = 512.0
    pixels = (points - points.min(axis=0)) / np.ptp(points, axis=0).max() * (side - 3) + 1
    subdivision = cv2.Subdiv2D((0, 0, int(side), int(side)))
    for x, y in pixels:
        subdivision.insert((float(x), float(y)))
    triangles = []
    for corners in subdivision.getTriangleList().reshape(-1, 3, 2):
        distances = np.linalg.norm(pixels[None, :, :] - corners[:, None, :], axis=2)
        if distances.min(axis=1).max() <= 0.5:  # else a triangle of the subdivision's outer frame
            triangles.append(distances.argmin(axis=1))
    return np.array(triangles, np.int32).reshape(-1, 3)


_LAYOUT = _canonical_eye()
EYE_TRIANGLES = _delaunay(_LAYOUT)
EYE_TRIANGLES.setflags(write=False)


def eye_frame(lids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(middle, along, up, width) of an eye: the middle of its corners, the unit vector from corner 0 to
    corner 8, the unit vector square to it towards the upper lid, and the corners' distance."""
    middle = (lids[0] + lids[8]) / 2
    along = lids[8] - lids[0]
    width = max(float(np.linalg.norm(along)), 1e-6)
    along = along / width
    up = np.array([-along[1], along[0]])
    if np.dot(lids[9:16].mean(axis=0) - lids[1:8].mean(axis=0), up) < 0:
        up = -up
    return middle, along, up, width


def between_lids(lids: np.ndarray, iris: np.ndarray) -> np.ndarray:
    """The iris centre moved across the eye to lie between the lids: a lowered lid hides the iris's top, a
    closed one all of it (the model guesses an iris there), and the mesh's triangles must not fold."""
    middle, along, up, _ = eye_frame(lids)
    u, v = float(np.dot(iris - middle, along)), float(np.dot(iris - middle, up))
    xs, ys = (lids - middle) @ along, (lids - middle) @ up
    lower = np.argsort(xs[:9])
    upper_x, upper_y = np.r_[xs[0], xs[9:16], xs[8]], np.r_[ys[0], ys[9:16], ys[8]]
    upper = np.argsort(upper_x)
    low = float(np.interp(u, xs[:9][lower], ys[:9][lower]))
    high = float(np.interp(u, upper_x[upper], upper_y[upper]))
    v = float(np.clip(v, min(low, high), max(low, high)))
    return middle + u * along + v * up


def _mesh_points(eye: Eye, ring_around: np.ndarray) -> np.ndarray:
    """One eye's 33 mesh points: its lids, its iris centre between them, and the ring laid around the
    lids ``ring_around`` (both meshes of an eye share the target's ring, so beyond it nothing moves)."""
    lids = np.asarray(eye[0], np.float64).reshape(LID_POINTS, 2)
    middle, along, up, width = eye_frame(ring_around)
    ring = _LAYOUT[LID_POINTS + 1:]
    ring = middle + width * (ring[:, :1] * along + ring[:, 1:] * up)
    return np.vstack([lids, between_lids(lids, np.asarray(eye[1], np.float64).reshape(2)), ring])


def follow_map(source_eyes: list[Eye], target_eyes: list[Eye], size: int) -> tuple[np.ndarray, np.ndarray]:
    """(map_x, map_y), float32 (size, size): for each pixel of the target crop, where to read in the crop the
    first warp made, so that each source eye (where the first warp put it) lands on the matching target eye;
    pixels beyond the eyes' rings map onto themselves."""
    sources, targets, triangles = [], [], []
    for source, target in zip(source_eyes, target_eyes):
        target_lids = np.asarray(target[0], np.float64).reshape(LID_POINTS, 2)
        triangles.append(EYE_TRIANGLES + len(_LAYOUT) * len(targets))
        targets.append(_mesh_points(target, target_lids))
        sources.append(_mesh_points(source, target_lids))
    # (piecewise_map adds the crop's border points to both; the eyes' triangles do not use them)
    return piecewise_map(np.vstack(sources), np.vstack(targets), np.vstack(triangles), size)


def carried(points: np.ndarray, source_mesh: np.ndarray, target_mesh: np.ndarray, triangles: np.ndarray,
            size: int) -> np.ndarray:
    """``points`` of the source crop where the piecewise warp from ``source_mesh`` onto ``target_mesh`` (matching
    points, ``triangles`` over them and the crop's border points) puts them in the target crop: each by its
    barycentric place in the source triangle that holds it (the one it lies least outside of, near none)."""
    source = np.vstack([source_mesh, border_points(size)])[triangles]  # (T, 3, 2)
    target = np.vstack([target_mesh, border_points(size)])[triangles]
    first, e1, e2 = source[:, 0], source[:, 1] - source[:, 0], source[:, 2] - source[:, 0]
    det = e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]
    det = np.where(np.abs(det) < 1e-9, 1e-9, det)  # a flat triangle holds nothing
    out = []
    for point in np.asarray(points, np.float64).reshape(-1, 2):
        w = point - first
        beta = (w[:, 0] * e2[:, 1] - w[:, 1] * e2[:, 0]) / det
        gamma = (e1[:, 0] * w[:, 1] - e1[:, 1] * w[:, 0]) / det
        alpha = 1.0 - beta - gamma
        t = int(np.argmax(np.minimum(np.minimum(alpha, beta), gamma)))
        out.append(alpha[t] * target[t, 0] + beta[t] * target[t, 1] + gamma[t] * target[t, 2])
    return np.array(out)
