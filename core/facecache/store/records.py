"""Per-frame analysis records and their columnar encoding inside a pack.

A frame record lists the faces found in one frame and which analysis stages
have run on that frame. A frame with no face is a record too (an empty list),
so it is never analysed again. Optional per-face fields (68 landmarks,
embedding, pose) may be absent; a later run that needs one computes only that
field and stores a fuller record.

In a pack, the faces of all frames are stored column by column (one `.npy`
per field, rows only for faces that have the field), which keeps a face-frame
with a 512-d embedding and 68 landmarks under 3 KB.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from facecache.errors import CorruptPack
from facecache.fingerprint import is_digest

RECORD_FORMAT = "frames/1"


class Stage(enum.IntFlag):
    """Analysis stages; a record's `stages` says which have run on its frame."""

    DETECT = 1       # box, score, 5-point landmarks
    LANDMARK68 = 2   # 68-point landmarks
    EMBED = 4        # identity embedding
    POSE = 8         # head pose (pitch, yaw, roll)


_ALL_STAGES = int(Stage.DETECT | Stage.LANDMARK68 | Stage.EMBED | Stage.POSE)

# Optional per-face fields, with the bit each one has in a face's presence mask
# and the shape of one row (None: any length, e.g. the embedding size).
_OPTIONAL = {"landmarks68": 1, "embedding": 2, "pose": 4}
_ROW_SHAPES = {"landmarks68": (68, 2), "embedding": None, "pose": (3,)}


@dataclass
class Face:
    box: np.ndarray                       # (4,) float32: x1, y1, x2, y2 in frame pixels
    score: float
    kps5: np.ndarray                      # (5, 2) float32: eyes, nose, mouth corners
    landmarks68: np.ndarray | None = None  # (68, 2) float32
    embedding: np.ndarray | None = None    # (D,) float32, raw (not normalised)
    pose: np.ndarray | None = None         # (3,) float32: pitch, yaw, roll in degrees

    @property
    def present(self) -> set[str]:
        """Names of the optional fields this face has."""
        return {name for name in _OPTIONAL if getattr(self, name) is not None}


@dataclass
class FrameRecord:
    fingerprint: str
    stages: Stage
    height: int
    width: int
    faces: list[Face] = field(default_factory=list)
    # (N, 5) float32: what a tracking detector follows into the next frame (facecache.analysis.tracking):
    # x1, y1, x2, y2 and the frames since the face was last found (0: the boxes the detector found here,
    # before a later stage dropped any; more: faces lost a few frames ago, still looked for). None in
    # records made before tracking.
    detected: np.ndarray | None = None

    def has(self, stages: Stage) -> bool:
        return (self.stages & stages) == stages


@dataclass
class GroupRecords:
    """The content of one group: frame index -> fingerprint, fingerprint -> record
    (a FrameRecord here; other stages store their own record types)."""

    index: dict[int, str] = field(default_factory=dict)
    records: dict[str, Any] = field(default_factory=dict)


def encode(group: GroupRecords) -> tuple[dict, dict[str, np.ndarray], int]:
    """(meta, arrays, entry count) for packfile.encode."""
    order = list(group.records)
    position = {fp: i for i, fp in enumerate(order)}
    faces = [(face, fp) for fp in order for face in group.records[fp].faces]
    meta = {
        "format": RECORD_FORMAT,
        "records": [[fp, int(r.stages), int(r.height), int(r.width), len(r.faces)]
                    for fp, r in ((fp, group.records[fp]) for fp in order)],
        "index": [[int(i), position[fp]] for i, fp in sorted(group.index.items()) if fp in position],
    }
    arrays = {
        "box": _stack([f.box for f, _ in faces], (4,)),
        "score": np.asarray([f.score for f, _ in faces], dtype=np.float32),
        "kps5": _stack([f.kps5 for f, _ in faces], (5, 2)),
        "present": np.asarray([sum(bit for name, bit in _OPTIONAL.items() if getattr(f, name) is not None)
                               for f, _ in faces], dtype=np.uint8),
    }
    for name in _OPTIONAL:
        rows = [getattr(f, name) for f, _ in faces if getattr(f, name) is not None]
        if rows:
            arrays[name] = np.stack([np.asarray(r, dtype=np.float32) for r in rows])
    detected = [group.records[fp].detected for fp in order]
    if any(boxes is not None for boxes in detected):
        meta["detected"] = [-1 if boxes is None else len(boxes) for boxes in detected]
        arrays["detected"] = _stack([row for rows in detected if rows is not None for row in rows], (5,))
    return meta, arrays, len(order)


