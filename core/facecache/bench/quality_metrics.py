"""Measures of one swapped face, as face-swap papers and an editor's eye judge it.

Every function takes frame-sized arrays: the original frame (``target``), the swapped frame
(``output``), the composite's alpha of the swapped face (float 0..1, 0 = the original's pixel),
and the source face resampled into the frame where the swapped face lies (``source_in_frame``).

- identity: is the swapped face's embedding closer to the source's than to the original face's?
- colour: pixels that a channel clips at 0 or 255 where neither the source nor the target did;
- sharpness: detail (variance of the Laplacian) of the swapped face against the source's own
  detail at that size, resampled well;
- expression: how far the swapped face's landmarks are from the target's, in eye distances;
- seam: the colour step across the mask's edge against the step across the same ring in the
  target, over the whole edge and per part of it (forehead, temples, jaw);
- the forehead's top edge: the lightness step across the mask's top edge against the original's
  there, where a band shows that the seam's two sides leave between them;
- leftovers: the target's strong edges (glasses' arms, its jaw line) in a ring just outside the
  swapped face, against the same ring in the source's own picture;
- where the face went: key points found again on the swapped face against the target's own.
"""

from __future__ import annotations

import cv2
import numpy as np

from facecache.analysis.align import alignment_matrix, estimate_similarity, transform_points
from facecache.swap.far_side import flip_amount

# The five key points of a face flipped left to right: the eyes and the mouth's corners swap.
_MIRRORED_KPS5 = [1, 0, 2, 4, 3]
# The face's inside for sharpness: fully swapped pixels, this far (px) from the mask's fade.
_INNER_MARGIN_PX = 3
# A target whose ring is flat (one skin tone) still has this much step (Lab units), so a seam
# ratio never divides by almost nothing.
_MIN_RING_STEP = 1.0
# An inner-lip gap above this many eye distances is an open mouth.
OPEN_MOUTH = 0.08
# Parts of a face's outline (``edge_parts``): degrees from straight up, seen from a point this many
# eye distances below the eyes (near the cheekbones), where the forehead ends and the temples end.
PART_ANGLES = (40.0, 100.0)
_PART_CENTRE_DROP = 0.2
# A part's seam is measured when the mask's edge crosses it over at least this many pixels.
_MIN_PART_PIXELS = 8
# The ring just outside the swapped face where leftovers of the target are counted, in eye distances.
LEFTOVER_RING = 0.3
# Canny's thresholds (grey levels) for a strong edge, and the least share of edges a ring counts as.
_CANNY_LOW, _CANNY_HIGH = 60, 120
_MIN_EDGE_SHARE = 0.01


def source_in_frame(source: np.ndarray, source_kps5: np.ndarray, target_kps5: np.ndarray,
                    frame_shape: tuple[int, ...], mirror: bool = False) -> np.ndarray:
    """The source image moved onto the target face (similarity of the five key points), resampled
    the way that keeps the most detail: area-averaged when it shrinks, bicubic when it grows.
    ``mirror``: the source flipped left to right first, as the swap reads a source turned the
    other way from the target (``read_mirrored``)."""
    if mirror:
        source = source[:, ::-1]
        source_kps5 = np.asarray(source_kps5, np.float64)[_MIRRORED_KPS5] * [-1.0, 1.0] + [source.shape[1] - 1.0, 0.0]
    matrix = estimate_similarity(np.asarray(source_kps5, np.float64), np.asarray(target_kps5, np.float64))
    scale = float(np.sqrt(abs(np.linalg.det(matrix[:, :2]))))
    image = source
    if scale < 1.0:
        image = cv2.resize(source, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        shrink = np.array([[scale, 0.0, 0.0], [0.0, scale, 0.0]])
        matrix = matrix @ np.vstack([cv2.invertAffineTransform(shrink), [0.0, 0.0, 1.0]])
    height, width = frame_shape[:2]
    return cv2.warpAffine(image, matrix, (width, height), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_REFLECT)


def read_mirrored(source_kps5: np.ndarray, source68: np.ndarray | None, target_kps5: np.ndarray,
                  target68: np.ndarray | None) -> bool:
    """Whether the classic swap reads the source mirrored onto the target (``swap.far_side``): both
    faces' 68 landmarks laid out in the aligned crop as the swap lays them out (a face the swap
    untangles may decide otherwise; the bench's faces fold nothing there)."""
    if source68 is None or target68 is None:
        return False
    source, target = ((transform_points(points, alignment_matrix(kps5, "arcface_128", 128)))
                      for kps5, points in ((source_kps5, source68), (target_kps5, target68)))
    return flip_amount(source, target) >= 0.5


def newly_clipped(output: np.ndarray, source: np.ndarray, target: np.ndarray,
                  region: np.ndarray) -> tuple[int, int]:
    """(pixels of ``region`` with a channel at 0 or 255 that neither the source nor the target has
    clipped there, pixels of ``region``)."""
    def clipped(image):
        return (image == 0) | (image == 255)

    new = clipped(output) & ~clipped(source) & ~clipped(target)
    return int(np.count_nonzero(np.any(new, axis=2) & region)), int(np.count_nonzero(region))


def inner_region(alpha: np.ndarray) -> np.ndarray:
    """Fully swapped pixels away from the mask's fade (where detail is the swap's own)."""
    full = (alpha >= 0.99).astype(np.uint8)
    kernel = np.ones((2 * _INNER_MARGIN_PX + 1,) * 2, np.uint8)
    return cv2.erode(full, kernel).astype(bool)


def laplacian_variance(image: np.ndarray, region: np.ndarray) -> float:
    grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).astype(np.float32)
    laplacian = cv2.Laplacian(grey, cv2.CV_32F, ksize=3)
    values = laplacian[region]
    return float(values.var()) if values.size else 0.0


