"""Where a frame's picture changed since the frame before, once the camera's own motion is taken out.

Both frames are shrunk to a small grey picture (`SMALL_WIDTH` pixels wide) and blurred a little. The
camera's motion between them (a pan, a zoom, a handheld shake) is a similarity transform fitted to
corners followed from one picture to the next (pyramidal Lucas-Kanade, then RANSAC); the earlier
picture is moved by it, and the pixels that still differ are what changed: something moved in the
scene, something came into view, the light changed, or the shot cut. Cells of 8 x 8 small pixels
with enough changed pixels are grouped into rectangles, which is where a new face can have appeared.
Everything here is a pure function of the two pictures (nothing is remembered between calls).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

SMALL_WIDTH = 320
_IDENTITY = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], np.float32)
_OUTSIDE = -1000.0  # what the moved picture holds where the camera brought new ground into view
_EDGE_CELLS = 3  # how many cells from an edge a face coming in there shows texture


@dataclass(frozen=True)
class ChangeSettings:
    """Everything that changes which rectangles count as changed (part of the tracker's settings).

    threshold:     grey levels (0-255) by which a blurred small pixel must differ to count as changed;
    cell:          side of a cell, in small pixels;
    cell_fraction: share of a cell's pixels that must have changed for the cell to count;
    margin:        how far a changed rectangle is widened on each side: one cell and this share of its
                   shorter side (a face whose edges moved is searched whole);
    misfit:        how far (small pixels) the fitted motion may be off: a pixel's difference must exceed
                   `threshold` plus its steepness times this;
    flat_below:    a cell whose small pixels spread less than this (standard deviation, grey levels)
                   is flat: no face is searched for in it.
    """

    threshold: float = 16.0
    cell: int = 8
    cell_fraction: float = 0.15
    margin: float = 0.25
    flat_below: float = 2.0
    misfit: float = 1.0


@dataclass(frozen=True)
class PictureChange:
    """What changed from one frame to the next, in the later frame's pixels.

    motion: (2, 3) float32 similarity transform taking the earlier frame's pixels to the later one's;
    rects:  (N, 4) int x1, y1, x2, y2 of the changed regions (widened, clipped to the frame);
    changed_fraction: the share of the frame's area those rectangles cover.
    """

    motion: np.ndarray
    rects: np.ndarray
    changed_fraction: float
    zoom: float              # the camera's zoom from the earlier frame to the later (1: none)
    new_edges: tuple[bool, bool, bool, bool]  # left, top, right, bottom: where the camera brought new ground
    cells: np.ndarray        # (rows, cols) bool: the changed cells
    cell_px: float           # a cell's side in frame pixels
    margin: float            # ChangeSettings.margin
    frame_size: tuple[int, int]

    def moved(self, boxes: np.ndarray) -> np.ndarray:
        """Boxes of the earlier frame where the camera's motion takes them (their corners moved)."""
        boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
        corners = boxes.reshape(-1, 2, 2) @ self.motion[:, :2].T.astype(np.float64) + self.motion[:, 2]
        return corners.reshape(-1, 4)


    def rects_outside(self, boxes: np.ndarray) -> np.ndarray:
        """The changed regions, recomputed without the changed cells inside `boxes` (the faces being
        followed, whose own movement is no sign of a new face), widened and merged as before."""
        if not len(boxes):
            return self.rects
        cells = self.cells.copy()
        rows, cols = cells.shape
        for x1, y1, x2, y2 in np.asarray(boxes, np.float64).reshape(-1, 4) / self.cell_px:
            cells[max(0, int(np.ceil(y1))):max(0, int(y2)), max(0, int(np.ceil(x1))):max(0, int(x2))] = False
        return _cell_rects(cells, self.cell_px, self.margin, *self.frame_size)


def small_picture(frame: np.ndarray) -> np.ndarray:
    """The blurred small grey picture of a BGR uint8 frame (float32, `SMALL_WIDTH` wide or the frame's
    width when narrower), which `picture_change` compares."""
    height, width = frame.shape[:2]
    small_width = min(SMALL_WIDTH, width)
    size = (small_width, max(1, round(height * small_width / width)))
    small = cv2.resize(frame, size, interpolation=cv2.INTER_AREA) if size != (width, height) else frame
    grey = cv2.cvtColor(small, cv2.COLOR_BGR2GRAY)
    return cv2.GaussianBlur(grey, (5, 5), 1.0).astype(np.float32)


def picture_change(earlier: np.ndarray, later: np.ndarray, frame_size: tuple[int, int],
                   settings: ChangeSettings = ChangeSettings()) -> PictureChange:
    """What changed between two `small_picture`s of frames of `frame_size` (width, height)."""
    width, height = frame_size
    scale = width / later.shape[1]
    small_motion = _camera_motion(earlier, later)
    moved = cv2.warpAffine(earlier, small_motion, later.shape[::-1], flags=cv2.INTER_LINEAR,
                           borderMode=cv2.BORDER_CONSTANT, borderValue=_OUTSIDE)
    # A motion fitted to within a small pixel still leaves differences along every edge, as large as the
    # edge is steep: a pixel counts as changed by more than its own steepness can explain.
    # (The lesser of the two pictures' steepness: where something new covers a flat part, one is flat.)
    steepness = np.minimum(_steepness(later), _steepness(moved))
    # Ground the camera brought into view is left to the tracker's edge bands: as a changed region, the
    # thin strips along two edges would make one rectangle as big as the frame.
    changed = (np.abs(later - moved) > settings.threshold + settings.misfit * steepness) & (moved > _OUTSIDE / 2)
    cells = _changed_cells(changed, settings)
    rects = _cell_rects(cells, settings.cell * scale, settings.margin, width, height)
    motion = small_motion.copy()
    motion[:, 2] *= scale  # the same transform in frame pixels
    zoom = float(np.sqrt(abs(np.linalg.det(motion[:, :2].astype(np.float64)))))
    # where the earlier picture's edges went: a gap of half a small pixel or more is new ground
    small_h, small_w = later.shape
    corners = np.array([[0, 0], [small_w, 0], [0, small_h], [small_w, small_h]], np.float64)
    left_top, right_top, left_bottom, right_bottom = corners @ small_motion[:, :2].T.astype(np.float64) + small_motion[:, 2]
    opened = (min(left_top[0], left_bottom[0]) > 0.5, min(left_top[1], right_top[1]) > 0.5,
              max(right_top[0], right_bottom[0]) < small_w - 0.5, max(left_bottom[1], right_bottom[1]) < small_h - 0.5)
    # ... where a face can come in: the cells along that edge are not all flat (a letterbox bar, a wall)
    textured = _textured_cells(later, settings)
    near = _EDGE_CELLS
    edge_texture = (textured[:, :near].any(), textured[:near, :].any(), textured[:, -near:].any(),
                    textured[-near:, :].any())
    new_edges = tuple(bool(a and b) for a, b in zip(opened, edge_texture))
    return PictureChange(motion, rects, _area(rects) / float(width * height), zoom, new_edges, cells,
                         settings.cell * scale, settings.margin, (width, height))


def textured_rects(picture: np.ndarray, frame_size: tuple[int, int],
                   settings: ChangeSettings = ChangeSettings()) -> tuple[np.ndarray, float]:
    """(rects, covered share) of the parts of a `small_picture` with any texture: a flat part (a black
    frame, the bars of a letterboxed film, a clear sky) holds no face, so a whole-frame search skips it."""
    width, height = frame_size
    rects = _cell_rects(_textured_cells(picture, settings), settings.cell * width / picture.shape[1],
                        settings.margin, width, height)
    return rects, _area(rects) / float(width * height)


def _textured_cells(picture: np.ndarray, settings: ChangeSettings) -> np.ndarray:
    """(rows, cols) bool: the cells of a small picture whose pixels spread at least `flat_below`."""
    cell = settings.cell
    rows, cols = -(-picture.shape[0] // cell), -(-picture.shape[1] // cell)
    padded = np.zeros((rows * cell, cols * cell), np.float32)
    padded[:picture.shape[0], :picture.shape[1]] = picture
    padded[picture.shape[0]:, :] = padded[picture.shape[0] - 1:picture.shape[0], :]  # no edge at the padding
    padded[:, picture.shape[1]:] = padded[:, picture.shape[1] - 1:picture.shape[1]]
    return padded.reshape(rows, cell, cols, cell).std(axis=(1, 3)) >= settings.flat_below


def _steepness(picture: np.ndarray) -> np.ndarray:
    """|d/dx| + |d/dy| in grey levels a pixel (Sobel's 3 x 3 kernels weigh a slope 8 times)."""
    return (np.abs(cv2.Sobel(picture, cv2.CV_32F, 1, 0, ksize=3))
            + np.abs(cv2.Sobel(picture, cv2.CV_32F, 0, 1, ksize=3))) / 8.0


def _camera_motion(earlier: np.ndarray, later: np.ndarray) -> np.ndarray:
    """Similarity transform (2, 3) from `earlier` to `later`; the identity when too little texture is
    followed to tell (a flat picture, a cut)."""
    before, after = earlier.astype(np.uint8), later.astype(np.uint8)
    corners = cv2.goodFeaturesToTrack(before, maxCorners=300, qualityLevel=0.01, minDistance=6)
    if corners is None or len(corners) < 8:
        return _IDENTITY.copy()
    followed, status, _ = cv2.calcOpticalFlowPyrLK(before, after, corners, None, winSize=(15, 15), maxLevel=3)
    found = status.ravel() == 1
    if found.sum() < 8:
        return _IDENTITY.copy()
    motion, inliers = cv2.estimateAffinePartial2D(corners[found], followed[found], method=cv2.RANSAC,
                                                  ransacReprojThreshold=1.0)
    if motion is None or inliers is None or inliers.sum() < 0.5 * found.sum():
        return _IDENTITY.copy()  # no one motion for most of the picture: leave it to the difference
    return motion.astype(np.float32)


def _changed_cells(changed: np.ndarray, settings: ChangeSettings) -> np.ndarray:
    height, width = changed.shape
    cell = settings.cell
    rows, cols = -(-height // cell), -(-width // cell)
    padded = np.zeros((rows * cell, cols * cell), np.float32)
    padded[:height, :width] = changed
    share = padded.reshape(rows, cell, cols, cell).mean(axis=(1, 3))
    return share >= settings.cell_fraction


def _cell_rects(cells: np.ndarray, cell_px: float, margin: float, width: int, height: int) -> np.ndarray:
    count, _, stats, _ = cv2.connectedComponentsWithStats(cells.astype(np.uint8), connectivity=8)
    rects = []
    for x, y, w, h, _ in stats[1:count]:
        x1, y1, x2, y2 = x * cell_px, y * cell_px, (x + w) * cell_px, (y + h) * cell_px
        pad = margin * min(x2 - x1, y2 - y1) + cell_px
        rects.append([max(0, int(x1 - pad)), max(0, int(y1 - pad)),
                      min(width, int(np.ceil(x2 + pad))), min(height, int(np.ceil(y2 + pad)))])
    return merged_rects(np.array(rects, np.int64).reshape(-1, 4))


def merged_rects(rects: np.ndarray) -> np.ndarray:
    """Rectangles with every overlapping pair replaced by their bounding rectangle, until none overlap
    (a face across two changed regions is searched in one)."""
    rects = [list(r) for r in np.asarray(rects, np.int64).reshape(-1, 4)]
    merged = True
    while merged:
        merged = False
        for i in range(len(rects)):
            for j in range(i + 1, len(rects)):
                a, b = rects[i], rects[j]
                if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]:
                    rects[i] = [min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])]
                    del rects[j]
                    merged = True
                    break
            if merged:
                break
    return np.array(sorted(rects), np.int64).reshape(-1, 4)


def _area(rects: np.ndarray) -> float:
    if not len(rects):
        return 0.0
    return float(sum((x2 - x1) * (y2 - y1) for x1, y1, x2, y2 in rects))  # merged: they do not overlap
