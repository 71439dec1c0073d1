"""Cached eye readings of target frames, for the `classic_eyes` swapper: each face's two eyes as the iris model
reads them (``analysis.iris``), kept per frame so that a new source, a changed selection or a teammate's run
reads a frame's eyes once. Reading them is most of that swapper's cost (72 ms of CPU a face on the development
machine, against 2.4 ms for the warp they steer).

A record holds one row per face of the frame's analysis record, in its order: (2, 17, 2) float32, the
image-left then the image-right eye, 16 lid points then the iris centre, in frame pixels. A face not read
(not selected yet, or without 68 landmarks to place the eyes) is NaN. In a pack: the rows of every record in
one column, the face counts in another.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from facecache.analysis.iris import SQUARES, IrisChecker
from facecache.errors import CorruptPack
from facecache.fingerprint import is_digest
from facecache.store.records import GroupRecords
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
        if not self.has(number):
            return None
        return tuple((eye[:LID_POINTS].astype(np.float64), eye[LID_POINTS].astype(np.float64))
                     for eye in self.eyes[number])


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
