"""`facecache swap --source IMG... --target MEDIA --out DIR [...] [--json]`."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

from facecache import choices
from facecache.analysis.analyzer import check_frames, timing_note
from facecache.media.reader import IMAGE_SUFFIXES, check_still
from facecache.cli.common import (add_cache_options, add_choice, add_command, add_model_options, add_number,
                                  add_picture_option, parse_frame_range, print_json)
from facecache.media.picture_rules import picture_rules
from facecache.jobs.run_summary import describe_run
from facecache.jobs.swap_job import check_outside_cache, prepare_output_folder
from facecache.locations import resolve_cache_dir
from facecache.pipeline import Settings, build_pipeline
from facecache.progress import ProgressLine


def register(commands) -> None:
    parser = add_command(commands, "swap", "swap source faces onto a target image or video, through the cache")
    parser.add_argument("--source", dest="sources", type=Path, action="append", required=True, metavar="IMG",
                        help="source face image (repeat for a set: embeddings are averaged)")
    add_number(parser, choices.SOURCE_FACE, metavar="RANK")
    parser.add_argument("--target", type=Path, required=True, metavar="MEDIA", help="target image or video")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    parser.add_argument("--frames", type=parse_frame_range, default=None, help="media frame range A-B of a video")
    add_choice(parser, "--swapper", choices.SWAPPERS, "face swapper")
    add_choice(parser, "--selector", choices.SELECTORS, "which target faces")
    parser.add_argument("--position", type=_fractions, default=None, metavar="X,Y",
                        help="for --selector one: the face nearest this point (fractions of width, height)")
    parser.add_argument("--reference", dest="references", type=Path, action="append", default=[], metavar="IMG",
                        help="for --selector reference: a photo of the person to replace (repeatable)")
    add_number(parser, choices.REFERENCE_THRESHOLD)
    for number in choices.COMPOSITE:
        add_number(parser, number)
    parser.add_argument("--max-yaw", type=_yaw_limit, default=choices.MAX_YAW.default, metavar="DEG|off",
                        help=f"{choices.MAX_YAW.description}, and counted (default {choices.MAX_YAW.default:g}; "
                             "off: swap every face; the model swappers always swap every face)")
    add_choice(parser, "--output-form", choices.OUTPUT_FORMS, "what each output holds")
    add_picture_option(parser)
    add_cache_options(parser)
    add_model_options(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run_swap)


def _yaw_limit(text: str) -> float | None:
    """Degrees, or None for "off"."""
    if text.strip().lower() == "off":
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a yaw limit: {text!r} (degrees, e.g. 50, or off)") from None


def _fractions(text: str) -> tuple[float, float]:
    try:
        x, y = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a position: {text!r} (example: 0.5,0.4)") from None
    return x, y


def run_swap(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    settings = Settings.from_args(args)
    if args.max_yaw is None:  # --max-yaw off
        settings = dataclasses.replace(settings, limit_yaw=False, max_yaw=choices.MAX_YAW.default)
    check_outside_cache(args.out, resolve_cache_dir(settings.cache_dir))
    prepare_output_folder(args.out)  # before the source faces are analysed: a bad --out costs nothing
    for path in (*args.sources, *args.references):  # every file and range checked before any work starts
        if path.suffix.lower() in IMAGE_SUFFIXES:
            check_still(path)  # a photo's header: nothing decoded yet
        else:
            check_frames(path, None)
    rules = picture_rules(settings.picture_rules)
    check_frames(args.target, args.frames, rules)
    note = timing_note(args.target, rules)
    if note:
        print(f"facecache: note: {note}", file=sys.stderr)
    pipeline = build_pipeline(settings)
    job = pipeline.swap_job()
    bar = ProgressLine(args.target.name)
    report = job.run(args.target, args.out, args.frames, progress=lambda p: bar(
        p.done, p.total, f"{p.written} written, {p.skipped} up to date, {p.frames_per_second:.1f} fps, "
                         f"ETA {p.eta_seconds or 0:.0f} s"))
    summary = {**pipeline.summary(report, str(args.target)), "seconds": round(time.perf_counter() - start, 3),
               "out": str(args.out), **({"frame_rate_note": note} if note else {})}
    if "warning" in summary:
        print(f"facecache: warning: {summary['warning']}", file=sys.stderr)
    if args.json:
        print_json(args, summary)
    else:
        print(f"{describe_run(summary)}; output in {args.out}")
    return 0
