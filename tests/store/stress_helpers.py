"""Shared helpers of the store stress tests (crash safety, concurrency, hostile input).

Records are deterministic functions of (fingerprint, level), and fingerprints are
deterministic functions of (group, frame index), so whatever a reader gets back can
be checked against what any writer could have written, without talking to writers.
"""

from __future__ import annotations

import gc
import multiprocessing.context
import os
from pathlib import Path

import numpy as np

from facecache.fingerprint import bytes_digest
from facecache.store.frame_store import group_key
from facecache.store.namespace import Namespace
from facecache.store.records import Face, FrameRecord, Stage

NS = Namespace("stress", {"detector": "d" * 32}, {"size": 640})
EMB_DIM = 512

# Nested stage sets: a higher level is always a superset, so "richer" (more stage
# bits, what FrameStore.merge keeps) also means "holds everything a lower level has".
LEVELS = [
    Stage.DETECT,
    Stage.DETECT | Stage.LANDMARK68,
    Stage.DETECT | Stage.LANDMARK68 | Stage.EMBED,
    Stage.DETECT | Stage.LANDMARK68 | Stage.EMBED | Stage.POSE,
]
LEVEL_OF = {int(stages): i for i, stages in enumerate(LEVELS)}


class _ForkProcessLeavingInherited(multiprocessing.context.ForkProcess):
    """A forked process whose garbage collector leaves alone what it inherited. Otherwise its first collection
    may free an object of an earlier test, say an ONNX Runtime session, whose destructor waits on the thread
    pool it had in the parent: the child hangs in pthread_cond_destroy (seen with tests/swap run before). The
    child ends with os._exit, so nothing inherited is freed at all."""

    def run(self) -> None:
        gc.freeze()
        super().run()


class _ForkContext(multiprocessing.context.ForkContext):
    Process = _ForkProcessLeavingInherited


FORK = _ForkContext()


def group_id(i: int) -> str:
    return group_key("stress-media", "decoder", i)


def fingerprint_for(group: str, frame: int) -> str:
    return bytes_digest(f"{group}|{frame}".encode())


def make_record(fp: str, level: int) -> FrameRecord:
    """The record of a frame at a level: same fp and level, same bytes, always."""
    rng = np.random.default_rng(int(fp[:16], 16))
    n_faces = int(rng.integers(0, 4))  # frames without faces are records too
    faces = []
    for _ in range(n_faces):
        box = rng.random(4, dtype=np.float32) * 1000
        score = float(rng.random(dtype=np.float32))
        kps5 = rng.random((5, 2), dtype=np.float32) * 1000
        lm68 = rng.random((68, 2), dtype=np.float32) * 1000
        emb = rng.standard_normal(EMB_DIM, dtype=np.float32)
        pose = rng.random(3, dtype=np.float32) * 90
        faces.append(Face(
            box=box, score=score, kps5=kps5,
            landmarks68=lm68 if level >= 1 else None,
            # low-score faces get no embedding: exercises the per-face presence mask
            embedding=emb if level >= 2 and score >= 0.25 else None,
            pose=pose if level >= 3 else None,
        ))
    height, width = (1080, 1920) if int(fp[16], 16) % 2 else (720, 1280)
    return FrameRecord(fp, LEVELS[level], height, width, faces)


def _same_array(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.dtype == np.float32 and a.shape == b.shape and np.array_equal(a, b)


def record_problem(record: FrameRecord, fingerprint: str | None = None) -> str | None:
    """None when the record is exactly what some writer wrote for its fingerprint."""
    fp = record.fingerprint
    if fingerprint is not None and fp != fingerprint:
        return f"record under {fingerprint} names {fp}"
    level = LEVEL_OF.get(int(record.stages))
    if level is None:
        return f"{fp}: stages {record.stages!r} were never written"
    want = make_record(fp, level)
    if (record.height, record.width) != (want.height, want.width):
        return f"{fp}: size {(record.height, record.width)} != {(want.height, want.width)}"
    if len(record.faces) != len(want.faces):
        return f"{fp}: {len(record.faces)} faces != {len(want.faces)}"
    for got, exp in zip(record.faces, want.faces):
        if got.score != exp.score:
            return f"{fp}: score {got.score} != {exp.score}"
        for name in ("box", "kps5", "landmarks68", "embedding", "pose"):
            if not _same_array(getattr(got, name), getattr(exp, name)):
                return f"{fp}: field {name} differs"
    return None


def group_problems(group, groups_frames: dict[str, range] | None = None) -> list[str]:
    """Every record and index entry of an opened FrameGroup checked against the generators."""
    problems = []
    for fp, record in group.content.records.items():
        problem = record_problem(record, fp)
        if problem:
            problems.append(problem)
    for frame, fp in group.content.index.items():
        if fp != fingerprint_for(group.key, frame):
            problems.append(f"group {group.key}: frame {frame} -> {fp} is not its fingerprint")
        elif fp not in group.content.records:
            problems.append(f"group {group.key}: frame {frame} indexed without a record")
    return problems


def tree_files(root: Path) -> list[Path]:
    return [Path(d) / f for d, _dirs, files in os.walk(root) for f in files]

