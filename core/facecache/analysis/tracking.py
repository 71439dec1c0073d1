"""Follow faces from frame to frame instead of searching each whole frame for them (`--tracking on`).

MTCNN's cost is its search for small faces over the whole frame: at 1080p its two finest pyramid
levels are three quarters of the work. A face found in one frame is almost where it was in the
next, and a face that was not there can only appear where the picture changed. So after the first
frame, a frame is searched
- for the faces of the frame before: each where the camera's motion took it, in a region twice its
  size, for faces at least half its size;
- for new faces where the picture changed (see `picture_change`), at the detector's own smallest size;
and the whole frame is searched as before when most of the picture changed (a cut, a flash), when
the camera pans or zooms, or at a segment's first frame. Faces found by two searches are merged as MTCNN merges its own.

`follow` is a pure function of the frame and the state it returns for the frame before (that
frame's small picture and the boxes found in it): the analyzer keeps the state between the frames
of a segment and stores its boxes in each record (`FrameRecord.detected`), so any run, in any order,
computes the same record for a frame.
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
    camera_still:     how far (a share of the frame's short side) the camera may move the frame's
                      corners between two frames for them to be followed; a pan or a zoom is searched
                      whole, since faces slide in at the edges and small ones grow into view without
                      the picture changing once the motion is taken out;
    follow_margin:    a followed face's region: its box widened by this share of its side on each side;
    follow_min_scale: the smallest face searched for there, as a share of the followed face's side;
    merge_overlap:    faces found by two searches that overlap more than this (intersection over the
                      smaller) are one face, the better scored kept.
    """

    change: ChangeSettings = field(default_factory=ChangeSettings)
    full_above: float = 0.4
    camera_still: float = 0.003
    follow_margin: float = 0.5
    follow_min_scale: float = 0.5
    merge_overlap: float = 0.7

    def describe(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class TrackState:
    """What the next frame is searched from: this frame's small picture and the boxes found in it."""

    picture: np.ndarray
    boxes: np.ndarray  # (N, 4) float32

    @classmethod
    def of(cls, frame: np.ndarray, boxes) -> "TrackState":
        return cls(small_picture(frame), np.asarray(boxes, np.float32).reshape(-1, 4))


def detected_boxes(detections: list[Detection]) -> np.ndarray:
    """(N, 4) float32 boxes of detections: the state stored in a record."""
    return np.array([d.box for d in detections], np.float32).reshape(-1, 4)


@dataclass
class FollowStats:
    """How each frame was searched (for the bench)."""

    whole: int = 0
    followed: int = 0
    searched_share: float = 0.0  # summed over followed frames: the changed share searched at full detail


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

    def follow(self, frame: np.ndarray, previous: TrackState | None) -> tuple[list[Detection], TrackState]:
        """The faces of `frame`, searched from the state of the frame before (None: the whole frame),
        and the state for the frame after."""
        picture = small_picture(frame)
        height, width = frame.shape[:2]
        change = None
        if previous is not None and previous.picture.shape == picture.shape:
            change = picture_change(previous.picture, picture, (width, height), self.settings.change)
        if (change is None or change.changed_fraction > self.settings.full_above
                or change.camera_shift > self.settings.camera_still * min(height, width)):
            self.stats.whole += 1
            found = self._whole(frame, picture)
        else:
            self.stats.followed += 1
            self.stats.searched_share += change.changed_fraction
            found = self._search(frame, change, previous.boxes)
        return found, TrackState(picture, detected_boxes(found))

    def _whole(self, frame: np.ndarray, picture: np.ndarray) -> list[Detection]:
        """The whole frame's faces: the detector on the frame, or on its textured parts only when
        flat parts (no face can be there) leave most of it out."""
        rects, share = textured_rects(picture, frame.shape[1::-1], self.settings.change)
        if share > self.settings.full_above:
            return self.detector.detect(frame)
        scales = self.detector.scales(*frame.shape[:2])
        return _merged([(_CHANGED, d) for region in rects for d in self._in_region(frame, region, scales)],
                       self.settings.merge_overlap)

    def _search(self, frame: np.ndarray, change, boxes: np.ndarray) -> list[Detection]:
        """Each search samples the frame at the scales the whole frame's search has
        (`MtcnnDetector.scales`), so a face is refined and measured as that search would do it."""
        scales = self.detector.scales(*frame.shape[:2])
        moved = change.moved(boxes)
        found = [(_FOLLOWED, d) for box in moved for d in self._followed(frame, box, scales)]
        for region in change.rects_outside(moved):
            found += [(_CHANGED, d) for d in self._in_region(frame, region, scales)]
        return _merged(found, self.settings.merge_overlap)

    def _followed(self, frame: np.ndarray, box: np.ndarray, scales: list[float]) -> list[Detection]:
        """A face of the frame before, where the camera's motion took it: R-Net and O-Net on that box
        (no P-Net search), on a region around it, sampled from the levels R-Net's and O-Net's crops of a
        face of its size are taken from in the whole search (see `crop_patches`)."""
        side = max(box[2] - box[0], box[3] - box[1], 1.0)
        pad = self.settings.follow_margin * side
        x1, y1, x2, y2 = _clipped([box[0] - pad, box[1] - pad, box[2] + pad, box[3] + pad], *frame.shape[1::-1])
        if x2 - x1 < CELL or y2 - y1 < CELL:
            return []
        finest = min((x for x in scales if x >= _ONET_SIDE / side), default=None)
        coarsest = min((x for x in scales if x >= _RNET_SIDE / side), default=None)
        levels = [x for x in scales if coarsest is not None and coarsest <= x <= (finest or coarsest)]
        offset = np.array([x1, y1], np.float32)
        candidate = np.asarray(box, np.float64) - np.tile(offset, 2)
        found = [Detection(d.box + np.tile(offset, 2), d.score, d.kps5 + offset)
                 for d in self.detector.refine(frame[y1:y2, x1:x2], candidate, levels)]
        if found:
            return found
        # Lost where it was expected (it moved or turned more than the box can follow): search its
        # region for faces from half its size up, as the whole frame's search would.
        smallest = min((x for x in scales if x >= CELL / (self.settings.follow_min_scale * side)), default=None)
        return self._in_region(frame, (x1, y1, x2, y2), [x for x in scales if smallest is None or x <= smallest])

    def _in_region(self, frame: np.ndarray, region, scales: list[float]) -> list[Detection]:
        x1, y1, x2, y2 = (int(v) for v in region)
        if x2 - x1 < CELL or y2 - y1 < CELL or not scales:
            return []
        offset = np.array([x1, y1], np.float32)
        return [Detection(d.box + np.tile(offset, 2), d.score, d.kps5 + offset)
                for d in self.detector.detect_at(frame[y1:y2, x1:x2], scales)]


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


def _clipped(box, width: int, height: int) -> tuple[int, int, int, int]:
    x1, y1, x2, y2 = box
    return (max(0, int(np.floor(x1))), max(0, int(np.floor(y1))),
            min(width, int(np.ceil(x2))), min(height, int(np.ceil(y2))))