def decode(meta: dict, arrays: dict[str, np.ndarray]) -> GroupRecords:
    """Rebuild records from a pack, checking every count and shape; CorruptPack on any mismatch."""
    if meta.get("format") != RECORD_FORMAT:
        raise CorruptPack(f"record format {meta.get('format')!r} is not {RECORD_FORMAT!r}")
    rows = meta.get("records")
    index_rows = meta.get("index")
    if not isinstance(rows, list) or not isinstance(index_rows, list):
        raise CorruptPack("records or index missing")
    for row in rows:
        if not (isinstance(row, list) and len(row) == 5 and is_digest(row[0])
                and all(_is_count(v) for v in row[1:]) and row[1] & ~_ALL_STAGES == 0):
            raise CorruptPack("bad frame record row")
    n_faces = sum(row[4] for row in rows)
    box = _column(arrays, "box", (n_faces, 4))
    score = _column(arrays, "score", (n_faces,))
    kps5 = _column(arrays, "kps5", (n_faces, 5, 2))
    present = _column(arrays, "present", (n_faces,), kind="u")
    optional = {}
    for name, bit in _OPTIONAL.items():
        count = int(np.count_nonzero(present & bit))
        if count == 0:
            if name in arrays and len(arrays[name]) != 0:
                raise CorruptPack(f"unexpected {name} rows")
            optional[name] = None
            continue
        column = arrays.get(name)
        row_shape = _ROW_SHAPES[name]
        if (column is None or column.dtype.kind != "f" or column.ndim < 2 or len(column) != count
                or (row_shape is not None and column.shape[1:] != row_shape)
                or (row_shape is None and column.ndim != 2)):
            raise CorruptPack(f"column {name!r}: expected {count} rows of shape {row_shape or '(D,)'}")
        optional[name] = iter(column)
    if (present & ~np.uint8(sum(_OPTIONAL.values()))).any():
        raise CorruptPack("unknown presence bits")

    detected = _detected_boxes(meta, arrays, len(rows))
    group = GroupRecords()
    face_i = 0
    for fp, stages, height, width, count in rows:
        faces = []
        for _ in range(count):
            bits = int(present[face_i])
            faces.append(Face(
                box=box[face_i], score=float(score[face_i]), kps5=kps5[face_i],
                **{name: (next(optional[name]) if bits & bit else None) for name, bit in _OPTIONAL.items()},
            ))
            face_i += 1
        group.records[fp] = FrameRecord(fp, Stage(stages), height, width, faces, next(detected))
    for item in index_rows:
        if not (isinstance(item, list) and len(item) == 2 and all(_is_count(v) for v in item) and item[1] < len(rows)):
            raise CorruptPack("bad index row")
        group.index[item[0]] = rows[item[1]][0]
    return group


def _detected_boxes(meta: dict, arrays: dict[str, np.ndarray], count: int):
    """An iterator over each record's tracking rows (None where the pack has none for it)."""
    counts = meta.get("detected")
    if counts is None:
        if "detected" in arrays:
            raise CorruptPack("detector boxes without their counts")
        return iter([None] * count)
    if not (isinstance(counts, list) and len(counts) == count
            and all(isinstance(n, int) and not isinstance(n, bool) and -1 <= n < 2**40 for n in counts)):
        raise CorruptPack("bad detector box counts")
    boxes = _column(arrays, "detected", (sum(n for n in counts if n > 0), 5))
    starts = np.cumsum([0] + [max(n, 0) for n in counts])
    return iter([None if n < 0 else boxes[start:start + n] for n, start in zip(counts, starts)])


def _stack(rows: list, shape: tuple) -> np.ndarray:
    if not rows:
        return np.zeros((0, *shape), dtype=np.float32)
    return np.stack([np.asarray(r, dtype=np.float32).reshape(shape) for r in rows])


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**40


def _column(arrays: dict, name: str, shape: tuple, kind: str = "f") -> np.ndarray:
    column = arrays.get(name)
    if column is None or column.shape != shape or column.dtype.kind != kind:
        raise CorruptPack(f"column {name!r} does not have shape {shape}")
    return column


class AnalysisCodec:
    """How FrameStore encodes, checks and merges analysis records."""

    encode = staticmethod(encode)
    decode = staticmethod(decode)

    @staticmethod
    def complete(record: FrameRecord, needed: Stage) -> bool:
        return record.has(needed)

    @staticmethod
    def richer(a: FrameRecord, b: FrameRecord) -> bool:
        """True when `a` has run more stages than `b` (the one to keep on merge)."""
        return bin(int(a.stages)).count("1") > bin(int(b.stages)).count("1")


ANALYSIS_CODEC = AnalysisCodec()
