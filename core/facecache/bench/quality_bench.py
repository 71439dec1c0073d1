"""`facecache bench quality`: how good the default swap looks, measured face by face on real photographs.

Pairs of a source face and a target picture from the samples (fetched from packages on the
index): two portraits both ways (one of them wears glasses), a 112-pixel portrait onto a
1080-pixel close-up (a small source, enlarged), source faces onto a group photo of six people
(every face, one of them turned three-quarters, one leaning), and heads rolled 30 degrees either
way (the picture turned in its plane: ``quality_pictures``). Each target is analysed with the
installed default models, every face is swapped with the classic swapper and composited with the
default blend settings, exactly as `facecache swap --selector many` does, and each swapped face
is measured (``quality_metrics``). Averages hide the face a viewer stops at, so the worst face of
each measure is reported beside the mean:

  identity_closer_share   frontal faces (yaw up to 30 degrees) whose embedding is closer to the
                          source than to the original face (needs a recognizer)   goal >= 0.9
  identity_margin_mean    their mean of cos(swapped, source) - cos(swapped, target)
  identity_closer_share_all  the same share over every swapped face
  clipped_fraction        face pixels with a channel newly clipped at 0/255   goal <= 0.001
  sharpness_ratio         detail of the swapped face / the source's at that size  goal >= 0.8
  sharpness_worst         the least of them
  expression_error        the mean of landmark_shift                            goal <= 0.05
  landmark_shift_worst    where the face went: the face found again on the swapped picture by
                          the detector alone, its 68 landmarks (or 5 key points) against the
                          target's own, in eye distances (a smear or a fold shows here); the
                          worst face                                            goal <= 0.10
  faces_lost              swapped faces the detector no longer finds
  independent_shift_worst the same, checked with a model the swap does not use (MediaPipe's BlazeFace,
                          ``analysis.blazeface``): its eyes, nose tip and mouth centre found on the
                          swapped face against the same model's points on the original, each
                          found in the same windows around the target face, in the original's
                          eye distances; the worst face                       goal <= 0.12
  independent_lost        swapped faces where it finds a face on the original but none on the swap
  eye_opening_change_worst  how far the swap moved the lids: each eye read by a model the classic swap does
                          not use (MediaPipe's iris model, ``analysis.iris``; classic_eyes moves the eyes by
                          it, so for that swapper ``eye_check_independent`` is false) on the original and on the swapped
                          picture, in the same square around the target's eye; the change of the lids'
                          opening over the iris, in eye widths (a lowered lid given the source's open eye
                          shows here); the worst face                         goal <= 0.05
  iris_shift_worst        the same eyes' iris centres, swapped against original, in eye widths (eyes that
                          stare where the target looks away); the worst face   goal <= 0.1
  open_mouths_kept        target faces with an open mouth whose swap keeps it open
  seam_ratio              colour step across the mask's edge / the target's   goal <= 1.5
  seam_worst              the same per part of the edge (forehead, temples, jaw); the worst
                          part of the worst face                              goal <= 1.5
  top_edge_step_worst     the brightness step across the mask's top edge (the forehead's, where a
                          band shows) / the original's at the same place, on a profile averaged
                          along the edge (``quality_metrics.top_edge_step``); the worst face
                                                                              goal <= 1.6
  leftover_worst          the target's strong edges (glasses' arms, its jaw line) in a ring
                          just outside the swapped face / the same ring of the source's own
                          picture; the worst face
  by_pose                 the worst figure of each face goal among frontal faces (yaw and roll within
                          POSE_DEGREES), turned ones (yaw beyond) and rolled ones (roll beyond): whether a
                          turned or rolled head swaps as cleanly as a frontal one
  ms_per_face             the swapper plus the composite, per face (median; depends on the load)
  cpu_ms_per_face         the same as CPU time on one OpenCV thread (median over the faces): the
                          cost per face to compare versions by, which the load barely moves

Faces turned further than the swapper's yaw limit are left as they are and listed, not measured.
The output folder gets a side-by-side PNG per pair (target | swapped | source), a contact sheet
of every swapped face at twice its size with its figures (``contact_sheet.png``), and the five
faces furthest from the goals on their own (``worst_1.png`` ...).
"""

from __future__ import annotations

import math
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

import cv2
import numpy as np

