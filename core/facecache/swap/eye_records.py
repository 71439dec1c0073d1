"""Cached eye readings of target frames, for the `classic_eyes` swapper: each face's two eyes as the iris model
reads them (``analysis.iris``), kept per frame so that a new source, a changed selection or a teammate's run
reads a frame's eyes once. Reading them is most of that swapper's cost (72 ms of CPU a face on the development
machine, against 2.4 ms for the warp they steer).

A record holds one row per face of the frame's analysis record, in its order: (2, 17, 2) float32, the
image-left then the image-right eye, 16 lid points then the iris centre, in frame pixels. A face not read
(not selected yet, or without 68 landmarks to place the eyes) is NaN. In a pack: the rows of every record in
one column, each record's fingerprint and face count in the pack's meta.

    eyes = TargetEyes(cache, analyzer.namespace.key, swapper.digests, swapper.read_eyes)   # per swap job
    faces_eyes = eyes.of_faces(group, record, frame, faces)   # cached, else read now; eyes.flush() stores them
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from facecache.analysis.iris import SQUARES, IrisChecker
from facecache.errors import CorruptPack
from facecache.fingerprint import is_digest
from facecache.store.cache import FaceCache
from facecache.store.frame_store import FrameGroup, FrameStore
from facecache.store.namespace import Namespace
from facecache.store.records import FrameRecord, GroupRecords
from facecache.swap.eye_follow import LID_POINTS, Eye

EYE_RECORD_FORMAT = "eyes/1"
# How the eyes are read (part of the records' key): IrisChecker.read's squares, each read twice (the second
# time moved onto the eye the first reading found).
EYE_READING = {"squares": SQUARES, "passes": 2}
ROW = (2, LID_POINTS + 1, 2)  # one face: two eyes, 16 lid points and the iris centre each
_MAX_FACES = 4096


@dataclass
class EyeRecord:
    fingerprint: str
    eyes: np.ndarray  # (faces, 2, 17, 2) float32; NaN rows: faces not read

    def has(self, number: int) -> bool:
        return bool(np.all(np.isfinite(self.eyes[number])))

    def of_face(self, number: int) -> tuple[Eye, Eye] | None:
        """(image-left, image-right) eye of face ``number``, each (lids, iris centre); None when not read."""
        return eyes_of_row(self.eyes[number])


def eyes_of_row(row: np.ndarray) -> tuple[Eye, Eye] | None:
    """One face's row as (image-left, image-right) eyes, each (lids, iris centre); None when not read."""
    if not np.all(np.isfinite(row)):
        return None
    return tuple((eye[:LID_POINTS].astype(np.float64), eye[LID_POINTS].astype(np.float64)) for eye in row)


def unread(faces: int) -> np.ndarray:
    return np.full((faces, *ROW), np.nan, np.float32)


def read_eyes(reader: IrisChecker, frame: np.ndarray, faces: Sequence) -> np.ndarray:
    """(len(faces), 2, 17, 2): each face's eyes as ``reader`` reads them around its 68 landmarks; NaN for a face
    without them."""
    rows = unread(len(faces))
    numbers = [i for i, face in enumerate(faces) if getattr(face, "landmarks68", None) is not None]
    readings = reader.read(frame, [faces[i].landmarks68 for i in numbers])
    for number, pair in zip(numbers, readings):
        rows[number] = [np.vstack([eye.lids, eye.iris[:1]]) for eye in pair]
    return rows


