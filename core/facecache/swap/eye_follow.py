"""Eyes that follow the target: the source's lids and iris moved onto the target's (the `classic_eyes` swapper).

The piecewise warp over 68 landmarks (``swap.piecewise``) puts the source's eye where the target's 68 points
say its eye is; those read a lowered lid as open and know no iris, so the source's open eye, looking where the
source looked, lands on a target that blinks or looks away. Here a second, local warp around each eye moves
the source's lids (the iris model's 16 lid points, ``analysis.iris``) and its iris centre, where the first warp
carried them, onto the target's own lids and iris centre. A ring of fixed points around each eye keeps
everything beyond it where the first warp put it. Each eye's mesh joins its iris centre to every lid point (a
fan, which folds nowhere, wherever between the lids the centre lies on either eye), and the ring to the lids'
outline. The two maps are composed, so the source is still resampled once.

A fan moves the iris's centre exactly but its rim less (each pixel by its share of the way from the lids to
the centre): a pupil's middle lags 0.38 of the way the iris moves. So the source's iris centre is led past
the target's by half the move again (``led_iris``), as far as the lids allow.

A warp can only squeeze the source's open eye into a lowered or closed lid, never close it: its lashes and
crease still read as half open. So where the target's lids are lowered or closed, the swapped face takes the
target's own eye (``kept_lids``) as detail on its own colours (``with_own_lids``): the lids' edges, the lashes
and the crease are the target's, the skin's colour and light the swapped face's.

An eye is given as (lids (16, 2), iris centre (2,)) in crop pixels: lid points 0-8 the lower lid from corner
to corner, 9-15 the upper lid between the corners (9 + k over 1 + k), as the iris model gives them.

    carried_eyes = [carried(np.vstack([lids, iris]), source_mesh, target_mesh, TRIANGLES, size) ...]
    follow_x, follow_y = follow_map(source_eyes, target_eyes, size)
    map_x = cv2.remap(map_x, follow_x, follow_y, cv2.INTER_LINEAR)   # and map_y: the composed map
"""

from __future__ import annotations

import numpy as np

from facecache.analysis.iris import lid_opening
from facecache.swap.masks import smoothstep, smoothstep_between, wide_blur
from facecache.swap.piecewise import border_points, piecewise_map

Eye = tuple[np.ndarray, np.ndarray]  # (lids (16, 2), iris centre (2,)), crop pixels

# What the swap records of `classic_eyes` are keyed by, beyond the classic swap's settings: 2, the target's
# lowered and closed lids kept (``kept_lids``); 3, both eyes kept or neither, by the face's mean opening, a
# closed eye out past its corners (``_CLOSED_AXES``); 4, each eye's mesh a fan from the iris centre (the mesh
# cut once on a laid-out eye had chords from lid to lid across it: an iris moved past one folded it); 5, the
# iris led past the target's (``led_iris``).
EYES_FOLLOW = "follow/5"
LID_POINTS = 16
_RING_POINTS = 16
# The ring's half axes along and across the eye, in eye widths (corner to corner) from the middle of its
# corners: beyond a wide open lid (about 0.2 above the middle) and short of the brows.
_RING = (0.9, 0.6)
# A target face whose eyes are open this much or less on average (``lid_opening``, eye widths) keeps all of
# its own eyes, one open this much or more none of them (a smoothstep between): the iris model reads open eyes
# 0.25-0.31 open, eyes looking down 0.16-0.17, closed ones 0.04-0.09 (the bench's eye targets and group photo).
_KEPT_OPENING = (0.17, 0.22)
# The target's own eye: an ellipse about its corners' middle, raised this far (eye widths) towards the upper
# lid's crease, with these half axes along and across the eye (short of the brows), whose outer share
# _KEPT_FADE fades out.
_KEPT_RAISE = 0.05
_KEPT_AXES = (0.75, 0.4)
# A closed eye (``lid_opening`` this much or less, none of it this much or more) keeps more of itself, out past
# its corners: the iris model guesses the iris under a closed lid from the lids' ends and the skin beyond them
# (with the target's own pixels kept 0.6 eye widths along, the guess still moved 0.12; with 0.8, 0.02).
_CLOSED_OPENING = (0.09, 0.14)
_CLOSED_AXES = (1.0, 0.5)
_KEPT_FADE = 0.4
# The target's eye is carried over as its difference from the skin around it (each face's colours around the
# eye, spread into it by a blur of this many eye widths that leaves the kept eye out), added to the swapped
# face's skin around it: the lids' edges, the lashes and the crease are the target's, the colour and light the
# swapped face's (a pale target's lids in a dark source's face are no pale patches, and the source's own eye
# leaves no shadow in them).
_AROUND_SIGMA = 0.3
# How far past the target's iris centre the source's is led, as a share of the way it moves (in the eyes' own
# frames). A laid-out pupil's middle lags 0.38 of the way under the fan, none with 0.6 (0.07 with 0.5); on the
# quality bench's photo sets 0.5 read the iris closer than 0.8 did, whose overshoot a misread iris doubles
# (docs/quality.md).
_IRIS_LEAD = 0.5
# The lead takes the iris centre no nearer a corner than this (eye widths from the middle along the eye): the fan
# folds where the centre reaches a corner, and an iris there touches the corner already.
_LED_REACH = 0.3