from facecache.analysis.analyzer import FaceAnalyzer
from facecache.analysis.blazeface import BlazeFaceChecker
from facecache.analysis.boxes import overlaps
from facecache.analysis.iris import IrisChecker
from facecache.bench import quality_metrics as qm
from facecache.bench import quality_sheet as sheet
from facecache.bench.quality_checks import (CHECK_MODEL, EYE_MODEL, FRONTAL_YAW, eye_changes, eyes_read,
                                            independent_shift, rounded as _rounded)
from facecache.bench.quality_pictures import Pair, source_path, target_picture
from facecache.bench.timing import median_ms
from facecache.pipeline import Parts, Pipeline, Settings, build_analyzer, build_pipeline
from facecache.samples import SAMPLES
from facecache.store.records import Face, FrameRecord, Stage
from facecache.swap.composite import overlay, paste_back
from facecache.swap.sources import SourceSet

PAIRS = (
    Pair("grace_hopper", "astronaut"),
    Pair("astronaut", "grace_hopper"),
    Pair("portrait_112", "grace_hopper", 1080),
    Pair("grace_hopper", "group"),
    Pair("astronaut", "group"),
    Pair("portrait_112", "group", 1080),
    # heads rolled in the picture's plane, either way; a rolled source; glasses and a roll together
    Pair("grace_hopper", "astronaut", roll=30),
    Pair("grace_hopper", "astronaut", roll=-30),
    Pair("astronaut", "grace_hopper", roll=-30),
    Pair("astronaut", "grace_hopper", source_roll=30),
)
# Identity photos (issue 14's samples), used when the samples catalogue has them: one more source
# onto the target with glasses, and a rolled close-up.
IDENTITY_PAIRS = (Pair("obama", "biden"), Pair("biden", "obama2"), Pair("obama", "grace_hopper"),
                  Pair("biden", "obama", roll=30))
# Held out (`--held-out`): other pairs of the same samples, never looked at while the swap is tuned,
# to check that what the bench's pairs show holds beyond them: sources onto other targets, other
# sizes and rolls.
HELD_OUT_PAIRS = (
    Pair("obama3", "group"),
    Pair("obama3", "grace_hopper", roll=-30),
    Pair("biden", "group", 720),
    Pair("obama2", "astronaut"),
    Pair("portrait_112", "astronaut"),
    Pair("grace_hopper", "obama3"),
    Pair("astronaut", "biden", roll=20),
    Pair("obama", "group", 1080, roll=15),
)
# A second check (`--second-check`): eight more pairs of the same samples, first run only on the
# code the held-out pairs had checked (docs/quality.md), then kept to check each change again.
SECOND_CHECK_PAIRS = (
    Pair("biden", "grace_hopper", roll=-20),
    Pair("astronaut", "obama2"),
    Pair("portrait_112", "obama3"),
    Pair("obama2", "group", 720, roll=-15),
    Pair("grace_hopper", "biden"),
    Pair("obama3", "astronaut", roll=30),
    Pair("biden", "group", 1080, roll=-10),
    Pair("astronaut", "obama3", roll=-15),
)
# Targets whose eyes do what the swap must follow (`--eye-targets`): frames of a real clip of one woman
# who looks down (frame 12), closes her eyes (36 frowning, 444 smiling), glances up and aside (300) and
# looks aside (384), and, for comparison, looks up with open eyes (324).
EYE_TARGET_PAIRS = (
    Pair("astronaut", "eyes_clip", target_frame=12),
    Pair("obama", "eyes_clip", target_frame=36),
    Pair("grace_hopper", "eyes_clip", target_frame=300),
    Pair("biden", "eyes_clip", target_frame=384),
    Pair("astronaut", "eyes_clip", target_frame=444),
    Pair("grace_hopper", "eyes_clip", target_frame=324),
)

GOALS = {
    "identity_closer_share": (">=", 0.9),
    "clipped_fraction": ("<=", 0.001),
    "sharpness_ratio": (">=", 0.8),
    "expression_error": ("<=", 0.05),
    "landmark_shift_worst": ("<=", 0.10),
    "seam_ratio": ("<=", 1.5),
    "seam_worst": ("<=", 1.5),
    "independent_shift_worst": ("<=", 0.12),
    "top_edge_step_worst": ("<=", 1.6),
    "eye_opening_change_worst": ("<=", 0.05),
    "iris_shift_worst": ("<=", 0.1),
}
# What each face is held to when the worst faces are chosen (its figure against the goal).
FACE_GOALS = {"landmark_shift": ("<=", 0.10), "seam_worst": ("<=", 1.5), "leftover_ratio": ("<=", 1.5),
              "sharpness_ratio": (">=", 0.8), "independent_shift": ("<=", 0.12), "top_edge_step": ("<=", 1.6),
              "eye_opening_change": ("<=", 0.05), "iris_shift": ("<=", 0.1)}
