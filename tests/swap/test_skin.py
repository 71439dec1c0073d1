"""Where the classic swap takes skin beyond the landmarks, and what its colour transfer is fitted on
(swap/face_region.py, swap/classic.py)."""

import cv2
import numpy as np
import pytest

from facecache.analysis.align import transform_points
from facecache.store.records import Face
from facecache.swap.classic import ClassicSwapper
from facecache.swap.composite import CompositeParams, color_transfer, paste_back
from facecache.swap.face_region import skin_likeness, skin_patch, without_fringe
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


def test_skin_in_brighter_light_counts_as_skin_where_asked_and_a_white_wall_does_not():
    # The target's forehead lit paler than its cheeks (its colour a third of the way to white) read half skin,
    # so the mask took it half: a band at the brows (the second check's worst top edge, docs/quality.md).
    skin = np.array([150, 145, 150])
    checker = (np.indices((32, 96)).sum(axis=0) % 2 * 2 - 1)[..., None] * np.array([12, 4, 4])  # a spread
    lit = np.round(skin + 0.35 * (np.array([255, 128, 128]) - skin)).astype(int)
    wall, blonde, hair = [248, 128, 128], [215, 132, 165], skin - [90, 0, 0]
    image = lab_rows([skin + checker, lit, wall, blonde, hair])
    marked = np.zeros(image.shape[:2], np.float32)
    marked[:32] = 1.0
    plain, in_light = skin_likeness(image, marked), skin_likeness(image, marked, lit=True)
    rows = {name: 16 + 32 * number for number, name in enumerate(["skin", "lit", "wall", "blonde", "hair"])}
    assert plain[rows["lit"], 48] < 0.5 and in_light[rows["lit"], 48] > 0.9
    for name in ("wall", "blonde", "hair"):
        assert in_light[rows[name], 48] < 0.15, name


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
    hair = cv2.warpAffine((np.abs(fringe.astype(int) - target).max(axis=2) > 0).astype(np.uint8),
                          result.matrix.astype(np.float64), (result.size, result.size))  # where the source shows it
    hair = cv2.erode(hair, np.ones((13, 13), np.uint8)) > 0  # (not its blurred edge)
    brows = polygon_mask(transform_points(face.landmarks68, result.matrix), result.size, 0) > 0
    beyond = bare.mask > 0.5  # where the swap takes the bare forehead
    assert (hair & beyond & ~brows).sum() > 200 and result.mask[hair & ~brows].max() < 0.05
    output, without = (paste_back(target, [swapped], CompositeParams()) for swapped in (result, bare))
    above_brows = slice(rows.start, int(eye_line - 0.5 * eyes))
    darker = without[above_brows].astype(int) - output[above_brows]
    # no trace of it: the hair is 150 levels darker than the skin; at the fringe's edge the source's forehead is
    # the skin around it, smooth (`face_region.without_fringe`), a few levels from the skin it hides
    assert np.abs(darker).mean() < 2.0 and darker.max() < 40


def test_what_is_not_surely_skin_above_the_eyes_is_the_skin_around_it():
    skin_bgr, hair_bgr = (120, 150, 200), (30, 35, 45)
    crop = np.full((128, 128, 3), skin_bgr, np.uint8)
    crop[20:26] = hair_bgr  # a fringe's dark lower edge
    crop[40:46, 60:68] = hair_bgr  # a brow, inside the landmarks' hull
    likeness = np.ones((128, 128), np.float32)
    likeness[18:28] = 0.45  # (the soft cut reads the edge as half skin)
    likeness[40:46, 60:68] = 0.0
    hull = np.zeros((128, 128), np.float32)
    hull[36:] = 1.0
    out = without_fringe(crop, likeness, hull)
    assert np.abs(out[:36].astype(int) - skin_bgr).max() <= 2  # the fringe's edge is skin, and so is its fill
    assert np.array_equal(out[36:], crop[36:])  # the hull (the brow in it) is kept exactly
    assert np.array_equal(out[:12], crop[:12])  # sure skin beyond the blur's reach too
    assert without_fringe(crop, np.ones_like(likeness), hull) is crop  # all skin: nothing to do


