"""The skin region of a face, from its landmarks: the outline the classic swap blends inside.

With 68 landmarks the outline is their convex hull (jaw line and eyebrows) and the forehead
above the brows.
With only the five key points it is a polygon laid out in the face's own frame
(eye line as the x axis, the eye-to-mouth distance as the vertical unit), so
it turns and scales with the face: it covers eyebrows, eyes, nose, mouth,
cheeks and chin, and stays clear of hair, ears and background.
"""

from __future__ import annotations

import cv2
import numpy as np

from facecache.swap.masks import polygon_mask, smoothstep, smoothstep_between

# Outline of the face in face units, clockwise from the left temple:
# x in interocular distances from the eye midpoint (negative = image-left),
# y in eye-to-mouth distances (negative = above the eyes).
_OUTLINE_5 = np.array([
    (-0.80, -0.30), (-0.55, -0.55), (0.00, -0.65), (0.55, -0.55), (0.80, -0.30),
    (0.86, 0.30), (0.78, 0.85), (0.52, 1.25), (0.00, 1.45),
    (-0.52, 1.25), (-0.78, 0.85), (-0.86, 0.30),
], dtype=np.float64)

# Points sampled on the smooth closed curve through the outline's corners.
_CURVE_POINTS = 8

# How far a sideways nose (head turned) widens one side and narrows the other.
_YAW_GAIN = 1.0

# The forehead above the brows belongs to the swapped face too: recognizers read identity from the
# whole face (FaceNet's crop is the face box grown by a fifth). Measured with `facecache bench
# quality` (17 faces): lifting the hull 0.5 / 0.8 / 1.1 brow heights gave 65 / 88 / 94 % of faces
# closer to the source and 0.048 / 0.053 / 0.058 expression error (jaw-to-brows only: 35 %, 0.044);
# straight up instead of out from the eyes (narrower temples) only 57-71 %. Above the brows only
# the source's skin is taken (``skin_likeness``), not its hair, cap or background.
FOREHEAD_LIFT = 0.8
# Beyond the landmarks' hull the swapped face also covers the temples (up to the brows' height, as
# wide as the jaw's top: where glasses' arms sit) and a margin this many eye distances below the
# jaw line, so the mask's fade lies outside the target's own jaw instead of leaving it as a ring.
JAW_MARGIN = 0.2
# How many of the skin's own spreads (L*, a*, b*) a pixel may be from its mean and still count as skin.
_SKIN_SPREADS = np.array([3.0, 2.5, 2.5], np.float32)
# Light on skin (a lit forehead, a shine) mixes the skin's colour with the light's white: lighter and paler,
# along the line from the skin's mean towards white. With ``lit``, a pixel lighter than the mean is measured
# from that line, up to this share of the way to white (further, it is lighter than any lit skin: a white wall,
# pale blonde hair). Without it, a forehead lit paler than the cheeks read half skin, the mask took it half,
# and the swapped forehead ended in a band at the brows (docs/quality.md).
_LIT_SKIN = 0.4
_WHITE = np.array([255.0, 128.0, 128.0], np.float32)  # 8-bit L*a*b*
# The brows belong to the swapped face (``brow_band``): iBUG's five points a brow run along its upper edge, so
# the band reaches this many eye distances above them and below them (a brow is 0.1-0.2 deep), softened by
# the third. Beyond the landmarks the mask takes only what both faces show as skin; without the band it took
# the source's dark brows half, below the hull's fade, and a viewer saw the brows of both faces, the mask's
# top edge on them (docs/quality.md).
_BROW_BAND = (0.1, 0.25, 0.05)
# ...where the face shows skin this many eye distances above (``brows_under_skin``; wholly from the second
# likeness, not at all up to the first): brows under a fringe are hair.
_ABOVE_BROWS = 0.35
_SKIN_ABOVE = (0.4, 0.8)
# The skin patch (``skin_patch``): each cheek from the jaw's top to the mouth's corner, the nostril
# and the eye's lower lid; the nose from its bridge to its tip (iBUG 68 numbers). The eyes are cut
# out grown by this factor about their middle.
_SKIN_PATCHES = ((1, 2, 3, 4, 48, 31, 39, 40, 41, 36), (15, 14, 13, 12, 54, 35, 42, 47, 46, 45),
                 (27, 31, 32, 33, 34, 35))
