"""Follow faces from frame to frame instead of searching each whole frame for them (`--tracking on`).

MTCNN's cost is its search for small faces over the whole frame: at 1080p its two finest pyramid
levels are three quarters of the work. A face found in one frame is almost where it was in the
next, and a face that was not there can only appear where the picture changed. So after the first
frame, a frame is searched
- for the faces of the frame before: each where the camera's motion took it, in a region twice its
  size, for faces at least half its size;
- for new faces where the picture changed (see `picture_change`), at the detector's own smallest size;
- for faces sliding into view along the edges the camera moves towards, each size in a band as deep
  as a few such faces;
and the whole frame is searched as before when most of the picture changed (a cut, a flash), on a
crash zoom, or at a segment's first frame. A frame with nothing to see (black, a flash of white) has no
face and passes the frame before it on, so a shot that resumes after it is followed on. Faces found by two searches are merged as MTCNN
merges its own.

`follow` is a pure function of the frame and the state it returns for the frame before (that frame's
small picture, the boxes found in it and those of faces lost a few frames ago): the analyzer keeps
the state between the frames of a segment and stores it in each record (`FrameRecord.detected`), so
any run, in any order, computes the same record for a frame.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from facecache.analysis.boxes import overlaps
from facecache.analysis.mtcnn import MtcnnDetector
from facecache.analysis.mtcnn_steps import CELL
from facecache.analysis.picture_change import ChangeSettings, picture_change, small_picture, textured_rects
from facecache.analysis.results import Detection


@dataclass(frozen=True)
class TrackingSettings:
    """Everything that changes what tracking finds (part of the analysis namespace).

    full_above:       changed share of the frame above which the whole frame is searched;
    zoom_still:       how much the camera may zoom between two frames (a share of the picture's size) for
                      them to be followed: a crash zoom is searched whole; a slower one is followed,
                      new ground at its edges searched in bands (a face growing past the detector's
                      smallest size without moving is found only at the next whole search);
    edge_depth:       how deep a band along an edge the camera moves towards is searched for faces coming
                      into view, in faces of the size each pyramid scale finds;
    follow_margin:    a followed face's region: its box widened by this share of its side on each side;
    follow_min_scale: the smallest face searched for there, as a share of the followed face's side;
    merge_overlap:    faces found by two searches that overlap more than this (intersection over the
                      smaller) are one face, the better scored kept;
    memory:           for how many frames a face not found again is still looked for where it was.
    """

    change: ChangeSettings = field(default_factory=ChangeSettings)
    full_above: float = 0.4
    zoom_still: float = 0.02
    edge_depth: float = 2.5
    follow_margin: float = 0.5
    follow_min_scale: float = 0.5
    merge_overlap: float = 0.7
    memory: int = 8

    def describe(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class TrackState:
    """What the next frame is searched from: this frame's small picture and its rows (N, 5): x1, y1,
    x2, y2 and the frames since that face was found (0: found in this frame)."""

    picture: np.ndarray
    rows: np.ndarray

    @classmethod
    def of(cls, frame: np.ndarray, rows) -> "TrackState":
        return cls(small_picture(frame), np.asarray(rows, np.float32).reshape(-1, 5))


def found_rows(detections: list[Detection]) -> np.ndarray:
    """(N, 5) float32 rows of faces found in this frame (age 0)."""
    boxes = np.array([d.box for d in detections], np.float32).reshape(-1, 4)
    return np.concatenate([boxes, np.zeros((len(boxes), 1), np.float32)], axis=1)


def _next_rows(found: list[Detection], followed: np.ndarray, memory: int) -> np.ndarray:
    """The rows after a frame: the faces found, then each face of the frame before (its box moved by
    the camera, `followed` rows) not found again, one frame older, while it is at most `memory` frames
    old. A face the detector misses for a frame (a blink, a hand, a borderline one the whole search
    also finds only now and then) is looked for where it was, but never reported."""
    rows = found_rows(found)
    kept = [row for row in followed if row[4] + 1 <= memory
            and not (len(rows) and overlaps(row[:4], rows[:, :4], "min").max() > 0.5)]
    older = np.array([[*row[:4], row[4] + 1] for row in kept], np.float32).reshape(-1, 5)
    return np.concatenate([rows, older])


@dataclass
class FollowStats:
    """How each frame was searched (for the bench)."""

    whole: int = 0
    followed: int = 0


class TrackingDetector:
    """MTCNN that follows the faces of the frame before (see the module doc); `detect` searches the
    whole frame (stills, source photos, a segment's first frame)."""

    def __init__(self, detector: MtcnnDetector, settings: TrackingSettings = TrackingSettings()):
        self.detector = detector
        self.settings = settings
        self.stats = FollowStats()

    def describe(self) -> dict:
        return {**self.detector.describe(), "tracking": self.settings.describe()}

    def detect(self, frame: np.ndarray) -> list[Detection]:
        return self.detector.detect(frame)

    def resume(self, frame: np.ndarray, rows: np.ndarray, previous: TrackState | None) -> TrackState:
        """The state after `frame`, whose detection is known (its record's `rows`), as `follow` left it:
        a frame with nothing to see passes the picture of the frame before on."""
        if previous is not None and not self._has_something_to_see(frame):
            return TrackState(previous.picture, np.asarray(rows, np.float32).reshape(-1, 5))
        return TrackState.of(frame, rows)

    def _has_something_to_see(self, frame: np.ndarray) -> bool:
        height, width = frame.shape[:2]
        return bool(len(textured_rects(small_picture(frame), (width, height), self.settings.change)[0]))

    def follow(self, frame: np.ndarray, previous: TrackState | None) -> tuple[list[Detection], TrackState]:
        """The faces of `frame`, searched from the state of the frame before (None: the whole frame),
        and the state for the frame after."""
        picture = small_picture(frame)
        height, width = frame.shape[:2]
        textured, share = textured_rects(picture, (width, height), self.settings.change)
        if previous is not None and not len(textured):
            # Nothing to see (a black frame, a flash): no face, and the frame after is compared with the
            # one before this, so the faces there are followed on
            self.stats.followed += 1
            return [], TrackState(previous.picture, _next_rows([], previous.rows, self.settings.memory))
        change = None
        if previous is not None and previous.picture.shape == picture.shape:
            change = picture_change(previous.picture, picture, (width, height), self.settings.change)
        if change is None:
            followed = np.zeros((0, 5), np.float32)
        else:
            followed = np.concatenate([change.moved(previous.rows[:, :4]), previous.rows[:, 4:]], axis=1)
        if (change is None or change.changed_fraction > self.settings.full_above
                or abs(change.zoom - 1.0) > self.settings.zoom_still):
            self.stats.whole += 1
            found = self._whole(frame, textured, share)
        else:
            self.stats.followed += 1
            found = self._search(frame, change, followed[:, :4])
        return found, TrackState(picture, _next_rows(found, followed, self.settings.memory))

    def _whole(self, frame: np.ndarray, rects: np.ndarray, share: float) -> list[Detection]:
        """The whole frame's faces: the detector on the frame, or on its textured parts only (`rects`,
        `share` of the frame) when flat parts (no face can be there) leave most of it out."""
        if share > self.settings.full_above:
            return self.detector.detect(frame)
        scales = self.detector.scales(*frame.shape[:2])
        return _merged([(_CHANGED, d) for region in rects for d in self._in_region(frame, region, scales)],
                       self.settings.merge_overlap)

    def _search(self, frame: np.ndarray, change, moved: np.ndarray) -> list[Detection]:
        """Each search samples the frame at the scales the whole frame's search has
        (`MtcnnDetector.scales`), so a face is refined and measured as that search would do it;
        `moved`: the boxes of the faces followed, where the camera took them."""
        scales = self.detector.scales(*frame.shape[:2])
        found = [(_FOLLOWED, d) for d in self._followed(frame, moved, scales)]
        for region in change.rects_outside(moved):
            found += [(_CHANGED, d) for d in self._in_region(frame, region, scales)]
        bands = [(band, scale) for edge, new in enumerate(change.new_edges) if new
                 for scale in scales for band in [self._edge_band(frame, edge, scale)]]
        found += [(_CHANGED, d) for d in self.detector.detect_in_bands(frame, bands)]
        return _merged(found, self.settings.merge_overlap)

    def _edge_band(self, frame: np.ndarray, edge: int, scale: float) -> tuple[int, int, int, int]:
        """The band along `edge` (left, top, right, bottom) searched at `scale` for faces sliding into
        view: `edge_depth` faces of the size that scale finds deep, so a face that came in over several
        frames is searched whole, while the band costs little (deep only for big faces, which are
        searched at small scales)."""
        height, width = frame.shape[:2]
        depth = int(np.ceil(self.settings.edge_depth * CELL / scale))
        band = ((0, 0, depth, height), (0, 0, width, depth), (width - depth, 0, width, height),
                (0, height - depth, width, height))[edge]
        return _clipped(band, width, height)

    def _followed(self, frame: np.ndarray, boxes: np.ndarray, scales: list[float]) -> list[Detection]:
        """The faces of the frame before, where the camera's motion took them (`boxes`): R-Net and O-Net on
        each box (no P-Net search; one run of each for all the faces), on a region around it, sampled from
        the levels R-Net's and O-Net's crops of a face of its size are taken from in the whole search (see
        `crop_patches`)."""
        regions = [region for box in boxes for region in [self._follow_region(frame, box, scales)] if region]
        parts = [(frame[y1:y2, x1:x2], candidate, levels) for (x1, y1, x2, y2), candidate, levels, _ in regions]
        found = []
        for (region, _, _, side), detections in zip(regions, self.detector.refine_each(parts)):
            if detections:
                found += _moved_by(detections, *region[:2])
                continue
            # Lost where it was expected (it moved or turned more than the box can follow): search its
            # region for faces from half its size up, as the whole frame's search would.
            finest = min((x for x in scales if x >= CELL / (self.settings.follow_min_scale * side)), default=None)
            found += self._in_region(frame, region, [x for x in scales if finest is None or x <= finest])
        return found

    def _follow_region(self, frame: np.ndarray, box: np.ndarray, scales: list[float]):
        """(region, the box in it, the levels R-Net and O-Net sample it from, the face's side) for a
        followed face; None when its region is too small to hold a face."""
        side = max(box[2] - box[0], box[3] - box[1], 1.0)
        pad = self.settings.follow_margin * side
        x1, y1, x2, y2 = _clipped([box[0] - pad, box[1] - pad, box[2] + pad, box[3] + pad], *frame.shape[1::-1])
        if x2 - x1 < CELL or y2 - y1 < CELL:
            return None
        finest = min((x for x in scales if x >= _ONET_SIDE / side), default=None)
        coarsest = min((x for x in scales if x >= _RNET_SIDE / side), default=None)
        levels = [x for x in scales if coarsest is not None and coarsest <= x <= (finest or coarsest)]
        candidate = np.asarray(box, np.float64) - np.array([x1, y1, x1, y1], np.float64)
        return (x1, y1, x2, y2), candidate, levels, side

    def _in_region(self, frame: np.ndarray, region, scales: list[float]) -> list[Detection]:
        x1, y1, x2, y2 = (int(v) for v in region)
        if x2 - x1 < CELL or y2 - y1 < CELL or not scales:
            return []
        return _moved_by(self.detector.detect_at(frame[y1:y2, x1:x2], scales), x1, y1)


_FOLLOWED, _CHANGED = 0, 1  # which search found a face: the followed one wins where both found it
_RNET_SIDE, _ONET_SIDE = 24, 48  # the crops R-Net and O-Net take


def _merged(found: list[tuple[int, Detection]], overlap: float) -> list[Detection]:
    """One detection per face, best score first: where both searches found the same face (overlap above
    `overlap`, intersection over the smaller box), the followed face's result is kept."""
    kept: list[Detection] = []
    for _, detection in sorted(found, key=lambda item: (item[0], -item[1].score)):
        if not kept or overlaps(detection.box, np.array([k.box for k in kept]), "min").max() <= overlap:
            kept.append(detection)
    return sorted(kept, key=lambda d: -d.score)


def _moved_by(detections: list[Detection], x: int, y: int) -> list[Detection]:
    """Detections in a region whose top left is (x, y), in the frame's pixels."""
    offset = np.array([x, y], np.float32)
    return [Detection(d.box + np.tile(offset, 2), d.score, d.kps5 + offset) for d in detections]


def _clipped(box, width: int, height: int) -> tuple[int, int, int, int]:
    x1, y1, x2, y2 = box
    return (max(0, int(np.floor(x1))), max(0, int(np.floor(y1))),
            min(width, int(np.ceil(x2))), min(height, int(np.ceil(y2))))