def sharpness_ratio(output: np.ndarray, source_in_frame_: np.ndarray, alpha: np.ndarray) -> float | None:
    """Detail inside the swapped face over the source's detail at that size (1 = all kept)."""
    region = inner_region(alpha)
    reference = laplacian_variance(source_in_frame_, region)
    if reference <= 0.0:
        return None
    return laplacian_variance(output, region) / reference


def _edge_steps(image: np.ndarray, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(the colour step in CIE L*a*b* units at each measured pixel, the (H, W) mask of those
    pixels): along the middle of the mask's edge, the local mean colour of the fully swapped side
    against that of the untouched side. The pixels depend on ``alpha`` alone, so two images
    measured with one alpha are measured at the same pixels."""
    inside = alpha >= 0.99
    outside = alpha <= 0.0
    middle = _edge_middle(alpha)
    if not middle.any() or not inside.any() or not outside.any():
        return None
    # Half the fade's width: the distance from the edge's middle to the fully swapped side.
    to_inside = cv2.distanceTransform((~inside).astype(np.uint8), cv2.DIST_L2, 3)
    to_outside = cv2.distanceTransform((~outside).astype(np.uint8), cv2.DIST_L2, 3)
    reach = int(np.ceil(max(np.median(to_inside[middle]), np.median(to_outside[middle])))) + 4
    window = (2 * reach + 1, 2 * reach + 1)
    lab = _lab(image)

    def local_mean(side: np.ndarray):
        weight = cv2.boxFilter(side.astype(np.float32), -1, window, normalize=False)
        total = cv2.boxFilter(lab * side[..., None], -1, window, normalize=False)
        return total / np.maximum(weight, 1.0)[..., None], weight

    inner_mean, inner_weight = local_mean(inside)
    outer_mean, outer_weight = local_mean(outside)
    both = middle & (inner_weight > 0) & (outer_weight > 0)
    if not both.any():
        return None
    return np.linalg.norm(inner_mean[both] - outer_mean[both], axis=1), both


def _lab(image: np.ndarray) -> np.ndarray:
    lab = cv2.cvtColor(image, cv2.COLOR_BGR2LAB).astype(np.float32)
    lab[..., 0] *= 100.0 / 255.0  # 8-bit L* back to 0..100
    lab[..., 1:] -= 128.0
    return lab


def edge_step(image: np.ndarray, alpha: np.ndarray) -> float | None:
    """Mean colour step (CIE L*a*b* units) across the mask's edge (``_edge_steps``)."""
    measured = _edge_steps(image, alpha)
    return None if measured is None else float(measured[0].mean())


def _edge_middle(alpha: np.ndarray) -> np.ndarray:
    """Pixels on the boundary of alpha >= 0.5 (the middle of the fade)."""
    half = (alpha >= 0.5).astype(np.uint8)
    return (half - cv2.erode(half, np.ones((3, 3), np.uint8))).astype(bool)


def seam_ratio(output: np.ndarray, target: np.ndarray, alpha: np.ndarray) -> float | None:
    """The step across the mask's edge in the swapped frame over the step across the same ring of
    the original frame (1 = no seam beyond what the picture has there)."""
    swapped, original = edge_step(output, alpha), edge_step(target, alpha)
    if swapped is None or original is None:
        return None
    return swapped / max(original, _MIN_RING_STEP)


def face_axes(kps5: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """The face's own frame from its five key points: (origin at the eyes' midpoint, unit x axis
    along the eye line, unit y axis towards the mouth, the eye distance)."""
    points = np.asarray(kps5, np.float64).reshape(5, 2)
    across = points[1] - points[0]
    distance = max(float(np.hypot(*across)), 1e-6)
    x_axis = across / distance
    return (points[0] + points[1]) / 2.0, x_axis, np.array([-x_axis[1], x_axis[0]]), distance


PARTS = ("forehead", "temples", "jaw")


def outline_part(points: np.ndarray, kps5: np.ndarray) -> np.ndarray:
    """For each (x, y) point, its part of a face's outline as an index into PARTS, by its direction
    from a point just below the eyes in the face's own frame (so a rolled head's parts turn with
    it): the forehead within PART_ANGLES[0] degrees of straight up, the temples on to
    PART_ANGLES[1] degrees (the sides down to the cheekbones, where glasses' arms sit), the jaw
    below (cheeks, jaw and chin)."""
    origin, x_axis, y_axis, distance = face_axes(kps5)
    offset = np.asarray(points, np.float64).reshape(-1, 2) - origin
    across = offset @ x_axis
    down = offset @ y_axis - _PART_CENTRE_DROP * distance
    from_up = np.degrees(np.arctan2(np.abs(across), -down))
    return np.searchsorted(np.asarray(PART_ANGLES), from_up)  # 0, 1 or 2


def seam_ratios_by_part(output: np.ndarray, target: np.ndarray, alpha: np.ndarray,
                        kps5: np.ndarray) -> dict[str, float]:
    """``seam_ratio`` for each part of the outline (``outline_part``) that the mask's edge crosses:
    the step in the swapped frame over the original's step along the same pixels."""
    return seam_ratios(output, target, alpha, kps5)[1]


def seam_ratios(output: np.ndarray, target: np.ndarray, alpha: np.ndarray,
                kps5: np.ndarray) -> tuple[float | None, dict[str, float]]:
    """(``seam_ratio``, ``seam_ratios_by_part``), the steps across the edge measured once."""
    swapped, original = _edge_steps(output, alpha), _edge_steps(target, alpha)
    if swapped is None or original is None:
        return None, {}
    whole = float(swapped[0].mean()) / max(float(original[0].mean()), _MIN_RING_STEP)
    ys, xs = np.nonzero(swapped[1])  # the measured pixels, in the order of the steps
    parts = outline_part(np.stack([xs, ys], axis=1), kps5)
    ratios = {}
    for number, name in enumerate(PARTS):
        chosen = parts == number
        if int(chosen.sum()) >= _MIN_PART_PIXELS:
            ratios[name] = float(swapped[0][chosen].mean() / max(original[0][chosen].mean(), _MIN_RING_STEP))
    return whole, ratios


def ring_outside(alpha: np.ndarray, width: float) -> np.ndarray:
    """Pixels just outside the swapped face: under half swapped, within ``width`` px of the half."""
    half = (alpha >= 0.5).astype(np.uint8)
    distance = cv2.distanceTransform(1 - half, cv2.DIST_L2, 3)
    return (half == 0) & (distance <= width)


def strong_edges(image: np.ndarray, region: np.ndarray) -> float:
    """The share of ``region``'s pixels on a strong edge (Canny's, on the grey picture)."""
    grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    edges = cv2.Canny(grey, _CANNY_LOW, _CANNY_HIGH, L2gradient=True) > 0
    count = int(np.count_nonzero(region))
    return float(np.count_nonzero(edges & region)) / count if count else 0.0


def leftover_ratio(output: np.ndarray, source_in_frame_: np.ndarray, alpha: np.ndarray,
                   eye_distance_px: float) -> float | None:
    """Strong edges of the target left in a ring just outside the swapped face (its glasses'
    arms, its own jaw line), against the same ring of the source's own picture moved onto the
    face: 1 = no more edges there than the source itself has around its face."""
    ring = ring_outside(alpha, LEFTOVER_RING * eye_distance_px)
    if not ring.any():
        return None
    return strong_edges(output, ring) / max(strong_edges(source_in_frame_, ring), _MIN_EDGE_SHARE)


def point_shift(found: np.ndarray, reference: np.ndarray, eye_distance_px: float) -> float:
    """Mean distance between matching points, in eye distances."""
    found, reference = np.asarray(found, np.float64), np.asarray(reference, np.float64)
    return float(np.linalg.norm(found - reference, axis=1).mean() / max(eye_distance_px, 1e-6))


def eye_distance(landmarks68: np.ndarray) -> float:
    points = np.asarray(landmarks68, np.float64)
    return float(np.linalg.norm(points[42:48].mean(axis=0) - points[36:42].mean(axis=0)))


def landmark_error(found: np.ndarray, reference: np.ndarray) -> float:
    """Mean distance between two sets of 68 landmarks, in the reference's eye distances."""
    return point_shift(found, reference, eye_distance(reference))


def mouth_opening(landmarks68: np.ndarray) -> float:
    """The inner lips' gap (points 62 to 66) in eye distances."""
    points = np.asarray(landmarks68, np.float64)
    return float(np.linalg.norm(points[66] - points[62]) / max(eye_distance(points), 1e-6))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-12))


