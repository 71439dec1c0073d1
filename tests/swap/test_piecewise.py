"""The piecewise-affine warp over 68 landmarks, and the classic swap that uses it."""

import cv2
import numpy as np
import pytest

from facecache.analysis.align import transform_points
from facecache.store.records import Face
from facecache.swap.classic import ClassicSwapper
from facecache.swap.face_region import with_forehead
from facecache.swap.piecewise import TRIANGLES, border_points, piecewise_map, triangulate

from portrait_faces import portrait_face, synthetic_68


def test_the_triangles_cover_the_crop_and_equal_shapes_map_onto_themselves():
    points = with_forehead(synthetic_68([[80, 100], [176, 100], [128, 150], [90, 190], [166, 190]]))
    triangles = triangulate(points, 256)
    assert len(triangles) > 100 and triangles.max() == 78 + 8 - 1 and TRIANGLES.max() == 78 + 8 - 1
    map_x, map_y = piecewise_map(points, points, triangles, 256)
    ys, xs = np.mgrid[0:256, 0:256]
    assert np.abs(map_x - xs).max() < 1e-3 and np.abs(map_y - ys).max() < 1e-3


def test_each_landmark_of_the_target_reads_the_sources_matching_landmark():
    kps5 = [[80, 100], [176, 100], [128, 150], [90, 190], [166, 190]]
    source, target = (with_forehead(synthetic_68(kps5, mouth_open=opening)) for opening in (0.0, 0.4))
    map_x, map_y = piecewise_map(source, target, TRIANGLES, 256)
    def read(point):  # the map at a point between pixels (bilinear)
        at = [np.float32([[point[0]]]), np.float32([[point[1]]])]
        return np.array([cv2.remap(m, *at, cv2.INTER_LINEAR)[0, 0] for m in (map_x, map_y)])

    for index in (8, 30, 48, 57, 62, 66):  # chin, nose tip, mouth corner, lower lip, inner lips
        assert np.linalg.norm(read(target[index]) - source[index]) < 0.5, index
    # far from the face the crop is untouched
    assert abs(map_x[5, 5] - 5) < 1e-3 and abs(map_y[128, 252] - 128) < 1e-3
    assert np.allclose(border_points(256)[4], [255, 255])


@pytest.mark.index
def test_the_target_expression_survives_the_swap(portraits):
    """Grace Hopper's closed mouth onto a target whose mouth is open: the swapped face's lips sit on
    the target's lips and the target's open mouth (its teeth) shows through the mask."""
    def with_68(name, mouth_open):
        face = portrait_face(name)
        return Face(box=face.box, score=face.score, kps5=face.kps5, landmarks68=synthetic_68(face.kps5, mouth_open))

    swapper = ClassicSwapper()
    source = swapper.prepare_source(portraits["grace_hopper"], with_68("grace_hopper", 0.0))
    closed = swapper.swap(portraits["astronaut"], with_68("astronaut", 0.0), source)
    target = with_68("astronaut", 0.45)
    opened = swapper.swap(portraits["astronaut"], target, source)
    inner = transform_points(target.landmarks68, opened.matrix)
    mouth_centre = np.round((inner[62] + inner[66]) / 2).astype(int)
    assert opened.mask[mouth_centre[1], mouth_centre[0]] < 0.1  # the target's open mouth shows
    assert closed.mask[mouth_centre[1], mouth_centre[0]] > 0.9
    # the mask covers the target's face to its jaw (the hull of its 68 points), not just the inner face
    jaw = np.round(inner[[3, 8, 13]] + (inner[[30]] - inner[[3, 8, 13]]) * 0.25).astype(int)
    assert all(opened.mask[y, x] > 0.5 for x, y in jaw)
    # the source's lower lip moved down with the target's: the crop differs where the lips moved
    lip = np.round(inner[57]).astype(int)
    assert np.abs(opened.crop[lip[1] - 2:lip[1] + 3, lip[0] - 2:lip[0] + 3].astype(int)
                  - closed.crop[lip[1] - 2:lip[1] + 3, lip[0] - 2:lip[0] + 3]).mean() > 5


def test_a_folded_mesh_is_untangled_and_an_upright_one_left_alone():
    """A head turned far puts the jaw's top inside the eye's corner: that triangle folds over. Only
    the points of folded triangles move (jaw and forehead first), and afterwards none folds."""
    from facecache.swap.piecewise import _SIDES, _signed_areas, untangle

    kps5 = [[80, 100], [176, 100], [128, 150], [90, 190], [166, 190]]
    upright = with_forehead(synthetic_68(kps5, mouth_open=0.1))
    assert np.allclose(untangle(upright, 256), upright, atol=1e-3)
    turned = upright.copy()
    turned[0] = turned[36] + [12, 2]  # the jaw's top point inside the eye's outer corner
    def folded(points):
        areas = _signed_areas(np.vstack([points, border_points(256)]), TRIANGLES) * _SIDES
        return int((areas <= 0).sum())
    assert folded(turned) > folded(upright)  # (the upright face's nearly closed lips are flat, not folded)
    fixed = untangle(turned, 256)
    assert folded(fixed) == folded(upright)
    moved = np.linalg.norm(fixed - turned, axis=1) > 1e-9
    assert moved[0]  # the jaw point moved towards its frontal place


def swapper_source_matrix(swapper, face, size):
    from facecache.analysis.align import alignment_matrix

    return alignment_matrix(face.kps5, swapper.settings.template, size)


@pytest.mark.index
def test_the_mask_stops_where_the_source_picture_ends(portraits):
    """A source whose face is cut by its picture's edge: the swapped face takes nothing from beyond
    that edge (a repeated edge pixel is a smear); the rest of the face is swapped as usual."""
    source_face = portrait_face("grace_hopper")
    target = portrait_face("astronaut")
    whole = portraits["grace_hopper"]
    cut_at = int(source_face.kps5[1][0]) + 10  # just right of the right eye
    cut = np.ascontiguousarray(whole[:, :cut_at])
    swapper = ClassicSwapper()
    full = swapper.swap(portraits["astronaut"], target, swapper.prepare_source(whole, source_face))
    part = swapper.swap(portraits["astronaut"], target, swapper.prepare_source(cut, source_face))
    # the source's crop is aligned (Grace Hopper's eyes are level), so its cut is about a column of the crop
    column = int(np.ceil(transform_points(np.array([[cut_at, source_face.kps5[1][1]]]),
                                          swapper_source_matrix(swapper, source_face, part.size))[0][0])) + 2
    assert part.mask[:, column:].max() == 0 and full.mask[:, column:].max() > 0.5
    nose = np.round(transform_points(target.kps5[2:3], part.matrix)[0]).astype(int)
    assert part.mask[nose[1], nose[0]] == pytest.approx(full.mask[nose[1], nose[0]])