WORST_KEPT = 5
TIMING_REPEATS = 3
# `by_pose`: a face turned (yaw) or rolled further than this is not frontal.
POSE_DEGREES = 15.0
# A face found again on the swapped picture: the detection whose box overlaps the target face's
# most, at least this much.
_FOUND_IOU = 0.3
_PANEL_HEIGHT = 256


def default_pairs() -> tuple[Pair, ...]:
    return PAIRS + _available(IDENTITY_PAIRS)


def held_out_pairs() -> tuple[Pair, ...]:
    return _available(HELD_OUT_PAIRS)


def second_check_pairs() -> tuple[Pair, ...]:
    return _available(SECOND_CHECK_PAIRS)


def eye_target_pairs() -> tuple[Pair, ...]:
    return _available(EYE_TARGET_PAIRS)


def _available(pairs: tuple[Pair, ...]) -> tuple[Pair, ...]:
    return tuple(p for p in pairs if p.source in SAMPLES and p.target in SAMPLES)


def run(out_dir: Path, models_dir: Path | None = None, providers: str = "auto", swapper: str = "classic",
        pairs: tuple[Pair, ...] | None = None, say: Callable[[str], None] = lambda _: None) -> dict:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    parts = Parts()
    store = parts.model_store(str(models_dir) if models_dir else None)
    store.install(["default", "check"])
    sessions = parts.sessions(providers)
    checker = BlazeFaceChecker(store.session(sessions, store.model(CHECK_MODEL)), model=CHECK_MODEL)
    eyes = IrisChecker(store.session(sessions, store.model(EYE_MODEL)), model=EYE_MODEL)
    pairs = default_pairs() if pairs is None else pairs
    with tempfile.TemporaryDirectory(prefix="facecache-quality-") as cache_dir:
        # every face, with the default blend settings, as `facecache swap --selector many` does
        settings = Settings(cache_dir=cache_dir, models_dir=str(models_dir) if models_dir else None,
                            providers=providers, swapper=swapper, selector="many")
        analyzer = build_analyzer(settings, parts)
        faces, turned, per_pair, rows = [], [], [], []
        for pair in pairs:
            say(f"{pair.label}")
            source = source_path(pair, Path(cache_dir))
            pipeline = build_pipeline(replace(settings, sources=(str(source),)), parts)
            measured, left, pair_rows = _measure_pair(pair, pipeline, checker, eyes, out_dir)
            faces += measured
            turned += left
            rows += pair_rows
            per_pair.append({"pair": pair.label, "faces": len(measured), "turned_away": len(left),
                             "picture": str(out_dir / f"{pair.label}.png")})
    result = summarise(faces)
    result.update(swapper=swapper, pairs=per_pair, faces_turned_away=turned,
                  models={"landmarker": analyzer.models.settings.get("landmarker"),
                          "recognizer": analyzer.models.settings.get("recognizer"), "check": CHECK_MODEL,
                          "eye_check": EYE_MODEL},
                  eye_check_independent=swapper != "classic_eyes",  # that swapper moves the eyes by the same model
                  out=str(out_dir), per_face=faces, **_write_sheets(out_dir, faces, rows))
    return result