_EYE_GROWTH = 1.6
# Glasses' rims and arms (``thin_dark_lines``): at the eyes' and the brows' height, what is darker
# than its surroundings across less than this share of the crop's side is a line (a rim or an arm
# is 1-3 % of it, a brow 3-5 %, a fringe wider)...
_LINE_WIDTH = 0.04
# ...taken from this many 8-bit L* levels darker than its surroundings, wholly from the second (a
# glasses' rim is 100-150 darker than the skin beside it; at 10-25 the brows and strands of the
# group photo's hair came in, and their seams rose by 0.1-0.3)...
_LINE_DARKER = (30.0, 70.0)
# ...between this many eye distances above the brows' top and below the eyes' bottom...
_LINE_BAND = (0.35, 0.15)
# ...grown and softened by this share of the crop's side (so the mask rises over a line smoothly),
# and taken as this much skin at most: a line's pixels stay in the mask's fade (at 1, a glasses' arm
# running into the target's hair became a fully swapped strip beside untouched hair, which the
# bench's seam measure read as a step: a temples seam 0.87 -> 1.58, the picture alike to the eye).
_LINE_SPREAD = 0.02
_LINE_SKIN = 0.95
# The lines are found on a copy of the band at most this many pixels across.
_LINE_SIDE = 192
# The source beyond its landmarks without its hair's edge (``without_fringe``): in the crop's rows down to
# the nose's tip (the arcface template's eyes lie at 0.40 of its side, its nose tip at 0.64), what the firm
# skin likeness, eroded, calls skin from the first on, wholly from the second, is kept (before the erosion a
# fringe's dark lower edge reads 0.4-0.5 there, its lit skin 0.9 and more); the rest is the skin around,
# averaged this share of the crop's side far. Below the eyes it takes the sideburns: stopped at the eyes, a
# turned target half took the source's grey sideburn below them, a block with a straight top (classic 12).
_FILL_ROWS = 0.65
_SURE_SKIN = (0.5, 0.9)
# The likeness is eroded in 8-bit steps (a third of float32's time) and read through this table.
_SURE_SKIN_TABLE = smoothstep_between(np.arange(256, dtype=np.float32) / 255.0, _SURE_SKIN).astype(np.float32)
_SURE_SKIN_TABLE.setflags(write=False)
_FILL_SPREAD = 0.03
_FILL_PRIOR = 1e-3


def outline_from_kps5(kps5: np.ndarray) -> np.ndarray:
    """(96, 2) outline of the face's skin region, in the coordinates of ``kps5``."""
    k = np.asarray(kps5, dtype=np.float64).reshape(5, 2)
    left_eye, right_eye, nose, left_mouth, right_mouth = k
    eyes = (left_eye + right_eye) / 2.0
    mouth = (left_mouth + right_mouth) / 2.0
    across = right_eye - left_eye
    interocular = float(np.hypot(*across))
    if interocular < 1e-6:
        raise ValueError("the face's eye points coincide; its key points are degenerate, re-run the analysis")
    x_axis = across / interocular
    y_axis = np.array([-x_axis[1], x_axis[0]])  # x turned 90 degrees towards the mouth (image y points down)
    eye_to_mouth = float(np.dot(mouth - eyes, y_axis))
    if eye_to_mouth < 0.2 * interocular:
        eye_to_mouth = 1.15 * interocular  # mouth not below the eyes: fall back to frontal proportions
    # A turned head shows the nose off the eye midpoint; the far side of the face narrows.
    nose_offset = float(np.clip(np.dot(nose - eyes, x_axis) / interocular, -0.45, 0.45))
    xs = _OUTLINE_5[:, 0].copy()
    xs[xs < 0] *= 1.0 + _YAW_GAIN * nose_offset  # nose towards image-right: the left side shows more
    xs[xs > 0] *= 1.0 - _YAW_GAIN * nose_offset
    xs = xs * interocular
    ys = _OUTLINE_5[:, 1] * eye_to_mouth
    corners = np.stack([xs, ys], axis=1)
    curve = _closed_catmull_rom(corners, _CURVE_POINTS)
    return eyes + curve[:, :1] * x_axis + curve[:, 1:] * y_axis