class EyeCodec:
    @staticmethod
    def encode(group: GroupRecords) -> tuple[dict, dict, int]:
        order = list(group.records)
        meta = {"format": EYE_RECORD_FORMAT, "records": [[fp, len(group.records[fp].eyes)] for fp in order]}
        rows = [group.records[fp].eyes for fp in order]
        arrays = {"eyes": np.concatenate(rows).astype(np.float32) if rows else unread(0)}
        return meta, arrays, len(order)

    @staticmethod
    def decode(meta: dict, arrays: dict) -> GroupRecords:
        if meta.get("format") != EYE_RECORD_FORMAT:
            raise CorruptPack(f"record format {meta.get('format')!r} is not {EYE_RECORD_FORMAT!r}")
        rows = meta.get("records")
        if not isinstance(rows, list) or not all(
                isinstance(row, list) and len(row) == 2 and is_digest(row[0]) and isinstance(row[1], int)
                and not isinstance(row[1], bool) and 0 <= row[1] <= _MAX_FACES for row in rows):
            raise CorruptPack("bad eye record rows")
        eyes = arrays.get("eyes")
        count = sum(row[1] for row in rows)
        if eyes is None or eyes.dtype != np.float32 or eyes.shape != (count, *ROW):
            raise CorruptPack("eye readings do not match their records")
        if np.any(np.isinf(eyes)):
            raise CorruptPack("bad eye readings")
        group = GroupRecords()
        start = 0
        for fingerprint, faces in rows:
            group.records[fingerprint] = EyeRecord(fingerprint, eyes[start:start + faces])
            start += faces
        return group

    @staticmethod
    def complete(record: EyeRecord, needed=None) -> bool:
        return True  # whether the faces a swap needs were read is the swap job's question (EyeRecord.has)

    @staticmethod
    def richer(a: EyeRecord, b: EyeRecord) -> bool:
        """Of two writers' records of a frame, the one with more faces read."""
        return int(np.isfinite(a.eyes).all(axis=(1, 2, 3)).sum()) > int(np.isfinite(b.eyes).all(axis=(1, 2, 3)).sum())


EYE_CODEC = EyeCodec()


class TargetEyes:
    """A swap job's cached eye readings: their namespace (the analysis namespace, the iris model's digest and
    how it reads), one group open at a time (the analysis's groups: a job works segment by segment)."""

    def __init__(self, cache: FaceCache, analysis_key: str, digests: dict[str, str],
                 read: Callable[[np.ndarray, list], np.ndarray]):
        namespace = Namespace(stage="eyes", models=dict(digests), settings={"analysis": analysis_key,
                                                                            "reading": EYE_READING})
        self.store = FrameStore(cache, namespace, codec=EYE_CODEC)
        self.read = read  # (frame, faces) -> their rows, as read_eyes gives them
        self.reads = 0  # faces whose eyes were read here (not served by the cache)
        self._group: FrameGroup | None = None

    def of_faces(self, group: str, record: FrameRecord, frame: np.ndarray, faces: list) -> list:
        """Each of ``faces``' eyes (``eyes_of_row``; faces of ``record``), read on ``frame`` only for the faces
        whose reading is not cached yet."""
        numbers = _numbers(record, faces)
        stored = _stored_or_unread(record, self._open(group).lookup(record.fingerprint))
        missing = [n for n in numbers if not stored.has(n) and record.faces[n].landmarks68 is not None]
        if missing:
            rows = stored.eyes.copy()
            rows[missing] = self.read(frame, [record.faces[n] for n in missing])
            stored = EyeRecord(record.fingerprint, rows)
            self._group.put(stored)
            self.reads += len(missing)
        return [stored.of_face(n) for n in numbers]

    def known(self, group: str, record: FrameRecord, faces: list) -> bool:
        """Whether every one of ``faces``' eyes that can be read is cached (`of_faces` reads no pixel then);
        reads the cache without counting it."""
        stored = _stored_or_unread(record, self._open(group).content.records.get(record.fingerprint))
        return all(stored.has(n) or record.faces[n].landmarks68 is None for n in _numbers(record, faces))

    def _open(self, group: str) -> FrameGroup:
        if self._group is None or self._group.key != group:
            self.flush()
            self._group = self.store.open_group(group)
        return self._group

    def flush(self) -> None:
        """Store the readings made since the open group was read."""
        if self._group is not None:
            self._group.flush()


def _numbers(record: FrameRecord, faces: list) -> list[int]:
    """Each of ``faces``' place among ``record``'s faces."""
    return [next(i for i, known in enumerate(record.faces) if known is face) for face in faces]


def _stored_or_unread(record: FrameRecord, stored: EyeRecord | None) -> EyeRecord:
    """The readings stored for ``record``'s faces, or none read where there are none for as many faces."""
    if stored is None or len(stored.eyes) != len(record.faces):
        return EyeRecord(record.fingerprint, unread(len(record.faces)))
    return stored
