"""`facecache swap --source IMG... --target MEDIA --out DIR|MOVIE [...] [--json]`.

`--out` names a folder of output images, or a movie file (.mp4, .mkv, .mov) that the composited frames
are encoded into with the target's audio (`facecache.jobs.movie_job`)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

from facecache import choices, protocol
from facecache.analysis.analyzer import check_frames, timing_note
from facecache.media.movie_out import QUALITY_HELP, MovieOutError, movie_format
from facecache.media.picture_rules import picture_rules
from facecache.media.reader import IMAGE_SUFFIXES, check_still
from facecache.cli.common import (add_cache_options, add_choice, add_command, add_model_options, add_number,
                                  add_picture_option, add_remote_options, parse_frame_range, print_json)
from facecache.jobs.movie_job import MOVIE_FORM, make_movie, plan_movie
from facecache.jobs.run_summary import describe_run
from facecache.jobs.swap_job import check_outside_cache, prepare_output_folder
from facecache.locations import resolve_cache_dir
from facecache.gpu.status import session_report
from facecache.pipeline import Parts, Settings, build_pipeline
from facecache.progress import ProgressLine


def register(commands) -> None:
    parser = add_command(commands, "swap", "swap source faces onto a target image or video, through the cache")
    parser.add_argument("--source", dest="sources", type=Path, action="append", required=True, metavar="IMG",
                        help="source face image (repeat for a set: embeddings are averaged)")
    add_number(parser, choices.SOURCE_FACE, metavar="RANK")
    parser.add_argument("--target", type=Path, required=True, metavar="MEDIA", help="target image or video")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR|MOVIE",
                        help="output folder, or a movie file (.mp4 or .mkv: H.264, .mov: ProRes 422) of the whole "
                             "swapped frames with the target's audio, timing and colour tags")
    parser.add_argument("--quality", type=int, default=None, metavar="N", help=QUALITY_HELP)
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
    add_remote_options(parser)
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
    movie = movie_format(args.out) is not None
    if movie:  # the swap job's whole frames, through the cache, then encoded
        if args.output_form not in ("auto", MOVIE_FORM):
            raise MovieOutError(f"a movie --out holds whole frames: leave out --output-form {args.output_form}, or "
                                "give --out a folder")
        settings = dataclasses.replace(settings, output_form=MOVIE_FORM)
        check_outside_cache(args.out.parent, resolve_cache_dir(settings.cache_dir))
    elif args.quality is not None:
        raise MovieOutError("--quality is for a movie --out (.mp4, .mkv, .mov): leave it out for a folder")
    else:
        check_outside_cache(args.out, resolve_cache_dir(settings.cache_dir))
        prepare_output_folder(args.out)  # before the source faces are analysed: a bad --out costs nothing
    for path in (*args.sources, *args.references):  # every file and range checked before any work starts
        if path.suffix.lower() in IMAGE_SUFFIXES:
            check_still(path)  # a photo's header: nothing decoded yet
        else:
            check_frames(path, None)
    rules = picture_rules(settings.picture_rules)
    plan = plan_movie(args.target, args.out, args.frames, args.quality, rules, args.deinterlace) if movie else None
    if plan is None:
        check_frames(args.target, args.frames, rules)
    note = timing_note(args.target, rules)
    if note:
        print(f"facecache: note: {note}", file=sys.stderr)
    parts = Parts()
    pipeline = build_pipeline(settings, parts)
    job = pipeline.swap_job()
    bar = ProgressLine(args.target.name)

    def progress(p) -> None:
        bar(p.done, p.total, f"{p.written} written, {p.skipped} up to date, {p.frames_per_second:.1f} fps, "
                             f"ETA {p.eta_seconds or 0:.0f} s")

    made = None
    if plan is None:
        report = job.run(args.target, args.out, args.frames, progress=progress, deinterlace=args.deinterlace)
    else:
        encoding = ProgressLine(args.out.name)
        report, made = make_movie(job, args.target, plan, pipeline.analyzer.cache.root, progress,
                                  lambda done, total: encoding(done, total, "encoded"))
    summary = {**pipeline.summary(report, str(args.target)), protocol.SECONDS: round(time.perf_counter() - start, 3),
               protocol.OUT: str(args.out), **({"frame_rate_note": note} if note else {}),
               **session_report(parts.sessions(settings.providers))}  # where the models ran, a GPU fallback
    if made is not None:
        summary["movie"] = made.as_dict()
    if protocol.WARNING in summary:
        print(f"facecache: warning: {summary[protocol.WARNING]}", file=sys.stderr)
    if args.json:
        print_json(args, summary)
    else:
        print(f"{describe_run(summary)}; output in {args.out}" + (
            f" ({made.codec}, {made.frames} frames, audio: {made.audio})" if made is not None else ""))
    return 0