def _closed_catmull_rom(points: np.ndarray, per_segment: int) -> np.ndarray:
    """Points on the closed uniform Catmull-Rom curve through ``points`` (rounds the outline's corners)."""
    p0 = np.roll(points, 1, axis=0)
    p1 = points
    p2 = np.roll(points, -1, axis=0)
    p3 = np.roll(points, -2, axis=0)
    t = (np.arange(per_segment, dtype=np.float64) / per_segment)[None, :, None]
    p0, p1, p2, p3 = (p[:, None, :] for p in (p0, p1, p2, p3))
    curve = 0.5 * ((2.0 * p1) + (p2 - p0) * t + (2.0 * p0 - 5.0 * p1 + 4.0 * p2 - p3) * t ** 2
                   + (3.0 * p1 - p0 - 3.0 * p2 + p3) * t ** 3)
    return curve.reshape(-1, 2)


def with_forehead(landmarks68: np.ndarray) -> np.ndarray:
    """(78, 2): the 68 landmarks and, above each of the ten brow points, a forehead point
    FOREHEAD_LIFT times the brow point's distance from the eyes' midpoint further out."""
    points = np.asarray(landmarks68, dtype=np.float64).reshape(68, 2)
    eyes = (points[36:42].mean(axis=0) + points[42:48].mean(axis=0)) / 2.0
    brows = points[17:27]
    return np.vstack([points, brows + FOREHEAD_LIFT * (brows - eyes)])


def beyond_landmarks(outline78: np.ndarray) -> np.ndarray:
    """The outline (the 68 landmarks and forehead points of ``with_forehead``) grown where the
    landmarks stop short of the face: a temple corner on each side (the jaw's top point raised to
    its brow's height) and the jaw line JAW_MARGIN eye distances further out."""
    points = np.asarray(outline78, dtype=np.float64).reshape(78, 2)
    distance, down = _eye_line(points)
    temples = [points[jaw] + float(np.dot(points[brow] - points[jaw], down)) * down
               for jaw, brow in ((0, 17), (16, 26))]
    centre = points[27:36].mean(axis=0)  # the nose: the jaw grows away from it
    jaw = points[1:16]
    outward = jaw - centre
    outward /= np.maximum(np.linalg.norm(outward, axis=1, keepdims=True), 1e-6)
    return np.vstack([points, temples, jaw + JAW_MARGIN * distance * outward])


def skin_patch(landmarks68: np.ndarray, size: int) -> np.ndarray:
    """(size, size) float32 mask of the cheeks and the nose (``landmarks68`` in crop pixels): skin
    on every face, with no eye, brow, lip or hair in it, so its colours are the skin's own (the
    hull of the landmarks holds brows, eyes and lips, which widen the skin's spread until a
    fringe of brown hair passes for skin)."""
    points = np.asarray(landmarks68, dtype=np.float64).reshape(68, 2)
    patch = np.zeros((int(size), int(size)), np.uint8)
    polygons = [points[list(part)] for part in _SKIN_PATCHES]
    cv2.fillPoly(patch, [np.round(p * 4).astype(np.int32) for p in polygons], 1, lineType=cv2.LINE_8, shift=2)
    for eye in (points[36:42], points[42:48]):  # not the eyes, whose lower lids bound the cheeks
        grown = eye.mean(axis=0) + _EYE_GROWTH * (eye - eye.mean(axis=0))
        cv2.fillPoly(patch, [np.round(grown * 4).astype(np.int32)], 0, lineType=cv2.LINE_8, shift=2)
    return patch.astype(np.float32)


