"""Analysis through the cache: run only the stages a frame still lacks.

For each frame the analyzer looks up its record (by media frame index without
decoding, else by fingerprint), then computes what is missing: detection, 68
landmarks (when a landmarker is installed; a detection the landmarker sees no
face in is dropped), an embedding (when a recognizer is
installed and the caller needs it), and head pose from the landmarks. Records
are written back a group (64 frames or one still) at a time.

The namespace holds the detector's, landmarker's and recognizer's file digests
and settings: a different model or setting never sees old records.
"""

from __future__ import annotations

import sys

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Protocol

import numpy as np

from facecache.analysis.pose import head_pose
from facecache.analysis.results import Detection
from facecache.analysis.tracking import TrackState, found_rows
from facecache.fingerprint import frame_fingerprint
from facecache.media.identity import media_identity
from facecache.media.picture_rules import NEWEST, PictureRules
from facecache.media.reader import MediaError, MediaReader, RowsRead, earlier_decoder_ids
from facecache.store.cache import FaceCache
from facecache.store.claims import DEFAULT_CLAIM_TTL, DEFAULT_POLL_SECONDS, ClaimBook, work_through
from facecache.store.frame_store import SEGMENT_FRAMES, FrameGroup, FrameStore, RunStats, group_key
from facecache.store.namespace import Namespace
from facecache.store.records import Face, FrameRecord, Stage

ANALYSIS_FORMAT_VERSION = 1


class Detector(Protocol):
    def describe(self) -> dict: ...
    def detect(self, frame: np.ndarray) -> list[Detection]: ...


@dataclass
class Inferences:
    """Model runs by stage (what the cache is there to avoid)."""

    detect: int = 0
    landmark: int = 0
    embed: int = 0
    swap: int = 0
    eyes: int = 0  # faces whose eyes the iris model read (the classic_eyes swapper: swap.eye_records)

    def as_dict(self, stages: Iterable[str] = ("detect", "landmark", "embed")) -> dict:
        return {stage: getattr(self, stage) for stage in stages}

    def runs(self, stages: Iterable[str]) -> dict:
        """``as_dict(stages)``, and the eyes read where any were (a run's summary: "model runs")."""
        return {**self.as_dict(stages), **({"eyes": self.eyes} if self.eyes else {})}

    @property
    def total(self) -> int:
        return self.detect + self.landmark + self.embed + self.swap + self.eyes


@dataclass
class AnalysedFrame:
    index: int
    record: FrameRecord


class ModelSet:
    """The analysis models of a run: their file digests and settings (the cache
    namespace), and builders that create each model's sessions on first use, so
    a run served entirely from the cache never loads a model."""

    def __init__(self, digests: dict[str, str], settings: dict, build_detector: Callable[[], Detector],
                 build_landmarker: Callable[[], object] | None = None,
                 build_recognizer: Callable[[], object] | None = None):
        self.digests = digests
        self.settings = settings
        self._builders = {"detector": build_detector, "landmarker": build_landmarker, "recognizer": build_recognizer}
        self._built: dict[str, object] = {}

    def has(self, role: str) -> bool:
        return self._builders[role] is not None

    def get(self, role: str):
        """The model for a role, built on first use: "detector" (.detect(frame)), "landmarker"
        (.landmarks_batch(frame, faces) -> [Landmarks68]) or "recognizer" (.embed_batch(frame, faces)
        -> [embedding]); the batch calls take all faces of a frame (anything with a box and kps5)."""
        if role not in self._built:
            self._built[role] = self._builders[role]()
        return self._built[role]


Progress = Callable[[int, int], None]


TO_THE_END = sys.maxsize  # the stop of a range that runs to the media's last frame ("--frames 5-")


def checked_range(frames: range | None, frame_count: int, path) -> range:
    """All frames when None, to the last one from a start when its stop is TO_THE_END; an error naming the
    valid range when reversed, empty or outside the media."""
    if frames is None:
        return range(frame_count)
    if frames.stop == TO_THE_END:
        frames = range(frames.start, max(frames.start + 1, frame_count))  # a start past the end is refused below
    if not frames:
        raise MediaError(f"the frame range {frames.start}-{frames.stop - 1} of {path} is reversed or empty: the "
                         f"first frame must not come after the last ({path} has frames 0-{frame_count - 1})")
    if frames.start < 0 or frames.stop > frame_count:
        raise MediaError(f"frames {frames.start}-{frames.stop - 1} are outside {path}, which has frames "
                         f"0-{frame_count - 1}: choose frames within that range")
    return frames


