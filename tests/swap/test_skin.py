"""Where the classic swap takes skin beyond the landmarks, and what its colour transfer is fitted on
(swap/face_region.py, swap/classic.py)."""

import cv2
import numpy as np
import pytest

from facecache.analysis.align import transform_points
from facecache.store.records import Face
from facecache.swap.classic import ClassicSwapper
from facecache.swap.composite import CompositeParams, color_transfer, paste_back
from facecache.swap.face_region import skin_likeness, skin_patch
from facecache.swap.masks import polygon_mask

from portrait_faces import portrait_face, synthetic_68

KPS5 = np.array([[80, 100], [176, 100], [128, 150], [90, 190], [166, 190]], np.float64)


def with_68(name: str) -> Face:
    """The sample portrait's face with 68 landmarks laid out around its key points."""
    face = portrait_face(name)
    return Face(box=face.box, score=face.score, kps5=face.kps5, landmarks68=synthetic_68(face.kps5))


def test_the_skin_patch_is_cheeks_and_nose_without_eyes_or_lips():
    points = synthetic_68(KPS5)
    patch = skin_patch(points, 256)
    assert patch.dtype == np.float32 and patch.shape == (256, 256) and patch.sum() > 2000
    assert patch[tuple(np.round(points[30]).astype(int))[::-1]] == 1  # the nose's tip
    for eye in (points[36:42], points[42:48]):
        assert patch[tuple(np.round(eye.mean(axis=0)).astype(int))[::-1]] == 0
    assert patch[tuple(np.round(points[48:60].mean(axis=0)).astype(int))[::-1]] == 0  # the mouth
    hull = cv2.dilate(polygon_mask(points, 256, 0), np.ones((3, 3), np.uint8))  # (to a pixel)
    assert patch[hull == 0].max() == 0  # all of it inside the landmarks


def lab_rows(lab8_rows) -> np.ndarray:
    """A BGR picture of stacked 32-row bands, each of one 8-bit L*a*b* colour (or an (h, w, 3) block)."""
    blocks = [np.broadcast_to(np.asarray(row, np.uint8), (32, 96, 3)) for row in lab8_rows]
    return cv2.cvtColor(np.ascontiguousarray(np.concatenate(blocks)), cv2.COLOR_LAB2BGR)


def test_firm_skin_is_taken_whole_and_what_is_far_from_it_not_at_all():
    skin = np.array([150, 145, 150])
    checker = (np.indices((32, 96)).sum(axis=0) % 2 * 2 - 1)[..., None] * np.array([12, 4, 4])  # a spread
    near = skin + [20, 0, 0]  # within one of the skin's allowed distances (3 spreads of L*)
    far = skin - [90, 0, 0]   # beyond two of them: as dark as brown hair
    image = lab_rows([skin + checker, near, far])
    marked = np.zeros(image.shape[:2], np.float32)
    marked[:32] = 1.0
    firm, soft = skin_likeness(image, marked, firm=True), skin_likeness(image, marked)
    assert firm[48, 48] == pytest.approx(1.0, abs=1e-3) and soft[48, 48] < 0.9  # half taken: a band
    assert firm[80, 48] == 0.0 < soft[80, 48]
    assert firm.min() >= 0.0 and firm.max() <= 1.0


@pytest.mark.index
def test_a_fringe_on_the_sources_forehead_is_left_out_whole(portraits):
    """A source whose hair covers its forehead, swapped onto its own picture without the hair: where
    the swapped crop shows the hair, the mask takes none of it, so the target's forehead shows as
    it is (half taken, hair over a bare forehead is a grey band)."""
    target, face = portraits["grace_hopper"], with_68("grace_hopper")
    fringe = target.copy()
    eye_line, eyes = float(face.kps5[:2, 1].mean()), float(np.linalg.norm(face.kps5[1] - face.kps5[0]))
    rows = slice(int(eye_line - 0.7 * eyes), int(eye_line - 0.38 * eyes))
    fringe[rows, 150:380] = (30, 30, 40)  # dark hair, down to just above the brows
    swapper = ClassicSwapper()
    result = swapper.swap(target, face, swapper.prepare_source(fringe, face))
    bare = swapper.swap(target, face, swapper.prepare_source(target, face))
    hair = np.abs(result.crop.astype(int) - bare.crop).max(axis=2) > 20  # where the crop shows the fringe
    hair = cv2.erode(hair.astype(np.uint8), np.ones((13, 13), np.uint8)) > 0  # (not its blurred edge)
    brows = polygon_mask(transform_points(face.landmarks68, result.matrix), result.size, 0) > 0
    beyond = bare.mask > 0.5  # where the swap takes the bare forehead
    assert (hair & beyond & ~brows).sum() > 200 and result.mask[hair & ~brows].max() < 0.05
    output, without = (paste_back(target, [swapped], CompositeParams()) for swapped in (result, bare))
    above_brows = slice(rows.start, int(eye_line - 0.5 * eyes))
    assert np.abs(output[above_brows].astype(int) - without[above_brows]).mean() < 1.0  # no trace of it


@pytest.mark.index
def test_the_colour_transfer_is_fitted_from_the_jaw_to_the_brows(portraits):
    """The target's hair above the brows (painted here over its forehead) does not move the colours
    the swapped face is given: they are fitted where both faces are faces."""
    target, face = portraits["astronaut"], with_68("astronaut")
    swapper = ClassicSwapper()
    source = swapper.prepare_source(portraits["grace_hopper"], with_68("grace_hopper"))
    painted = target.copy()
    eye_line, eyes = float(face.kps5[:2, 1].mean()), float(np.linalg.norm(face.kps5[1] - face.kps5[0]))
    painted[int(eye_line - 1.2 * eyes):int(eye_line - 0.5 * eyes), 150:300] = (20, 30, 60)
    plain, hair = (color_transfer(swapper.swap(frame, face, source), frame).as_array() for frame in (target, painted))
    assert np.abs(plain - hair).max() < 0.5
