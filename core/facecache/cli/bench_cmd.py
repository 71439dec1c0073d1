"""`facecache bench [SUITE] [--json]`: measured figures for docs/benchmarks.md.

Suites: `pipeline` (the default: what the cache saves on the main job, real
models and photographs), `cache` (what the cache itself costs), `quality`
(how good the default swap looks, on real photographs), `decode` (what reading a
movie as Blender shows it costs, against OpenCV's decoder), `movie` (what a
movie `--out` costs per frame: the H.264 and ProRes encoders) and `tracking` (what
following faces costs and loses against detection on every frame, per clip).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from facecache import choices
from facecache.bench import cache_bench, decode_bench, movie_bench, pipeline_bench, quality_bench, tracking_bench
from facecache.cli.common import add_command, print_json

CACHE_DEFAULT_FRAMES = 300


def _run_pipeline(args: argparse.Namespace) -> dict:
    say = (lambda message: print(f"bench: {message}", file=sys.stderr, flush=True))
    return pipeline_bench.run(frames=args.frames or pipeline_bench.DEFAULT_FRAMES, cache_dir=args.cache_dir,
                              models_dir=args.models_dir, providers=args.providers, size=args.size,
                              faces=args.faces, say=say)


def _run_cache(args: argparse.Namespace) -> dict:
    return cache_bench.run(frames=args.frames or CACHE_DEFAULT_FRAMES, cache_dir=args.cache_dir,
                           compare_dir=args.compare_dir)


def _run_quality(args: argparse.Namespace) -> dict:
    say = (lambda message: print(f"bench quality: {message}", file=sys.stderr, flush=True))
    pairs = (quality_bench.held_out_pairs() if args.held_out else
             quality_bench.second_check_pairs() if args.second_check else
             quality_bench.eye_target_pairs() if args.eye_targets else None)
    return quality_bench.run(out_dir=args.out, models_dir=args.models_dir, providers=args.providers, pairs=pairs,
                             swapper=args.swapper, say=say)


def _run_decode(args: argparse.Namespace) -> dict:
    return decode_bench.run(args.cache_dir)


def _run_movie(args: argparse.Namespace) -> dict:
    say = (lambda message: print(f"bench movie: {message}", file=sys.stderr, flush=True))
    return movie_bench.run(frames=args.frames or movie_bench.DEFAULT_FRAMES, size=args.size, say=say)


def _run_tracking(args: argparse.Namespace) -> dict:
    say = (lambda message: print(f"bench tracking: {message}", file=sys.stderr, flush=True))
    return tracking_bench.run(models_dir=args.models_dir, providers=args.providers,
                              frames=args.frames or tracking_bench.DEFAULT_FRAMES, say=say)


SUITES = {"pipeline": _run_pipeline, "cache": _run_cache, "quality": _run_quality, "decode": _run_decode,
          "movie": _run_movie, "tracking": _run_tracking}


def register(commands) -> None:
    parser = add_command(commands, "bench",
                         "measure what the cache saves and costs, the swap's quality, and the movie encoders")
    parser.add_argument("suite", nargs="?", choices=sorted(SUITES), default="pipeline",
                        help="which benchmark to run (default: pipeline)")
    parser.add_argument("--frames", type=int, default=None,
                        help=f"frames in the benchmark clip (default: pipeline {pipeline_bench.DEFAULT_FRAMES}, "
                             f"of which the first 1/1.1 are the first range and the rest the 10%% extension; "
                             f"cache {CACHE_DEFAULT_FRAMES}, movie {movie_bench.DEFAULT_FRAMES})")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="put the run's cache in a temporary folder under this one (e.g. a network mount)")
    parser.add_argument("--compare-dir", type=Path, default=None,
                        help="cache suite: also run the warm read in a folder under this one (a network mount) "
                             "and compare it with local disk")
    parser.add_argument("--models-dir", type=Path, default=None,
                        help="models folder for the pipeline suite (default: per-user data folder)")
    parser.add_argument("--providers", default="auto", help="ONNX Runtime providers for the pipeline suite "
                                                            "(auto, cpu, cuda, tensorrt; default auto)")
    parser.add_argument("--size", type=_parse_size, default=pipeline_bench.FULL_HD,
                        help="pipeline and movie suites: the clip's WIDTHxHEIGHT (default 1920x1080; 3840x2160 "
                             "for 4K)")
    parser.add_argument("--faces", type=_positive, default=1,
                        help="pipeline suite: faces in every frame of the clip, tiled from the sample portraits "
                             "(default 1)")
    parser.add_argument("--out", type=Path, default=Path("bench-quality"),
                        help="quality suite: folder for the side-by-side pictures (default ./bench-quality)")
    picture_set = parser.add_mutually_exclusive_group()
    picture_set.add_argument("--held-out", action="store_true",
                             help="quality suite: the held-out pairs instead of the bench's own (a check that what "
                                  "the bench shows holds on pictures it was not tuned on)")
    picture_set.add_argument("--second-check", action="store_true",
                             help="quality suite: a second set of eight other pairs instead of the bench's own")
    picture_set.add_argument("--eye-targets", action="store_true",
                             help="quality suite: targets that look down, close their eyes and look aside (frames "
                                  "of a real clip) instead of the bench's own pairs")
    parser.add_argument("--swapper", choices=choices.names(choices.SWAPPERS), default=choices.DEFAULTS["swapper"],
                        help="quality suite: the swapper judged (default %(default)s)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run_bench)


def run_bench(args: argparse.Namespace) -> int:
    minimum = 2 if args.suite == "pipeline" else 1
    if args.frames is not None and args.frames < minimum:
        raise SystemExit(f"facecache bench: --frames must be at least {minimum} for the {args.suite} suite")
    result = SUITES[args.suite](args)
    if args.json:
        print_json(args, result)
    else:
        print_table(result)
    return 0


def print_table(result: dict) -> None:
    goal_keys = ("goals", "goals_met", "cold_goals", "cold_goals_met")  # the pipeline suite's cold goals too
    goals = {**result.get("goals", {}), **result.get("cold_goals", {})}
    met = {**result.get("goals_met", {}), **result.get("cold_goals_met", {})}
    nested = {key: value for key, value in result.items()
              if isinstance(value, (dict, list)) and key not in goal_keys}
    for key, value in result.items():
        if key in nested or key in goal_keys:
            continue
        goal = goals.get(key)
        goal = goal if isinstance(goal, str) else f"<= {goal}"  # a bare number is an upper bound
        verdict = {True: "met", False: "MISSED", None: "not measured"}.get(met.get(key))
        mark = "" if key not in goals else f"   (goal {goal}: {verdict})"
        shown = f"{value:.4g}" if isinstance(value, float) else str(value)
        print(f"{key:<36} {shown}{mark}")
    for key, value in nested.items():
        print(f"\n{key}:")
        _print_nested(value, "  ")


def _print_nested(value, indent: str) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)) and not _is_flat(item):
                print(f"{indent}{key}:")
                _print_nested(item, indent + "  ")
            else:
                print(f"{indent}{key:<28} {_flat(item)}")
    elif isinstance(value, list):
        for item in value:
            print(f"{indent}{_flat(item)}" if not isinstance(item, dict) else
                  indent + "  ".join(f"{_flat(v)}" for v in item.values()))


def _is_flat(value) -> bool:
    items = value.values() if isinstance(value, dict) else value
    return all(not isinstance(item, (dict, list)) for item in items)


def _flat(value) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={_flat(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_flat(v) for v in value)
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _parse_size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (example: 1920x1080)") from None
    if width < 16 or height < 16:
        raise argparse.ArgumentTypeError("the clip must be at least 16x16")
    return width, height