def test_a_sideburn_beside_the_eyes_is_the_skin_around_it_down_to_the_nose():
    skin_bgr, hair_bgr = (120, 150, 200), (90, 95, 100)
    crop = np.full((128, 128, 3), skin_bgr, np.uint8)
    crop[56:84, 112:120] = hair_bgr  # a grey sideburn beside the eye (0.44-0.66 of the side) and below it
    crop[100:110, 112:120] = hair_bgr  # something dark below the nose's tip, beside the jaw
    likeness = np.ones((128, 128), np.float32)
    likeness[56:84, 112:120] = 0.45  # (the blurred likeness reads a narrow sideburn as half skin)
    likeness[100:110, 112:120] = 0.0
    hull = np.zeros((128, 128), np.float32)
    hull[36:, 20:100] = 1.0
    out = without_fringe(crop, likeness, hull)
    # stopped at the eyes' row (0.40), the fill left the sideburn below it whole: a block with a straight top
    assert np.abs(out[:84].astype(int) - skin_bgr).max() <= 2
    assert np.array_equal(out[96:], crop[96:])  # below the nose's tip the source stays as it is
    assert np.array_equal(out[:, 20:100], crop[:, 20:100])  # the hull too


@pytest.mark.index
def test_a_fringes_edge_under_the_masks_soft_cut_shows_skin_not_hair(portraits):
    """The mask's cut through the source's skin is soft: where it half takes the source's forehead at
    a fringe's lower edge, the crop shows the skin around, not the hair (half taken, a dark line along
    the swapped forehead's top)."""
    target, face = portraits["grace_hopper"], with_68("grace_hopper")
    fringe = target.copy()
    eye_line, eyes = float(face.kps5[:2, 1].mean()), float(np.linalg.norm(face.kps5[1] - face.kps5[0]))
    fringe[int(eye_line - 0.7 * eyes):int(eye_line - 0.38 * eyes), 150:380] = (30, 30, 40)  # L* 30 of 255
    swapper = ClassicSwapper()
    result = swapper.swap(target, face, swapper.prepare_source(fringe, face))
    hair = cv2.warpAffine((np.abs(fringe.astype(int) - target).max(axis=2) > 0).astype(np.uint8),
                          result.matrix.astype(np.float64), (result.size, result.size)) > 0
    hull = cv2.dilate(polygon_mask(transform_points(face.landmarks68, result.matrix), result.size, 0),
                      np.ones((5, 5), np.uint8)) > 0
    edge = hair & ~hull & (result.mask > 0.02)  # the fringe, where the mask takes some of the source
    assert edge.sum() > 200
    lightness = cv2.cvtColor(result.crop, cv2.COLOR_BGR2LAB)[..., 0][edge]
    assert np.percentile(lightness, 1) > 100  # skin (L* 150-200 here), none of it the hair's


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


def test_the_sources_dark_brows_are_taken_whole_under_a_bare_forehead(portraits):
    """The brows belong to the swapped face whatever their colour: a source's dark brows, which its skin
    likeness calls not skin, are taken whole under the target's brow points, not half (the target's brows
    showed through them, and the mask's top edge lay on them). Here both faces' foreheads are bare skin
    (painted in the cheek's colour: the sample's cap comes down close to her brows); under a fringe, the
    brows are hair (the test above)."""
    target, face = portraits["grace_hopper"], with_68("grace_hopper")
    eyes = float(np.linalg.norm(face.kps5[1] - face.kps5[0]))
    cheek = face.kps5[0] + (0.0, 0.5 * eyes)
    skin = np.median(target[int(cheek[1]) - 5:int(cheek[1]) + 5, int(cheek[0]) - 5:int(cheek[0]) + 5], axis=(0, 1))
    forehead, brows = (np.zeros(target.shape[:2], np.uint8) for _ in range(2))
    for brow in (face.landmarks68[17:22], face.landmarks68[22:27]):
        for mask, (top, bottom) in ((forehead, (-0.6, 0.0)), (brows, (0.03, 0.15))):
            band = np.vstack([brow + (0, top * eyes), (brow + (0, bottom * eyes))[::-1]])
            cv2.fillPoly(mask, [np.round(band).astype(np.int32)], 1)
    target = target.copy()
    target[forehead > 0] = skin
    source = target.copy()
    source[brows > 0] = (25, 25, 30)
    swapper = ClassicSwapper()
    result = swapper.swap(target, face, swapper.prepare_source(source, face))
    under = cv2.warpAffine(brows, result.matrix.astype(np.float64), (result.size, result.size)) > 0
    under = cv2.erode(under.astype(np.uint8), np.ones((3, 3), np.uint8)) > 0
    assert under.sum() > 100
    # three quarters of them taken at 0.9 or more (before: half of them at 0.27 or less); the rest lie at the
    # outer ends, in the fade of the mask's outline
    assert np.percentile(result.mask[under], 25) > 0.9
