"""`facecache analyze MEDIA... [--frames A-B] [--faces] [--json]`."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from facecache.analysis.analyzer import check_frames
from facecache.cli.common import add_cache_options, add_command, add_model_options, parse_frame_range, print_json
from facecache.jobs.run_summary import describe_run
from facecache.pipeline import Settings, build_analyzer
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
    add_model_options(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
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


def run_analyze(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    settings = Settings.from_args(args)
    for path in args.media:  # every file and range checked before any work starts
        check_frames(path, args.frames)
    analyzer = build_analyzer(settings)
    per_media = []
    for path in args.media:
        frames = analyzer.analyze_media(path, args.frames, progress=ProgressLine(path.name))
        entry = {"media": str(path), "frames": len(frames), "faces": sum(len(f.record.faces) for f in frames),
                 "faces_per_frame": [len(f.record.faces) for f in frames][:1000]}
        if args.faces:
            entry["per_frame"] = [{"frame": f.index, "faces": [face_json(face) for face in f.record.faces]}
                                  for f in frames]
        per_media.append(entry)
    summary = {
        "frames": sum(m["frames"] for m in per_media),
        "faces": sum(m["faces"] for m in per_media),
        **analyzer.stats.as_dict(),
        "analysis_cache": analyzer.stats.as_dict(),
        "inferences": analyzer.inferences.as_dict(),
        "seconds": round(time.perf_counter() - start, 3),
        "media": per_media,
    }
    if args.json:
        print_json(args, summary)
        return 0
    for m in per_media:
        print(f"{m['media']}: {m['frames']} frames, {m['faces']} faces")
        for frame in m.get("per_frame", []):
            for number, face in enumerate(frame["faces"]):
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