def identity_margin(swapped: np.ndarray, source: np.ndarray, target: np.ndarray) -> float:
    """cos(swapped, source) - cos(swapped, target): > 0 when the swapped face is nearer the source."""
    return cosine(swapped, source) - cosine(swapped, target)


# The forehead's top edge (``top_edge_step``): columns within this many eye distances of the face's
# middle line, each followed up from below the eyes this far at most, one sample each this much.
TOP_EDGE_HALF_WIDTH = 0.5
_TOP_EDGE_START = -0.3
_TOP_EDGE_REACH = 3.0
_TOP_EDGE_SAMPLE = 0.02
# The step compares the mean lightness over this many eye distances just inside the edge with as
# many just outside; a step smaller than about a just noticeable difference of lightness
# (CIELAB's is about 2.3) counts as that much, so a smooth forehead never divides by almost nothing.
TOP_EDGE_SPAN = 0.06
_MIN_TOP_STEP = 2.3
_MIN_TOP_COLUMNS = 5


def top_edge_lightness(image: np.ndarray, alpha: np.ndarray, kps5: np.ndarray) -> np.ndarray | None:
    """Lightness (L*, 0..100) across the mask's top edge, from TOP_EDGE_SPAN eye distances inside it to
    as far outside, averaged along the edge: each column of the forehead (in the face's own frame, so a
    rolled head's columns turn with it) is followed up from below the eyes to where the mask falls
    below half, and its profile is lined up there. A band along the edge survives the averaging.
    None when fewer than _MIN_TOP_COLUMNS columns reach such an edge."""
    origin, x_axis, y_axis, distance = face_axes(kps5)
    step = _TOP_EDGE_SAMPLE * distance
    across = np.arange(-TOP_EDGE_HALF_WIDTH, TOP_EDGE_HALF_WIDTH + _TOP_EDGE_SAMPLE / 2, _TOP_EDGE_SAMPLE) * distance

    def sample(values: np.ndarray, columns: np.ndarray, heights: np.ndarray) -> np.ndarray:
        """``values`` at (column, height above the eyes) of the face's frame, bilinear; one row per column."""
        points = (origin + columns[:, None, None] * x_axis - heights[..., None] * y_axis).astype(np.float32)
        return cv2.remap(values, points[..., 0], points[..., 1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)

    up = np.arange(_TOP_EDGE_START, _TOP_EDGE_REACH, _TOP_EDGE_SAMPLE) * distance
    inside = sample(alpha.astype(np.float32), across, np.broadcast_to(up, (len(across), len(up)))) >= 0.5
    reached = inside[:, 0] & ~inside.all(axis=1)  # under the mask below the eyes, its edge within reach
    if int(reached.sum()) < _MIN_TOP_COLUMNS:
        return None
    edges = up[np.argmin(inside[reached], axis=1)]  # the first height where the mask falls below half
    span = max(int(round(TOP_EDGE_SPAN / _TOP_EDGE_SAMPLE)), 1)
    heights = edges[:, None] + (np.arange(-span, span) + 0.5) * step
    return sample(_lab(image)[..., 0], across[reached], heights).mean(axis=0)


def top_edge_step(output: np.ndarray, target: np.ndarray, alpha: np.ndarray, kps5: np.ndarray) -> float | None:
    """The lightness step across the mask's top edge (the mean just inside against the mean just
    outside, ``top_edge_lightness``) in the swapped frame over the original's at the same place: a band
    or a step where the swapped forehead ends reads above 1. Where the seam ratio's forehead compares
    the fully swapped side with the untouched side, which lie apart across the mask's fade above the
    brows (the brows' own edge between them), this looks at the edge itself. None when the mask has
    no top edge within reach."""
    swapped, original = top_edge_lightness(output, alpha, kps5), top_edge_lightness(target, alpha, kps5)
    if swapped is None or original is None:
        return None

    def step(profile: np.ndarray) -> float:
        half = len(profile) // 2
        return abs(float(profile[:half].mean() - profile[half:].mean()))

    return step(swapped) / max(step(original), _MIN_TOP_STEP)