def summarise(faces: list[dict]) -> dict:
    """The figures over every measured face; None where no face could be measured for one."""
    def values(key):
        return [f[key] for f in faces if f.get(key) is not None]

    def mean(key):
        found = values(key)
        return round(float(np.mean(found)), 4) if found else None

    def extreme(key, pick):
        found = values(key)
        return round(float(pick(found)), 4) if found else None

    measured = [f for f in faces if f.get("identity_margin") is not None]
    identity = [f for f in measured if f.get("yaw") is None or abs(f["yaw"]) <= FRONTAL_YAW]
    clipped = sum(f["clipped_pixels"] for f in faces)
    region = sum(f["face_pixels"] for f in faces)
    open_mouths = [f for f in faces if f.get("target_mouth_open")]
    lost = sum(1 for f in faces if f.get("found_again") is False)
    result = {
        "faces": len(faces),
        "identity_closer_share": round(sum(f["identity_margin"] > 0 for f in identity) / len(identity), 4)
        if identity else None,
        "identity_margin_mean": round(float(np.mean([f["identity_margin"] for f in identity])), 4)
        if identity else None,
        "identity_closer_share_all": round(sum(f["identity_margin"] > 0 for f in measured) / len(measured), 4)
        if measured else None,
        "clipped_fraction": round(clipped / region, 6) if region else None,
        "sharpness_ratio": mean("sharpness_ratio"),
        "sharpness_worst": extreme("sharpness_ratio", min),
        "expression_error": mean("landmark_shift"),
        "landmark_shift_worst": extreme("landmark_shift", max),  # of the faces found again
        "faces_lost": lost,
        "independent_shift": mean("independent_shift"),
        "independent_shift_worst": extreme("independent_shift", max),
        "independent_lost": sum(1 for f in faces if f.get("independent_found") is False),
        "open_mouths": len(open_mouths),
        "open_mouths_kept": sum(bool(f.get("mouth_kept_open")) for f in open_mouths),
        "seam_ratio": mean("seam_ratio"),
        "seam_worst": extreme("seam_worst", max),
        "top_edge_step": mean("top_edge_step"),
        "top_edge_step_worst": extreme("top_edge_step", max),
        "eye_opening_change": mean("eye_opening_change"),
        "eye_opening_change_worst": extreme("eye_opening_change", max),
        "iris_shift": mean("iris_shift"),
        "iris_shift_worst": extreme("iris_shift", max),
        "leftover_ratio": mean("leftover_ratio"),
        "leftover_worst": extreme("leftover_ratio", max),
        "ms_per_face": round(statistics.median(f["ms"] for f in faces), 2) if faces else None,
        "cpu_ms_per_face": round(statistics.median(f["cpu_ms"] for f in faces), 2)
        if faces and all("cpu_ms" in f for f in faces) else None,
    }
    result["by_pose"] = by_pose(faces)
    result["goals"] = {key: f"{sign} {value}" for key, (sign, value) in GOALS.items()}
    result["goals_met"] = {key: (None if result[key] is None else _meets(result[key], sign, value))
                           for key, (sign, value) in GOALS.items()}
    if lost:  # a face the detector no longer finds is as far off as a face can be
        result["goals_met"]["landmark_shift_worst"] = False
    if result["independent_lost"]:
        result["goals_met"]["independent_shift_worst"] = False
    return result


def by_pose(faces: list[dict]) -> dict:
    """Per pose (frontal, turned, rolled: a face turned and rolled is both), how many faces and the worst of
    each face goal's figure among them (the highest, or the lowest where the goal is a least)."""
    def pose(face, key):
        return abs(face[key]) if face.get(key) is not None else 0.0

    groups = {"frontal": [f for f in faces if pose(f, "yaw") <= POSE_DEGREES and pose(f, "roll") <= POSE_DEGREES],
              "turned": [f for f in faces if pose(f, "yaw") > POSE_DEGREES],
              "rolled": [f for f in faces if pose(f, "roll") > POSE_DEGREES]}
    table = {}
    for name, members in groups.items():
        row = {"faces": len(members)}
        for key, (sign, _) in FACE_GOALS.items():
            found = [f[key] for f in members if f.get(key) is not None]
            row[key] = round(float((max if sign == "<=" else min)(found)), 4) if found else None
        table[name] = row
    return table


def _meets(value: float, sign: str, goal: float) -> bool:
    return value >= goal if sign == ">=" else value <= goal


def shortfall(face: dict) -> float | None:
    """How far a face is from the goals it is held to (FACE_GOALS): its worst figure over its
    goal (or the goal over it, for the figures that should be high); above 1, a goal is missed.
    None for a face the detector or the independent check lost (further than any)."""
    if face.get("found_again") is False or face.get("independent_found") is False:
        return None
    ratios = [0.0]
    for key, (sign, goal) in FACE_GOALS.items():
        value = face.get(key)
        if value is not None:
            ratios.append(value / goal if sign == "<=" else goal / max(value, 1e-6))
    return max(ratios)