def _outer_ring() -> np.ndarray:
    """The ring around an eye in its own frame (corners at -0.5 and 0.5 along, the upper lid up, in eye
    widths)."""
    turn = np.linspace(0.0, 2 * np.pi, _RING_POINTS, endpoint=False)
    return np.stack([_RING[0] * np.cos(turn), _RING[1] * np.sin(turn)], axis=1)


_OUTER_RING = _outer_ring()
# An eye's mesh points (``_mesh_points``), by number: its lids (the lower from corner to corner, then the upper
# between them), its iris centre and the ring around the eye.
_CENTRE = LID_POINTS
_AROUND = np.arange(_CENTRE + 1, _CENTRE + 1 + _RING_POINTS)
_MESH_POINTS = _AROUND[-1] + 1
_LID_LOOP = np.r_[0:9, 15:8:-1]  # the lids' outline, round the eye


def _zipped(inner: np.ndarray, inner_angles: np.ndarray, outer: np.ndarray, outer_angles: np.ndarray) -> list:
    """Triangles filling the band between two closed loops of point numbers, ``inner`` within ``outer``, both
    seen from a point within (their angles about it): each point joined to its neighbours in angle on the other
    loop, every triangle turned the same way. Both loops are walked once round, from the inner loop's first
    point and the outer point just before it."""
    first = inner_angles.min()
    inner_turns = (inner_angles - first) % (2 * np.pi)
    outer_turns = (outer_angles - first) % (2 * np.pi)
    inner_order, outer_order = np.argsort(inner_turns), np.argsort(outer_turns)
    outer_order = np.r_[outer_order[-1], outer_order[:-1]]  # the outer point just before the inner first
    inner_turns = np.r_[inner_turns[inner_order], 2 * np.pi]
    outer_turns = np.r_[outer_turns[outer_order[0]] - 2 * np.pi, outer_turns[outer_order[1:]],
                        outer_turns[outer_order[0]]]
    inner, outer = inner[inner_order], outer[outer_order]
    i = j = 0
    triangles = []
    while i < len(inner) or j < len(outer):
        if j == len(outer) or (i < len(inner) and inner_turns[i + 1] <= outer_turns[j + 1]):
            triangles.append((inner[i], inner[(i + 1) % len(inner)], outer[j % len(outer)]))
            i += 1
        else:
            triangles.append((inner[i % len(inner)], outer[(j + 1) % len(outer)], outer[j]))
            j += 1
    return triangles


def _eye_triangles() -> np.ndarray:
    """(T, 3) point numbers of an eye's mesh: the iris centre joined to every lid point (a fan: it folds
    nowhere, wherever between the lids the centre lies on either eye), and the ring around the eye joined to
    the lids' outline by their angles about the eye's middle, cut once on an open eye laid out in its own frame
    (corners at -0.5 and 0.5 along, the upper lid up, in eye widths)."""
    steps = np.arange(9) / 8.0
    lids = np.vstack([np.stack([steps - 0.5, -0.12 * np.sin(np.pi * steps)], axis=1),
                      np.stack([steps[1:8] - 0.5, 0.18 * np.sin(np.pi * steps[1:8])], axis=1)])
    lid_angles = np.arctan2(lids[_LID_LOOP, 1], lids[_LID_LOOP, 0])
    fan = [(_CENTRE, _LID_LOOP[k], _LID_LOOP[(k + 1) % len(_LID_LOOP)]) for k in range(len(_LID_LOOP))]
    around = _zipped(_LID_LOOP, lid_angles, _AROUND, np.arctan2(_OUTER_RING[:, 1], _OUTER_RING[:, 0]))
    triangles = np.array(fan + around, np.int32)
    triangles.setflags(write=False)
    return triangles


EYE_TRIANGLES = _eye_triangles()


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


def led_iris(source: Eye, target: Eye) -> np.ndarray:
    """Where the source's iris centre is taken to: the target's, led on by _IRIS_LEAD of the way from where the
    source's lies in its own eye to where the target's lies in its eye (both between their lids, in eye widths
    along and across), and kept between the target's lids and short of its corners (_LED_REACH)."""
    places = []
    for lids, iris in (source, target):
        lids = np.asarray(lids, np.float64).reshape(LID_POINTS, 2)
        middle, along, up, width = eye_frame(lids)
        centre = between_lids(lids, np.asarray(iris, np.float64).reshape(2)) - middle
        places.append(np.array([np.dot(centre, along), np.dot(centre, up)]) / width)
    (source_place, target_place), target_lids = places, np.asarray(target[0], np.float64).reshape(LID_POINTS, 2)
    middle, along, up, width = eye_frame(target_lids)
    u, v = target_place
    if abs(u) < _LED_REACH:  # nearer a corner the lids leave the fan no room
        u, v = target_place + _IRIS_LEAD * (target_place - source_place)
        u = np.clip(u, -_LED_REACH, _LED_REACH)
    return between_lids(target_lids, middle + width * (u * along + v * up))