def skin_likeness(image: np.ndarray, skin: np.ndarray, firm: bool = False, lit: bool = False) -> np.ndarray:
    """(H, W) float32 0..1: how much each pixel of ``image`` (BGR) looks like the skin that
    ``skin`` (float mask, e.g. ``skin_patch``) marks: its chroma and lightness within a few
    spreads of the skin's (hair, a cap or the background beside a forehead fall to 0), softened by
    a blur. Soft, it fades with the distance (a bell curve); ``firm``, a pixel within one such
    distance is skin and one beyond twice it is not (a smoothstep between): what is half like the
    skin is not taken half. ``lit``: skin in brighter light counts as skin (``_LIT_SKIN``)."""
    lab8 = cv2.cvtColor(image, cv2.COLOR_BGR2LAB)
    inside = (skin > 0.5).astype(np.uint8)
    if cv2.countNonZero(inside) < 16:
        return np.ones(image.shape[:2], np.float32)
    mean, std = (values.ravel().astype(np.float32) for values in cv2.meanStdDev(lab8, mask=inside))
    spread = np.maximum(std, 1.0) * _SKIN_SPREADS
    # (lab - mean) / spread in one pass of OpenCV's: numpy's broadcast made three full-size temporaries.
    scaled = cv2.transform(lab8.astype(np.float32), np.hstack([np.diag(1.0 / spread), (-mean / spread)[:, None]]))
    if lit:  # the skin's colour where each pixel's light would put it
        towards_white = np.clip((lab8[..., 0] - mean[0]) / max(255.0 - float(mean[0]), 1.0), 0.0, _LIT_SKIN)
        scaled -= towards_white[..., None] * ((_WHITE - mean) / spread)
    np.square(scaled, out=scaled)
    distance = scaled[..., 0] + scaled[..., 1] + scaled[..., 2]  # numpy's sum over a 3-long axis is slow
    if firm:
        likeness = 1.0 - smoothstep(np.sqrt(distance) - 1.0)
    else:
        likeness = np.exp(np.float32(-0.5) * distance)
    blurred = cv2.GaussianBlur(likeness.astype(np.float32, copy=False), (0, 0), _likeness_blur(image.shape[0]))
    return np.clip(blurred, 0.0, 1.0, out=blurred)  # a blur of ones may round a hair above 1


def _likeness_blur(side: int) -> float:
    """The blur (sigma, pixels) that softens ``skin_likeness`` on a picture ``side`` pixels high."""
    return max(1.0, side / 96.0)


def _eye_line(points68: np.ndarray) -> tuple[float, np.ndarray]:
    """(the eye distance, the unit vector from the eye line towards the mouth) of 68 landmarks: the face's own
    frame, which turns with a rolled head."""
    distance = eye_distance(points68)
    across = (points68[42:48].mean(axis=0) - points68[36:42].mean(axis=0)) / distance
    return distance, np.array([-across[1], across[0]])


def brow_band(landmarks68: np.ndarray, size: int) -> np.ndarray:
    """(size, size) float32 0..1: the brows of the face whose 68 landmarks (crop pixels) are given, from
    _BROW_BAND[0] eye distances above the brow points to _BROW_BAND[1] below them (in the face's own frame,
    so a rolled head's band turns with it), softened."""
    points = np.asarray(landmarks68, np.float64).reshape(68, 2)
    distance, down = _eye_line(points)
    above, below, softness = (part * distance for part in _BROW_BAND)
    polygons = [np.vstack([brow - above * down, (brow + below * down)[::-1]])
                for brow in (points[17:22], points[22:27])]
    band = np.zeros((size, size), np.uint8)
    cv2.fillPoly(band, [np.round(p * 4).astype(np.int32) for p in polygons], 1, lineType=cv2.LINE_8, shift=2)
    out = np.zeros((size, size), np.float32)
    x, y, width, height = cv2.boundingRect(band)
    if width == 0:
        return out
    # Only the band's box and the blur's reach around it are blurred: on a 512-pixel crop the whole took 2 ms.
    reach = int(np.ceil(3.0 * softness)) + 1
    box = (slice(max(0, y - reach), min(size, y + height + reach)),
           slice(max(0, x - reach), min(size, x + width + reach)))
    blurred = cv2.GaussianBlur(band[box].astype(np.float32), (0, 0), max(softness, 0.5),
                               borderType=cv2.BORDER_CONSTANT)
    out[box] = np.minimum(blurred, 1.0)
    return out