def check_frames(media: str | Path, frames: range | None, rules: PictureRules = NEWEST) -> range:
    """The frames of a media file a job will cover, checked against the file before any work starts."""
    with MediaReader(media, rules) as reader:
        return checked_range(frames, reader.info.frame_count, media)


def timing_note(media: str | Path, rules: PictureRules = NEWEST) -> str | None:
    """MediaReader.timing_note of a media file."""
    with MediaReader(media, rules) as reader:
        return reader.timing_note()


def segments(frames: range) -> Iterator[tuple[int, list[int]]]:
    """(segment number, wanted frame indices in it) for the segments a range touches."""
    first = frames.start - frames.start % SEGMENT_FRAMES if frames else 0
    for start in range(first, frames.stop, SEGMENT_FRAMES):
        wanted = [i for i in range(start, start + SEGMENT_FRAMES) if i in frames]
        if wanted:
            yield start // SEGMENT_FRAMES, wanted


@dataclass
class FaceAnalyzer:
    cache: FaceCache
    models: ModelSet
    stats: RunStats = field(default_factory=RunStats)
    inferences: Inferences = field(default_factory=Inferences)
    claim_ttl: float = DEFAULT_CLAIM_TTL  # see facecache.store.claims
    claim_poll_seconds: float = DEFAULT_POLL_SECONDS
    picture_rules: PictureRules = NEWEST  # whose picture of a movie is analysed (the Blender that shows it)

    def __post_init__(self) -> None:
        self.namespace = Namespace(stage="analysis", models=self.models.digests, settings=self.models.settings,
                                   format_version=ANALYSIS_FORMAT_VERSION)
        self.store = FrameStore(self.cache, self.namespace, self.stats)

    def stages(self, embeddings: bool = True) -> Stage:
        """The stages this model set can provide (embeddings only when asked for)."""
        stages = Stage.DETECT | Stage.POSE
        if self.models.has("landmarker"):
            stages |= Stage.LANDMARK68
        if embeddings and self.models.has("recognizer"):
            stages |= Stage.EMBED
        return stages

    # -- media ----------------------------------------------------------------------------------

    def analyze_media(self, path: str | Path, frames: range | None = None, needed: Stage | None = None,
                      progress: Progress | None = None, deinterlace: bool = False) -> list[AnalysedFrame]:
        """Records for the given frames of a still or video (`deinterlace`: as a strip with the Deinterlace
        option shows it); decodes only segments with work left. A segment that another process sharing the
        cache is analysing (its claim is held) is left for later and then mostly read from the cache."""
        needed = self.stages() if needed is None else needed
        claims = ClaimBook(self.cache, self.claim_ttl)
        with self.open_reader(path, deinterlace) as reader:
            frames = checked_range(frames, reader.info.frame_count, path)
            media_id = media_identity(path, self.cache)
            records: dict[int, FrameRecord] = {}

            def attempt(item: tuple[int, list[int]]) -> bool:
                segment, wanted = item
                group = self.open_segment(media_id, reader.decoder_id, segment)
                claim = None
                if self._lacking(group, wanted, needed):
                    claim = claims.try_claim(self.namespace.key, group.key)
                    if claim is None:
                        return False
                    # with what the last holder wrote
                    group = self.open_segment(media_id, reader.decoder_id, segment, fresh=True, legacy=True)
                try:
                    cached = {i: self.cached(group, i, needed) for i in wanted}
                    todo = [i for i in wanted if cached[i] is None or not cached[i].has(needed)]
                    for computed, (index, frame) in enumerate(self.frames(group, reader, todo), 1):
                        cached[index] = self.ensure(group, index, frame, needed)
                        if claim is not None:
                            claim.keep_alive()
                        if progress:  # per frame: a segment of a cold clip takes many seconds
                            progress(len(records) + len(wanted) - len(todo) + computed, len(frames))
                    group.flush()
                finally:
                    if claim is not None:
                        claim.release()
                records.update((i, record) for i, record in cached.items() if record is not None)
                if progress:
                    progress(len(records), len(frames))
                return True

            work_through(segments(frames), attempt, self.claim_poll_seconds)
        return [AnalysedFrame(i, records[i]) for i in frames if i in records]

    @staticmethod
    def _lacking(group: FrameGroup, wanted: list[int], needed: Stage) -> list[int]:
        """The frames whose record is missing or lacks a needed stage (a look, not counted in stats)."""
        lacking = []
        for index in wanted:
            fingerprint = group.fingerprint_at(index)
            record = group.content.records.get(fingerprint) if fingerprint is not None else None
            if record is None or not record.has(needed):
                lacking.append(index)
        return lacking

    def open_reader(self, path: str | Path, deinterlace: bool = False) -> MediaReader:
        """The media's frames as this analyzer's Blender shows them (`deinterlace`: with the strip's
        Deinterlace option set)."""
        return MediaReader(path, self.picture_rules, deinterlace)

    def open_segment(self, media_id: str, decoder_id: str, segment: int, fresh: bool = False,
                     legacy: bool = False) -> FrameGroup:
        """The analysis records of one 64-frame segment of a media file as `decoder_id` decodes it (`fresh`:
        see FrameStore.open_group). With `legacy`, a video segment this decoder has no records of also
        offers those the engine's earlier decoders made (`earlier_decoder_ids`), by fingerprint only: one is
        served where a frame's picture is the same to the bit, which its fingerprint proves; their frame
        index is not taken, since it maps frames to that decoder's pictures."""
        group = self.store.open_group(group_key(media_id, decoder_id, segment), fresh)
        if legacy and not group.content.records:
            for earlier in earlier_decoder_ids(decoder_id):
                old = self.store.open_group(group_key(media_id, earlier, segment))
                group.content.records.update(old.content.records)
        return group

    @property
    def tracking(self) -> bool:
        """Whether the detector follows faces from frame to frame (facecache.analysis.tracking)."""
        return self.models.settings.get("tracking") is not None

    def frames(self, group: FrameGroup, reader: MediaReader, indices: list[int],
               rows: RowsRead | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """The decoded frames `indices` (ascending, of the segment `group` holds), each yielded with
        its detection in `group` when the detector tracks: a frame lacking one is searched from the
        frame before, so the frames from the last one detected before it (or from the segment's first
        frame) are detected in order first, whether asked for or not. A frame's detection therefore
        depends only on the frames before it in its segment, which every run detects first: any range,
        order or process computes the same record. Without tracking, just the decoded frames. `rows`:
        as `MediaReader.frames`' (whole frames wherever a detection is made)."""
        lacking = [index for index in indices if not self._detected(group, index)] if self.tracking else []
        if not lacking:
            yield from reader.frames(indices, rows)
            return
        start = lacking[0] - lacking[0] % SEGMENT_FRAMES
        begin = lacking[0] - 1
        while begin > start and not self._restart_point(group, begin):
            begin -= 1
        chain = range(max(begin, start), lacking[-1] + 1)
        wanted = set(indices)
        state = None
        for index, frame in reader.frames(sorted(wanted.union(chain))):
            if index in chain:
                state = self._followed(group, index, frame, None if index == start else state)
            if index in wanted:
                yield index, frame

    def _detected(self, group: FrameGroup, index: int) -> bool:
        record = self._record_at(group, index)
        return record is not None and record.has(Stage.DETECT)

    def _restart_point(self, group: FrameGroup, index: int) -> bool:
        """Whether the state after media frame `index` follows from its record alone: a face was found
        in it, so it had something to see and did not pass the picture of the frame before on."""
        record = self._record_at(group, index)
        return (record is not None and record.has(Stage.DETECT) and record.detected is not None
                and bool((record.detected[:, 4] == 0).any()))

    @staticmethod
    def _record_at(group: FrameGroup, index: int) -> FrameRecord | None:
        fingerprint = group.fingerprint_at(index)
        return group.content.records.get(fingerprint) if fingerprint is not None else None

    def _followed(self, group: FrameGroup, index: int, frame: np.ndarray, state: TrackState | None) -> TrackState | None:
        """Detect media frame `index` from the state of the frame before (unless its record has a
        detection); the state for the frame after (None: search it whole)."""
        fingerprint = frame_fingerprint(frame)
        record = group.content.records.get(fingerprint)  # also the same pixels at another index
        if record is not None and record.has(Stage.DETECT):
            if group.fingerprint_at(index) != fingerprint:
                group.put(record, index)
            return None if record.detected is None else self.models.get("detector").resume(frame, record.detected, state)
        detections, state = self.models.get("detector").follow(frame, state)
        self.inferences.detect += 1
        group.put(self._detection_record(frame, fingerprint, detections, state.rows), index)
        return state

    @staticmethod
    def _detection_record(frame: np.ndarray, fingerprint: str, detections: list[Detection],
                          rows: np.ndarray | None = None) -> FrameRecord:
        faces = [Face(box=d.box, score=d.score, kps5=d.kps5) for d in detections]
        rows = found_rows(detections) if rows is None else rows
        return FrameRecord(fingerprint, Stage.DETECT, *frame.shape[:2], faces, rows)

    def cached(self, group: FrameGroup, index: int, needed: Stage) -> FrameRecord | None:
        """The cached record of a media frame, found without decoding (counted as hit,
        partial hit or miss); it may lack some needed stages."""
        fingerprint = group.fingerprint_at(index)
        if fingerprint is None:
            self.stats.misses += 1
            return None
        return group.lookup(fingerprint, needed)

    def ensure(self, group: FrameGroup, index: int, frame: np.ndarray, needed: Stage) -> FrameRecord:
        """The record of a decoded media frame with every needed stage, computing what is missing."""
        fingerprint = frame_fingerprint(frame)
        record = group.content.records.get(fingerprint)  # also finds the same pixels at another index
        if record is None or not record.has(needed):
            record = self.complete(record, frame, fingerprint, needed)
            group.put(record, index)
        elif group.fingerprint_at(index) != fingerprint:
            group.put(record, index)
        return record

    # -- single frames (source faces, previews) ---------------------------------------------------

    def analyze_frame(self, frame: np.ndarray, needed: Stage | None = None) -> FrameRecord:
        """The record of one frame, cached by its fingerprint alone."""
        needed = self.stages() if needed is None else needed
        fingerprint = frame_fingerprint(frame)
        group = self.store.open_group(group_key("frame", fingerprint))
        record = group.lookup(fingerprint, needed)
        if record is None or not record.has(needed):
            record = self.complete(record, frame, fingerprint, needed)
            group.put(record)
            group.flush()
        return record

    # -- stages -----------------------------------------------------------------------------------

    def complete(self, record: FrameRecord | None, frame: np.ndarray, fingerprint: str,
                 needed: Stage) -> FrameRecord:
        """Run the stages `record` lacks out of `needed` (all of them when it is None)."""
        height, width = frame.shape[:2]
        if record is None or not record.has(Stage.DETECT):
            record = self._detection_record(frame, fingerprint, self.models.get("detector").detect(frame))
            self.inferences.detect += 1
        stages = record.stages
        # The landmarker and the recognizer see all faces of the frame at once (one session run
        # when the graph has a batch axis): six faces cost about one face's run overhead.
        if needed & Stage.LANDMARK68 and not stages & Stage.LANDMARK68 and self.models.has("landmarker"):
            found = self.models.get("landmarker").landmarks_batch(frame, record.faces)
            self.inferences.landmark += len(record.faces)
            for face, landmarks in zip(record.faces, found):
                face.landmarks68 = landmarks.points
            # A detection the landmarker sees no face in (a pattern on poker chips) is dropped.
            record.faces = [face for face, landmarks in zip(record.faces, found) if landmarks.face]
            stages |= Stage.LANDMARK68
        if needed & Stage.EMBED and not stages & Stage.EMBED and self.models.has("recognizer"):
            embeddings = self.models.get("recognizer").embed_batch(frame, record.faces)
            for face, embedding in zip(record.faces, embeddings):
                face.embedding = np.asarray(embedding, np.float32)
            self.inferences.embed += len(record.faces)
            stages |= Stage.EMBED
        if needed & Stage.POSE and not stages & Stage.POSE:
            for face in record.faces:
                face.pose = _pose(face, width, height)
            stages |= Stage.POSE
        record.stages = stages
        return record


def _pose(face: Face, width: int, height: int) -> np.ndarray | None:
    points = face.landmarks68 if face.landmarks68 is not None else face.kps5
    try:
        pose = head_pose(points, (width, height))
    except ValueError:
        return None  # degenerate landmarks: the face simply has no pose
    return np.array([pose.pitch, pose.yaw, pose.roll], dtype=np.float32)
