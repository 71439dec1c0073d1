"""`facecache analyze MEDIA... [--frames A-B] [--json]`."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from facecache.analysis.analyzer import FaceAnalyzer
from facecache.analysis.factory import AnalysisSettings, build_model_set
from facecache.cli.common import (ProgressLine, add_cache_options, add_model_options, open_cache,
                                  parse_frame_range, print_json)
from facecache.models.runtime import SessionFactory
from facecache.models.store import ModelStore


def register(commands) -> None:
    parser = commands.add_parser("analyze", help="detect faces, landmarks, embeddings and pose, through the cache")
    parser.add_argument("media", nargs="+", type=Path, metavar="MEDIA", help="still images or videos")
    parser.add_argument("--frames", type=parse_frame_range, default=None,
                        help="media frame range A-B (inclusive) of each video; default: all frames")
    add_cache_options(parser)
    add_model_options(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run_analyze)


def analyzer_from_args(args: argparse.Namespace) -> FaceAnalyzer:
    settings = AnalysisSettings(detector=args.detector, landmarker=args.landmarker, recognizer=args.recognizer)
    models = build_model_set(ModelStore(args.models_dir), SessionFactory(args.providers), settings)
    return FaceAnalyzer(open_cache(args), models)


def run_analyze(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    analyzer = analyzer_from_args(args)
    per_media = []
    for path in args.media:
        frames = analyzer.analyze_media(path, args.frames, progress=ProgressLine(path.name))
        per_media.append({"media": str(path), "frames": len(frames),
                          "faces": sum(len(f.record.faces) for f in frames),
                          "faces_per_frame": [len(f.record.faces) for f in frames][:1000]})
    summary = {
        "frames": sum(m["frames"] for m in per_media),
        "faces": sum(m["faces"] for m in per_media),
        **analyzer.stats.as_dict(),
        "inferences": analyzer.inferences.as_dict(),
        "seconds": round(time.perf_counter() - start, 3),
        "media": per_media,
    }
    if args.json:
        print_json(summary)
    else:
        for m in per_media:
            print(f"{m['media']}: {m['frames']} frames, {m['faces']} faces")
        inf = summary["inferences"]
        print(f"cache: {summary['hits']} hits, {summary['partial_hits']} partial, {summary['misses']} misses; "
              f"model runs: detect {inf['detect']}, landmark {inf['landmark']}, embed {inf['embed']}; "
              f"{summary['seconds']:.2f} s")
    return 0