def brows_under_skin(band: np.ndarray, skin: np.ndarray, landmarks68: np.ndarray) -> np.ndarray:
    """``band`` (``brow_band``) where ``skin`` (a skin likeness of the same crop) holds _ABOVE_BROWS eye
    distances above each pixel, in the face's own frame: a fringe down over the brows stays hair."""
    distance, down = _eye_line(np.asarray(landmarks68, np.float64).reshape(68, 2))
    up = -_ABOVE_BROWS * distance * down
    out = np.zeros_like(band)
    rows, columns = np.nonzero(band.any(axis=1))[0], np.nonzero(band.any(axis=0))[0]
    if len(rows) == 0:
        return out
    # Only the band's box is read: each of its pixels reads the skin ``up`` from it.
    y0, y1, x0, x1 = rows[0], rows[-1] + 1, columns[0], columns[-1] + 1
    shift = np.array([[1.0, 0.0, x0 + up[0]], [0.0, 1.0, y0 + up[1]]])
    above = cv2.warpAffine(skin, shift, (int(x1 - x0), int(y1 - y0)), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                           borderMode=cv2.BORDER_CONSTANT, borderValue=0.0)
    out[y0:y1, x0:x1] = band[y0:y1, x0:x1] * smoothstep_between(above, _SKIN_ABOVE)
    return out


def eye_distance(points68: np.ndarray) -> float:
    """The distance between the eyes' middles of 68 landmarks (at least 1e-6: a unit for ratios)."""
    points = np.asarray(points68, np.float64)
    return max(float(np.linalg.norm(points[42:48].mean(axis=0) - points[36:42].mean(axis=0))), 1e-6)


def thin_dark_lines(image: np.ndarray, landmarks68: np.ndarray) -> np.ndarray:
    """(size, size) float32 0..1: the thin dark lines of the square crop ``image`` (BGR;
    ``landmarks68`` in its pixels) in the band from above the brows to below the eyes, where
    glasses' rims and arms sit: what is much darker than its surroundings across less than
    _LINE_WIDTH of the side (a morphological black-hat of L*), grown and softened. The swap takes
    the target's lines in with its skin, so a rim or an arm where the source shows skin is not left
    half blended at the mask's edge; a fringe or a lock of hair, wider, stays out."""
    size = image.shape[0]
    points = np.asarray(landmarks68, np.float64).reshape(68, 2)
    eyes = eye_distance(points)
    top = int(np.clip(np.floor(points[17:27, 1].min() - _LINE_BAND[0] * eyes), 0, size))
    bottom = int(np.clip(np.ceil(points[36:48, 1].max() + _LINE_BAND[1] * eyes), 0, size))
    lines = np.zeros((size, size), np.float32)
    if bottom <= top:
        return lines
    # Worked out on the band and a margin (the black-hat reads a line's surroundings; the growth
    # and the blur carry it on a little), at most _LINE_SIDE pixels across (a line there is still
    # two or more pixels wide; on a 512-pixel crop the full size took 8 ms).
    scale = min(1.0, _LINE_SIDE / size)
    width = max(3, int(round(_LINE_WIDTH * size * scale)) | 1)
    spread = max(1, int(round(_LINE_SPREAD * size * scale)))
    margin = int(np.ceil((width + 4 * spread) / scale))
    y0, y1 = max(0, top - margin), min(size, bottom + margin)
    band_image = image[y0:y1]
    if scale < 1.0:
        band_image = cv2.resize(band_image, (max(1, round(size * scale)), max(1, round((y1 - y0) * scale))),
                                interpolation=cv2.INTER_AREA)
    lightness = cv2.cvtColor(band_image, cv2.COLOR_BGR2LAB)[..., 0]
    element = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (width, width))
    darker = cv2.morphologyEx(lightness, cv2.MORPH_BLACKHAT, element).astype(np.float32)
    band = smoothstep_between(darker, _LINE_DARKER)
    band[:int(round((top - y0) * scale))] = 0.0
    band[int(round((bottom - y0) * scale)):] = 0.0
    band = cv2.dilate(band, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * spread + 1, 2 * spread + 1)))
    band = cv2.GaussianBlur(band, (0, 0), spread) * np.float32(_LINE_SKIN)
    if scale < 1.0:
        band = cv2.resize(band, (size, y1 - y0), interpolation=cv2.INTER_LINEAR)
    lines[y0:y1] = band
    return lines