def _measure_pair(pair: Pair, pipeline: Pipeline, checker: BlazeFaceChecker, eye_checker: IrisChecker,
                  out_dir: Path) -> tuple[list[dict], list[dict], list]:
    analyzer, sources, swapper = pipeline.analyzer, pipeline.sources, pipeline.swapper
    source = sources.faces[0]
    # The classic swapper needs no source identity; measuring one does (from the cache, plus the embedding).
    sources = SourceSet.load([face.path for face in sources.faces], analyzer, embeddings=True)
    frame = target_picture(pair)
    record = analyzer.analyze_frame(frame)
    params = pipeline.settings.composite
    chosen = pipeline.selector.select(record.faces, record.width, record.height)
    kept, left = swapper.split_turned(chosen)
    results, timings = [], []
    for face in kept:
        def swap_one(face=face):
            result = swapper.swap(frame, face)
            paste_back(frame, [result], params)
            return result
        results.append(swap_one())  # the first run loads and prepares; the timed runs follow
        timings.append((median_ms(swap_one, TIMING_REPEATS), _one_thread_cpu_ms(swap_one)))
    output = paste_back(frame, results, params)
    found = _found_again(analyzer, output, kept)
    checked = zip(checker.find(frame, [face.box for face in kept]), checker.find(output, [face.box for face in kept]))
    eyes = eyes_read(eye_checker, frame, output, kept)
    measured, rows = [], []
    for number, (face, result, (ms, cpu_ms), again, check, eye_pairs) in enumerate(
            zip(kept, results, timings, found, checked, eyes), 1):
        entry = {"pair": pair.label, "face": number, "cpu_ms": round(cpu_ms, 2)}
        entry.update(_measure_face(frame, output, face, result, params, source, sources, analyzer, ms, again))
        entry.update(independent_shift(*check))
        entry.update(eye_changes(eye_pairs))
        far = shortfall(entry)
        entry["shortfall"] = None if far is None else round(far, 3)
        measured.append(entry)
        views = sheet.face_views(frame, output, face.box, source.image, source.face.box)
        rows.append(sheet.row(views, _figure_lines(entry)))
    _write_side_by_side(out_dir / f"{pair.label}.png", frame, output, kept, source)
    turned = [{"pair": pair.label, "box": [round(float(v)) for v in face.box],
               "yaw": None if face.pose is None else round(float(face.pose[1]), 1)} for face in left]
    return measured, turned, rows


def _one_thread_cpu_ms(action: Callable[[], object]) -> float:
    """``action``'s median CPU time with OpenCV on one thread: the cost of the work itself, which
    neither the cores other programs leave free nor idle worker threads change."""
    threads = cv2.getNumThreads()
    cv2.setNumThreads(1)
    try:
        return median_ms(action, TIMING_REPEATS, time.process_time)
    finally:
        cv2.setNumThreads(threads)


def _found_again(analyzer: FaceAnalyzer, output: np.ndarray, faces: list[Face]) -> list[Face | None]:
    """Each face as the detector alone finds it on the swapped picture (its box and key points,
    nothing carried over from the target's analysis), or None where it finds none there."""
    detections = analyzer.models.get("detector").detect(output)
    found = []
    for face in faces:
        ious = overlaps(face.box, [d.box for d in detections])
        best = int(np.argmax(ious)) if len(ious) else -1
        found.append(Face(box=detections[best].box, score=detections[best].score, kps5=detections[best].kps5)
                     if best >= 0 and ious[best] >= _FOUND_IOU else None)
    return found


def _measure_face(frame, output, face, result, params, source, sources, analyzer, ms, again: Face | None) -> dict:
    alpha = overlay(frame, [result], params)[..., 3].astype(np.float32) / 255.0
    region = alpha > 0
    # the source as the swap read it: mirrored when it is turned the other way from the target
    mirror = qm.read_mirrored(source.face.kps5, source.face.landmarks68, face.kps5, face.landmarks68)
    resampled = qm.source_in_frame(source.image, source.face.kps5, face.kps5, frame.shape, mirror)
    clipped, pixels = qm.newly_clipped(output, resampled, frame, region)
    eyes = qm.face_axes(face.kps5)[3]
    seam_whole, seams = qm.seam_ratios(output, frame, alpha, face.kps5)
    entry = {"box": [round(float(v)) for v in face.box], "ms": round(ms, 2),
             "yaw": None if face.pose is None else round(float(face.pose[1]), 1),
             "roll": None if face.pose is None else round(float(face.pose[2]), 1), "source_mirrored": mirror,
             "clipped_pixels": clipped, "face_pixels": pixels,
             "sharpness_ratio": _rounded(qm.sharpness_ratio(output, resampled, alpha)),
             "seam_ratio": _rounded(seam_whole),
             "seams": {part: _rounded(value) for part, value in seams.items()},
             "seam_worst": _rounded(max(seams.values())) if seams else None,
             "top_edge_step": _rounded(qm.top_edge_step(output, frame, alpha, face.kps5)),
             "leftover_ratio": _rounded(qm.leftover_ratio(output, resampled, alpha, eyes))}
    # the face as the analysis sees it there: None when the landmarker sees no face at all
    swapped = _reanalysed(analyzer, output, again if again is not None else face)
    entry["found_again"] = again is not None and swapped is not None
    if swapped is None:
        return entry
    if swapped.embedding is not None and sources.embedding is not None and face.embedding is not None:
        entry["identity_margin"] = _rounded(qm.identity_margin(swapped.embedding, sources.embedding, face.embedding))
    if again is not None:
        entry["kps5_shift"] = _rounded(qm.point_shift(again.kps5, face.kps5, eyes))
        entry["landmark_shift"] = entry["kps5_shift"]
    if swapped.landmarks68 is not None and face.landmarks68 is not None:
        if again is not None:
            entry["landmark_shift"] = _rounded(qm.landmark_error(swapped.landmarks68, face.landmarks68))
        opening = qm.mouth_opening(face.landmarks68)
        entry["target_mouth_open"] = opening > qm.OPEN_MOUTH
        entry["mouth_kept_open"] = qm.mouth_opening(swapped.landmarks68) > 0.5 * opening
    return entry


