"""`facecache analyze MEDIA... [--frames A-B] [--faces] [--json | --pretty]`.

`--json` prints JSON Lines, so a long clip can be read line by line: one object a frame
(`"type": "frame"`), then one summary (`"type": "summary"`, the last line). `--pretty` prints the same
as one indented document: the summary, each media's frames in its `per_frame`."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from facecache import protocol
from facecache.analysis.analyzer import check_frames
from facecache.cli.common import (add_cache_options, add_command, add_model_options, add_picture_option,
                                  add_remote_options, parse_frame_range, print_json)
from facecache.media.picture_rules import picture_rules
from facecache.jobs.run_summary import describe_run
from facecache.gpu.status import session_report
from facecache.pipeline import Parts, Settings, build_analyzer, end_of_job
from facecache.progress import ProgressLine
from facecache.store.records import Face


def register(commands) -> None:
    parser = add_command(commands, "analyze", "detect faces, landmarks, embeddings and pose, through the cache")
    parser.add_argument("media", nargs="+", type=Path, metavar="MEDIA", help="still images or videos")
    parser.add_argument("--frames", type=parse_frame_range, default=None,
                        help="media frame range A-B (inclusive) of each video; default: all frames")
    parser.add_argument("--faces", action="store_true",
                        help="print every frame's faces: box, score, landmarks, head pose, whether an "
                             "embedding is cached")
    add_cache_options(parser)
    add_remote_options(parser)
    add_model_options(parser)
    add_picture_option(parser)
    parser.add_argument("--json", action="store_true",
                        help="print JSON Lines: one object a frame, then the summary as the last line")
    parser.add_argument("--pretty", action="store_true",
                        help="print one indented JSON document instead: the summary, each media's frames in it")
    parser.set_defaults(run=run_analyze)


def face_json(face: Face) -> dict:
    """One cached face as plain JSON: what the analysis stored for it."""
    def points(array):
        return None if array is None else [[round(float(x), 2), round(float(y), 2)] for x, y in array]

    pose = None
    if face.pose is not None:
        pose = {name: round(float(value), 2) for name, value in zip(("pitch", "yaw", "roll"), face.pose)}
    return {"box": [round(float(v), 2) for v in face.box], "score": round(float(face.score), 5),
            "kps5": points(face.kps5), "landmarks68": points(face.landmarks68), "pose": pose,
            "embedding_cached": face.embedding is not None}


def frame_json(index: int, faces: list[Face], details: bool) -> dict:
    """One analysed frame: its media frame index, how many faces, and (`details`) each face."""
    frame = {"frame": index, "face_count": len(faces)}
    if details:
        frame[protocol.FACES] = [face_json(face) for face in faces]
    return frame


def run_analyze(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    settings = Settings.from_args(args)
    for path in args.media:  # every file and range checked before any work starts
        check_frames(path, args.frames, picture_rules(settings.picture_rules))
    parts = Parts()
    analyzer = build_analyzer(settings, parts)
    per_media = []
    for path in args.media:
        frames = analyzer.analyze_media(path, args.frames, progress=ProgressLine(path.name),
                                        deinterlace=args.deinterlace)
        per_frame = [frame_json(f.index, f.record.faces, args.faces) for f in frames]
        if args.json and not args.pretty:  # each media's frames as soon as they are known
            for frame in per_frame:
                print_json(args, {protocol.TYPE: "frame", protocol.MEDIA: str(path), **frame})
        per_media.append({protocol.MEDIA: str(path), protocol.FRAMES: len(frames),
                          protocol.FACES: sum(frame["face_count"] for frame in per_frame), "per_frame": per_frame})
    summary = {
        protocol.FRAMES: sum(m[protocol.FRAMES] for m in per_media),
        protocol.FACES: sum(m[protocol.FACES] for m in per_media),
        **analyzer.stats.as_dict(),
        protocol.ANALYSIS_CACHE: analyzer.stats.as_dict(),
        protocol.INFERENCES: analyzer.inferences.as_dict(),
        protocol.SECONDS: round(time.perf_counter() - start, 3),
        protocol.MEDIA: per_media,
        **end_of_job(analyzer.cache),
        **session_report(parts.sessions(settings.providers)),  # where the models ran, and a GPU fallback
    }
    if args.pretty:
        print_json(args, summary, indent=2)
        return 0
    if args.json:
        media = [{key: value for key, value in m.items() if key != "per_frame"} for m in per_media]
        print_json(args, {protocol.TYPE: "summary", **summary, protocol.MEDIA: media})
        return 0
    for m in per_media:
        print(f"{m[protocol.MEDIA]}: {m[protocol.FRAMES]} frames, {m[protocol.FACES]} faces")
        for frame in m["per_frame"]:
            for number, face in enumerate(frame.get(protocol.FACES, ())):
                print("  " + _face_line(frame["frame"], number, face))
    print(describe_run(summary))
    return 0


def _face_line(frame: int, number: int, face: dict) -> str:
    x1, y1, x2, y2 = face["box"]
    pose = face["pose"]
    turned = (f"pitch {pose['pitch']:+.0f}, yaw {pose['yaw']:+.0f}, roll {pose['roll']:+.0f} deg"
              if pose else "no pose")
    marks = "68 landmarks" if face["landmarks68"] else "5 key points"
    embedding = "embedding cached" if face["embedding_cached"] else "no embedding"
    return (f"frame {frame} face {number}: box {x1:.0f},{y1:.0f}-{x2:.0f},{y2:.0f} score {face['score']:.3f}; "
            f"{marks}; {turned}; {embedding}")