def without_fringe(crop: np.ndarray, skin: np.ndarray, hull: np.ndarray) -> np.ndarray:
    """The source's forehead and temples in ``crop`` (BGR, square; its rows down to _FILL_ROWS) with what
    is not surely skin there (a fringe's lower edge, its shadow, a sideburn: ``skin``, the firm
    ``skin_likeness``, below _SURE_SKIN[1]) replaced by the skin around it, smoothly; inside ``hull`` (the
    landmarks' hull, 0 or 1) nothing changes. A new image, or ``crop`` itself when all of it is skin. The
    mask's cut through the source's skin is soft: half taken, a fringe's dark edge drew a line along the
    swapped forehead's top, a sideburn a grey block beside the eye (docs/quality.md)."""
    size = crop.shape[0]
    rows = min(size, int(np.ceil(_FILL_ROWS * size)))
    # the likeness is blurred: a thin dark line beside skin reads half skin; a pixel is as sure as the least
    # sure one within two of the blur's widths
    reach = 2 * int(np.ceil(2.0 * _likeness_blur(size))) + 1
    sure = cv2.erode(cv2.convertScaleAbs(skin[:rows], alpha=255.0),
                     cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (reach, reach)))
    skin_for_sure = cv2.LUT(sure, _SURE_SKIN_TABLE)
    keep = np.maximum(skin_for_sure, hull[:rows])
    if float(keep.min()) >= 1.0:
        return crop
    # The skin around (a normalised blur of what is surely skin, not the brows in the hull), averaged on a
    # copy a quarter the size: it is smooth.
    small = (max(4, size // 4), max(1, rows // 4))
    weights = cv2.resize(skin_for_sure, small, interpolation=cv2.INTER_AREA)
    pixels = cv2.resize(crop[:rows], small, interpolation=cv2.INTER_AREA).astype(np.float32) * weights[..., None]
    sigma = max(0.5, _FILL_SPREAD * small[0])
    # where no skin is near, the forehead's mean skin: a weight of _FILL_PRIOR of it in every pixel
    prior = pixels.reshape(-1, 3).sum(axis=0) / max(float(weights.sum()), 1e-6) * _FILL_PRIOR
    fill = ((cv2.GaussianBlur(pixels, (0, 0), sigma) + prior)
            / (cv2.GaussianBlur(weights, (0, 0), sigma) + _FILL_PRIOR)[..., None])
    fill = cv2.convertScaleAbs(cv2.resize(fill, (size, rows), interpolation=cv2.INTER_LINEAR))
    out = crop.copy()
    out[:rows] = cv2.blendLinear(crop[:rows], fill, keep, 1.0 - keep)
    return out


def outline(kps5: np.ndarray, landmarks68: np.ndarray | None = None) -> np.ndarray:
    """The outline points of a face: its 68 landmarks and forehead points (the hull reaches from
    the jaw to above the brows) when given, else the 5-point outline."""
    if landmarks68 is not None:
        points = np.asarray(landmarks68, dtype=np.float64).reshape(-1, 2)
        if points.shape == (68, 2) and np.all(np.isfinite(points)):
            return with_forehead(points)
    return outline_from_kps5(kps5)


def face_mask(points: np.ndarray, size: int, feather: float) -> np.ndarray:
    """A (size, size) mask of the hull of outline ``points`` (crop pixels), faded inwards over ``feather`` px."""
    return polygon_mask(points, size, feather)