def _reanalysed(analyzer: FaceAnalyzer, image: np.ndarray, face: Face) -> Face | None:
    """The face at ``face``'s box and key points in ``image``, with its 68 landmarks and embedding
    found by the analysis's own models, as the analysis finds them; None when its landmarker sees
    no face there (the analysis would drop it)."""
    height, width = image.shape[:2]
    record = FrameRecord("0" * 32, Stage.DETECT, height, width, [Face(box=face.box, score=face.score, kps5=face.kps5)])
    faces = analyzer.complete(record, image, record.fingerprint, Stage.LANDMARK68 | Stage.EMBED).faces
    return faces[0] if faces else None



def _figure_lines(face: dict) -> list[str]:
    """A face's figures, for the contact sheet."""
    def shown(key, digits=2):
        value = face.get(key)
        return "-" if value is None else f"{value:.{digits}f}"

    seams = " ".join(f"{part} {value:.2f}" for part, value in face["seams"].items())
    place = f"yaw {face['yaw']} roll {face['roll']}" if face.get("yaw") is not None else "no pose"
    moved = shown("landmark_shift", 3) if face["found_again"] else "LOST (no face found)"
    checked = "LOST" if face.get("independent_found") is False else shown("independent_shift", 3)
    far = "lost" if face["shortfall"] is None else f"{face['shortfall']:.2f}"
    return [f"{face['pair']} face {face['face']}  {place}  {face['ms']:.0f} ms  shortfall {far}",
            f"moved {moved} (independent {checked}) eye dist.  seams {seams or '-'}  top edge {shown('top_edge_step')}",
            f"leftovers {shown('leftover_ratio')}  sharpness {shown('sharpness_ratio')}  "
            f"identity {shown('identity_margin', 3)}",
            f"eyes: lids moved {shown('eye_opening_change', 3)} (target open "
            f"{'/'.join(f'{v:.2f}' for v in face.get('eye_opening_target', [])) or '-'})  "
            f"iris moved {shown('iris_shift', 3)} eye widths"]


def _write_sheets(out_dir: Path, faces: list[dict], rows: list) -> dict:
    """The contact sheet of every face and the worst WORST_KEPT faces on their own; their paths."""
    if not rows:
        return {"contact_sheet": None, "worst_faces": []}
    contact = sheet.write(out_dir / "contact_sheet.png", sheet.stack(rows))
    far = [math.inf if face["shortfall"] is None else face["shortfall"] for face in faces]
    order = sorted(range(len(faces)), key=lambda i: -far[i])[:WORST_KEPT]
    worst = []
    for rank, index in enumerate(order, 1):
        path = sheet.write(out_dir / f"worst_{rank}.png", rows[index])
        worst.append({"pair": faces[index]["pair"], "face": faces[index]["face"],
                      "shortfall": faces[index]["shortfall"], "picture": str(path)})
    return {"contact_sheet": str(contact), "worst_faces": worst}


def _write_side_by_side(path: Path, frame: np.ndarray, output: np.ndarray, faces, source) -> None:
    """target | swapped | source, around the swapped faces (or the whole picture when none), smoothed."""
    boxes = [face.box for face in faces]
    views = (sheet.around(frame, boxes), sheet.around(output, boxes), sheet.around(source.image, [source.face.box]))
    sheet.write(path, sheet.beside([sheet.to_height(view, _PANEL_HEIGHT, cv2.INTER_CUBIC) for view in views],
                                   gap=4, colour=255))