def _mesh_points(eye: Eye, ring_around: np.ndarray) -> np.ndarray:
    """One eye's mesh points: its lids, its iris centre between them, and the ring laid around the lids
    ``ring_around`` (both meshes of an eye share the target's ring, so beyond it nothing moves)."""
    lids = np.asarray(eye[0], np.float64).reshape(LID_POINTS, 2)
    middle, along, up, width = eye_frame(ring_around)
    ring = middle + width * (_OUTER_RING[:, :1] * along + _OUTER_RING[:, 1:] * up)
    return np.vstack([lids, between_lids(lids, np.asarray(eye[1], np.float64).reshape(2)), ring])


def follow_map(source_eyes: list[Eye], target_eyes: list[Eye], size: int) -> tuple[np.ndarray, np.ndarray]:
    """(map_x, map_y), float32 (size, size): for each pixel of the target crop, where to read in the crop the
    first warp made, so that each source eye (where the first warp put it) lands on the matching target eye, its
    iris centre led on (``led_iris``); pixels beyond the eyes' rings map onto themselves."""
    sources, targets, triangles = [], [], []
    for source, target in zip(source_eyes, target_eyes):
        target_lids = np.asarray(target[0], np.float64).reshape(LID_POINTS, 2)
        triangles.append(EYE_TRIANGLES + _MESH_POINTS * len(targets))
        targets.append(_mesh_points((target_lids, led_iris(source, target)), target_lids))
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


def kept_lids(target_eyes: list[Eye], size: int) -> np.ndarray:
    """(size, size) float32 0..1: where the target keeps its own eyes, because its lids are lowered or closed
    (``_KEPT_OPENING``, the face's mean opening), a closed eye further out (``_CLOSED_OPENING``); zeros where
    the face's eyes are open."""
    kept = np.zeros((size, size), np.float32)
    eyes = [np.asarray(lids, np.float64).reshape(LID_POINTS, 2) for lids, _ in target_eyes]
    if not eyes:
        return kept
    # Both eyes' lids lower together (a glance down, a blink), and the model reads a turned face's far eye as
    # less open than its near one: the face's mean opening says how lowered both are.
    openings = [lid_opening(lids) for lids in eyes]
    lowered = smoothstep_between(float(np.mean(openings)), _KEPT_OPENING[::-1])
    if lowered <= 0.0:
        return kept
    for lids, opening in zip(eyes, openings):
        closed = smoothstep_between(opening, _CLOSED_OPENING[::-1])
        middle, along, up, width = eye_frame(lids)
        middle = middle + _KEPT_RAISE * width * up
        axes = [(kept_axis + closed * (closed_axis - kept_axis)) * width
                for kept_axis, closed_axis in zip(_KEPT_AXES, _CLOSED_AXES)]
        x0, y0 = (np.floor(middle - axes[0]).astype(int)).clip(0, size)
        x1, y1 = (np.ceil(middle + axes[0]).astype(int) + 1).clip(0, size)
        if x1 <= x0 or y1 <= y0:
            continue
        xs, ys = np.meshgrid(np.arange(x0, x1) - middle[0], np.arange(y0, y1) - middle[1])
        u = (xs * along[0] + ys * along[1]) / axes[0]
        v = (xs * up[0] + ys * up[1]) / axes[1]
        eye = smoothstep((1.0 - np.sqrt(u * u + v * v)) / _KEPT_FADE) * lowered
        np.maximum(kept[y0:y1, x0:x1], eye.astype(np.float32), out=kept[y0:y1, x0:x1])
    return kept


def with_own_lids(crop: np.ndarray, original: np.ndarray, target_eyes: list[Eye]) -> np.ndarray:
    """``crop`` (the swapped face, BGR uint8) with the target's own lowered or closed eyes (``original``: the
    target in the same crop) where ``kept_lids`` keeps them, in the crop's colours. A new image, or ``crop``
    itself when every eye is open."""
    kept = kept_lids(target_eyes, crop.shape[0])
    rows, columns = np.nonzero(kept)
    if len(rows) == 0:
        return crop
    width = float(np.mean([eye_frame(np.asarray(lids, np.float64).reshape(LID_POINTS, 2))[3]
                           for lids, _ in target_eyes]))
    sigma = max(1.0, _AROUND_SIGMA * width)
    pad = int(np.ceil(3 * sigma))  # the blurs read this far around what changes
    region = np.s_[max(0, rows.min() - pad):rows.max() + pad + 1, max(0, columns.min() - pad):columns.max() + pad + 1]
    share = kept[region][..., None]
    around = 1.0 - share
    # The target's eye on the swapped skin around it: target + (swapped - target) around the eye, spread into
    # it (a blur of what lies around it, over the blur of its weights).
    swapped = crop[region].astype(np.float32)
    difference = swapped - original[region]
    between = (wide_blur(difference * around, sigma)
               / np.maximum(wide_blur(around, sigma)[..., None], 1e-3))
    out = crop.copy()
    out[region] = np.clip(swapped + share * (between - difference) + 0.5, 0, 255).astype(np.uint8)
    return out
